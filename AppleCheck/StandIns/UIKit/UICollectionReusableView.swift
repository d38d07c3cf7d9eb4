import Foundation

// /documentation/UIKit/UICollectionReusableView (iOS 6.0+)
/// A view that defines the behavior for all cells and supplementary views presented by a collection view.
@MainActor
open class UICollectionReusableView: UIView {
    /// Set by the collection view when it makes the view for a reuse identifier (and kind).
    var assignedReuseIdentifier: String?
    var assignedElementKind: String?

    // /documentation/UIKit/UICollectionReusableView/init(frame:) — UIView's init(frame:) (iOS 6.0+)
    /// STAND-IN: `required`, so that a collection view can make a registered class from its
    /// metatype (UIKit uses the Objective-C runtime). A subclass that overrides it writes
    /// `required override init(frame:)`, which UIKit's compiler accepts too.
    public required override init(frame: CGRect) {
        super.init(frame: frame)
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    // /documentation/UIKit/UICollectionReusableView/reuseIdentifier (iOS 6.0+)
    /// A string that identifies the purpose of the view.
    open var reuseIdentifier: String? { assignedReuseIdentifier }

    // /documentation/UIKit/UICollectionReusableView/prepareForReuse() (iOS 6.0+)
    /// Performs any clean up necessary to prepare the view for use again.
    open func prepareForReuse() {}
}

// /documentation/UIKit/UICollectionViewCell (iOS 6.0+)
/// A single data item when that item is within the collection view's visible bounds.
@MainActor
open class UICollectionViewCell: UICollectionReusableView {
    private var storedContentConfiguration: (any UIContentConfiguration)?
    private var configurationContentView: (any UIView & UIContentView)?
    private var storedIsSelected = false

    public required init(frame: CGRect) {
        storedContentView = UIView(frame: CGRect(origin: .zero, size: frame.size))
        super.init(frame: frame)
        addSubview(contentView)
    }

    public required init?(coder: NSCoder) {
        storedContentView = UIView(frame: .zero)
        super.init(coder: coder)
        addSubview(contentView)
    }

    // /documentation/UIKit/UICollectionViewCell/contentView (iOS 6.0+)
    /// The main view to which you add your cell's custom content.
    /// `var contentView: UIView { get }` (a read-only property, not a `let`: audit fix).
    open var contentView: UIView { storedContentView }
    private let storedContentView: UIView

    // /documentation/UIKit/UICollectionViewCell/isSelected (iOS 6.0+)
    /// The selection state of the cell.
    open var isSelected: Bool {
        get { storedIsSelected }
        set { storedIsSelected = newValue }
    }

    // /documentation/UIKit/UICollectionViewCell/isHighlighted (iOS 6.0+)
    open var isHighlighted: Bool = false

    // /documentation/UIKit/UICollectionViewCell/contentConfiguration-13e7k (iOS 14.0+)
    /// The current content configuration of the cell.
    /// `@MainActor @preconcurrency var contentConfiguration: (any UIContentConfiguration)? { get set }`
    /// (Swift overlay: not overridable).
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public var contentConfiguration: (any UIContentConfiguration)? {
        get { storedContentConfiguration }
        set {
            storedContentConfiguration = newValue
            guard let newValue else {
                configurationContentView?.removeFromSuperview()
                configurationContentView = nil
                return
            }
            if let existing = configurationContentView, type(of: existing.configuration) == type(of: newValue) {
                existing.configuration = newValue
            } else {
                configurationContentView?.removeFromSuperview()
                let view = newValue.makeContentView()
                view.frame = contentView.bounds
                contentView.addSubview(view)
                configurationContentView = view
            }
        }
    }

    // /documentation/UIKit/UICollectionViewCell/configurationState-4u37h (iOS 14.0+)
    @available(iOS 14.0, *)
    open var configurationState: UICellConfigurationState {
        var state = UICellConfigurationState()
        state.isSelected = isSelected
        state.isHighlighted = isHighlighted
        return state
    }

    /// STAND-IN sizing: a content configuration's view gives the height; a cell without one
    /// gives the target size (so the layout's estimate stands).
    open override func systemLayoutSizeFitting(_ targetSize: CGSize) -> CGSize {
        if let configured = configurationContentView {
            let height = configured.intrinsicContentSize.height
            if height != UIView.noIntrinsicMetric { return CGSize(width: targetSize.width, height: height) }
        }
        return super.systemLayoutSizeFitting(targetSize)
    }

    open override func layoutSubviews() {
        super.layoutSubviews()
        contentView.frame = bounds
        configurationContentView?.frame = contentView.bounds
    }
}

// /documentation/UIKit/UICollectionViewListCell (iOS 14.0+)
/// A collection view cell that provides list features and default styling.
@available(iOS 14.0, *)
@MainActor
open class UICollectionViewListCell: UICollectionViewCell {
    // /documentation/UIKit/UICollectionViewListCell/defaultContentConfiguration() (iOS 14.0+)
    /// Retrieves a default list content configuration with preconfigured default styling.
    /// `@MainActor @preconcurrency func defaultContentConfiguration() -> UIListContentConfiguration`
    /// (Swift overlay: not overridable).
    @MainActor @preconcurrency
    public func defaultContentConfiguration() -> UIListContentConfiguration {
        .cell()
    }

    // /documentation/UIKit/UICollectionViewListCell/accessories (iOS 14.0+)
    /// The list of accessories to display for the cell.
    open var accessories: [UICellAccessory] = []

    // /documentation/UIKit/UICollectionViewListCell/indentationLevel (iOS 14.0+)
    open var indentationLevel: Int = 0
}

// /documentation/UIKit/UICellAccessory-swift.struct (iOS 14.0+)
/// An accessory for a collection view list cell.
/// STAND-IN: the common accessories, each with its options' most used parameters.
@available(iOS 14.0, *)
public struct UICellAccessory: Sendable, Equatable {
    /// Which accessory it is. (Internal: UIKit's structure has no such property. Audit fix,
    /// was public.)
    let kind: String
    /// When it shows. (Internal, as `kind`.)
    let displayed: UICellAccessory.DisplayedState

    // /documentation/UIKit/UICellAccessory-swift.struct/DisplayedState (iOS 14.0+)
    public enum DisplayedState: Int, Sendable {
        case always = 0
        case whenEditing = 1
        case whenNotEditing = 2
    }

    // /documentation/UIKit/UICellAccessory-swift.struct/disclosureIndicator(displayed:options:)
    public static func disclosureIndicator(displayed: UICellAccessory.DisplayedState = .always) -> UICellAccessory {
        UICellAccessory(kind: "disclosureIndicator", displayed: displayed)
    }

    // /documentation/UIKit/UICellAccessory-swift.struct/checkmark(displayed:options:)
    public static func checkmark(displayed: UICellAccessory.DisplayedState = .always) -> UICellAccessory {
        UICellAccessory(kind: "checkmark", displayed: displayed)
    }

    // /documentation/UIKit/UICellAccessory-swift.struct/delete(displayed:options:actionHandler:)
    public static func delete(displayed: UICellAccessory.DisplayedState = .whenEditing) -> UICellAccessory {
        UICellAccessory(kind: "delete", displayed: displayed)
    }

    // /documentation/UIKit/UICellAccessory-swift.struct/reorder(displayed:options:)
    public static func reorder(displayed: UICellAccessory.DisplayedState = .whenEditing) -> UICellAccessory {
        UICellAccessory(kind: "reorder", displayed: displayed)
    }
}
