import Foundation

// /documentation/UIKit/UITableViewCell (iOS 2.0+)
/// The visual representation of a single row in a table view.
@MainActor
open class UITableViewCell: UIView {
    private let cellStyle: UITableViewCell.CellStyle
    private var storedTextLabel: UILabel?
    private var storedDetailTextLabel: UILabel?
    private var storedContentConfiguration: (any UIContentConfiguration)?
    private var configurationContentView: (any UIView & UIContentView)?
    private var storedIsSelected = false
    private var storedIsEditing = false

    // /documentation/UIKit/UITableViewCell/init(style:reuseIdentifier:) (iOS 3.0+)
    /// Initializes a table cell with a style and a reuse identifier and returns it to the caller.
    ///
    /// STAND-IN: `required`, so that a table view can make a registered cell class from its
    /// metatype (UIKit uses the Objective-C runtime). A subclass that overrides it writes
    /// `required override init(style:reuseIdentifier:)`, which UIKit's compiler accepts too.
    public required init(style: UITableViewCell.CellStyle, reuseIdentifier: String?) {
        self.cellStyle = style
        self.storedReuseIdentifier = reuseIdentifier
        self.storedContentView = UIView(frame: .zero)
        super.init(frame: CGRect(x: 0, y: 0, width: 320, height: 44))
        contentView.frame = bounds
        addSubview(contentView)
    }

    /// STAND-IN: required as in UIKit (NSCoding), without the conformance.
    public required init?(coder: NSCoder) {
        self.cellStyle = .default
        self.storedReuseIdentifier = nil
        self.storedContentView = UIView(frame: .zero)
        super.init(coder: coder)
        addSubview(contentView)
    }

    /// `UITableViewCell(frame:)` (and so `UITableViewCell()`): UIKit makes a `.default`
    /// cell with no reuse identifier.
    public override convenience init(frame: CGRect) {
        self.init(style: .default, reuseIdentifier: nil)
        self.frame = frame
    }

    // /documentation/UIKit/UITableViewCell/reuseIdentifier (iOS 2.0+)
    /// A string used to identify a cell that is reusable.
    /// `var reuseIdentifier: String? { get }` (a read-only property, not a `let`: audit fix).
    open var reuseIdentifier: String? { storedReuseIdentifier }
    private let storedReuseIdentifier: String?

    // /documentation/UIKit/UITableViewCell/prepareForReuse() (iOS 2.0+)
    /// Prepares a reusable cell for reuse by the table view's delegate.
    open func prepareForReuse() {}

    // /documentation/UIKit/UITableViewCell/contentView (iOS 2.0+)
    /// The content view of the cell object.
    /// `var contentView: UIView { get }` (a read-only property, not a `let`: audit fix).
    open var contentView: UIView { storedContentView }
    private let storedContentView: UIView

    // MARK: Content configuration (iOS 14.0+)

    // /documentation/UIKit/UITableViewCell/contentConfiguration (iOS 14.0+)
    /// The current content configuration of the cell. Setting it replaces the content view's
    /// subviews with the configuration's content view.
    /// Declared in UIKit's Swift overlay (an extension), so it is not overridable:
    /// `@MainActor public var contentConfiguration: (any UIContentConfiguration)?`.
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

    // /documentation/UIKit/UITableViewCell/defaultContentConfiguration() (iOS 14.0+)
    /// Retrieves a default list content configuration for the cell's style.
    /// Swift overlay, not overridable: `@MainActor public func defaultContentConfiguration()`.
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public func defaultContentConfiguration() -> UIListContentConfiguration {
        switch cellStyle {
        case .default: return .cell()
        case .subtitle: return .subtitleCell()
        case .value1, .value2: return .valueCell()
        }
    }

    // /documentation/UIKit/UITableViewCell/configurationState (iOS 14.0+)
    @available(iOS 14.0, *)
    open var configurationState: UICellConfigurationState {
        var state = UICellConfigurationState()
        state.isSelected = isSelected
        state.isHighlighted = isHighlighted
        state.isEditing = isEditing
        return state
    }

    // MARK: Legacy text (deprecated in iOS 14 in favour of content configurations)

    // /documentation/UIKit/UITableViewCell/textLabel (iOS 3.0+, deprecated)
    /// The label used for the main textual content of the table cell.
    @available(
        iOS, deprecated: 100000,
        message: "Use UIListContentConfiguration instead, this property will be deprecated in a future release."
    )
    open var textLabel: UILabel? {
        if storedTextLabel == nil {
            let label = UILabel(frame: .zero)
            contentView.addSubview(label)
            storedTextLabel = label
        }
        return storedTextLabel
    }

    // /documentation/UIKit/UITableViewCell/detailTextLabel (iOS 3.0+, deprecated)
    /// The secondary label of the table cell if one exists (nil for the `.default` style).
    @available(
        iOS, deprecated: 100000,
        message: "Use UIListContentConfiguration instead, this property will be deprecated in a future release."
    )
    open var detailTextLabel: UILabel? {
        guard cellStyle != .default else { return nil }
        if storedDetailTextLabel == nil {
            let label = UILabel(frame: .zero)
            contentView.addSubview(label)
            storedDetailTextLabel = label
        }
        return storedDetailTextLabel
    }

    // MARK: Accessory, selection, editing

    // /documentation/UIKit/UITableViewCell/accessoryType (iOS 2.0+)
    /// The type of standard accessory view the cell should use (normal state).
    open var accessoryType: UITableViewCell.AccessoryType = .none

    // /documentation/UIKit/UITableViewCell/editingAccessoryType (iOS 3.0+)
    open var editingAccessoryType: UITableViewCell.AccessoryType = .none

    // /documentation/UIKit/UITableViewCell/accessoryView (iOS 2.0+)
    open var accessoryView: UIView?

    // /documentation/UIKit/UITableViewCell/selectionStyle (iOS 2.0+)
    /// The style of selection for a cell.
    open var selectionStyle: UITableViewCell.SelectionStyle = .default

    // /documentation/UIKit/UITableViewCell/isSelected (iOS 2.0+)
    /// A Boolean value that indicates whether the cell is selected.
    open var isSelected: Bool {
        get { storedIsSelected }
        set { setSelected(newValue, animated: false) }
    }

    // /documentation/UIKit/UITableViewCell/setSelected(_:animated:) (iOS 2.0+)
    /// Sets the selected state of the cell, optionally animating the transition between states.
    open func setSelected(_ selected: Bool, animated: Bool) {
        storedIsSelected = selected
    }

    // /documentation/UIKit/UITableViewCell/isHighlighted (iOS 2.0+)
    open var isHighlighted: Bool = false

    // /documentation/UIKit/UITableViewCell/setHighlighted(_:animated:) (iOS 2.0+)
    open func setHighlighted(_ highlighted: Bool, animated: Bool) {
        isHighlighted = highlighted
    }

    // /documentation/UIKit/UITableViewCell/isEditing (iOS 2.0+)
    /// A Boolean value that indicates whether the cell is in an editable state.
    open var isEditing: Bool {
        get { storedIsEditing }
        set { setEditing(newValue, animated: false) }
    }

    // /documentation/UIKit/UITableViewCell/setEditing(_:animated:) (iOS 2.0+)
    open func setEditing(_ editing: Bool, animated: Bool) {
        storedIsEditing = editing
    }

    // /documentation/UIKit/UITableViewCell/editingStyle (iOS 2.0+)
    /// The editing style of the cell (set by the table view from its delegate).
    open internal(set) var editingStyle: UITableViewCell.EditingStyle = .none

    // /documentation/UIKit/UITableViewCell/showsReorderControl (iOS 2.0+)
    /// A Boolean value that determines whether the cell shows the reordering control.
    open var showsReorderControl: Bool = false

    // /documentation/UIKit/UITableViewCell/indentationLevel (iOS 2.0+)
    open var indentationLevel: Int = 0

    /// STAND-IN sizing: a content configuration's view or the labels give the height
    /// (`automaticDimension` rows); a cell with neither gives none.
    open override func systemLayoutSizeFitting(_ targetSize: CGSize) -> CGSize {
        if let configured = configurationContentView {
            let height = configured.intrinsicContentSize.height
            if height != UIView.noIntrinsicMetric { return CGSize(width: targetSize.width, height: height) }
        }
        let labels = [storedTextLabel, storedDetailTextLabel].compactMap { $0 }.filter {
            ($0.text ?? "").isEmpty == false
        }
        if !labels.isEmpty {
            let height = labels.reduce(CGFloat(22)) { $0 + $1.intrinsicContentSize.height }
            return CGSize(width: targetSize.width, height: max(44, height))
        }
        return super.systemLayoutSizeFitting(targetSize)
    }

    open override func layoutSubviews() {
        super.layoutSubviews()
        contentView.frame = bounds
        configurationContentView?.frame = contentView.bounds
    }
}

extension UITableViewCell {
    // /documentation/UIKit/UITableViewCell/CellStyle (iOS 3.0+)
    /// An enumeration for the various styles of cells.
    public enum CellStyle: Int, Sendable {
        case `default` = 0
        case value1 = 1
        case value2 = 2
        case subtitle = 3
    }

    // /documentation/UIKit/UITableViewCell/EditingStyle (iOS 2.0+)
    /// The editing control used by a cell.
    public enum EditingStyle: Int, Sendable {
        case none = 0
        case delete = 1
        case insert = 2
    }

    // /documentation/UIKit/UITableViewCell/AccessoryType (iOS 2.0+)
    /// The type of standard accessory control used by a cell.
    public enum AccessoryType: Int, Sendable {
        case none = 0
        case disclosureIndicator = 1
        case detailDisclosureButton = 2
        case checkmark = 3
        @available(iOS 7.0, *)
        case detailButton = 4
    }

    // /documentation/UIKit/UITableViewCell/SelectionStyle (iOS 2.0+)
    /// The style of selected cells.
    public enum SelectionStyle: Int, Sendable {
        case none = 0
        case blue = 1
        case gray = 2
        @available(iOS 7.0, *)
        case `default` = 3
    }
}

// /documentation/UIKit/UITableViewHeaderFooterView (iOS 6.0+)
/// A reusable view that you place at the top or bottom of a table section to display
/// additional information for that section.
@MainActor
open class UITableViewHeaderFooterView: UIView {
    private var storedTextLabel: UILabel?
    private var storedDetailTextLabel: UILabel?
    private var storedContentConfiguration: (any UIContentConfiguration)?
    private var configurationContentView: (any UIView & UIContentView)?

    // /documentation/UIKit/UITableViewHeaderFooterView/init(reuseIdentifier:) (iOS 6.0+)
    /// Initializes a header/footer view with the specified reuse identifier.
    ///
    /// STAND-IN: `required`, so that a table view can make a registered class from its
    /// metatype; a subclass writes `required override init(reuseIdentifier:)`.
    public required init(reuseIdentifier: String?) {
        self.storedReuseIdentifier = reuseIdentifier
        self.storedContentView = UIView(frame: .zero)
        super.init(frame: CGRect(x: 0, y: 0, width: 320, height: 28))
        addSubview(contentView)
    }

    public required init?(coder: NSCoder) {
        self.storedReuseIdentifier = nil
        self.storedContentView = UIView(frame: .zero)
        super.init(coder: coder)
        addSubview(contentView)
    }

    // /documentation/UIKit/UITableViewHeaderFooterView/reuseIdentifier (iOS 6.0+)
    /// `var reuseIdentifier: String? { get }` (not a `let`: audit fix).
    open var reuseIdentifier: String? { storedReuseIdentifier }
    private let storedReuseIdentifier: String?

    // /documentation/UIKit/UITableViewHeaderFooterView/contentView (iOS 6.0+)
    /// `var contentView: UIView { get }` (not a `let`: audit fix).
    open var contentView: UIView { storedContentView }
    private let storedContentView: UIView

    // /documentation/UIKit/UITableViewHeaderFooterView/prepareForReuse() (iOS 6.0+)
    /// Prepares a reusable header or footer view for reuse by the table.
    open func prepareForReuse() {}

    // /documentation/UIKit/UITableViewHeaderFooterView/contentConfiguration-6b4eg (iOS 14.0+)
    /// `@MainActor @preconcurrency var contentConfiguration: (any UIContentConfiguration)? { get set }`
    /// (Swift overlay: not overridable).
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public var contentConfiguration: (any UIContentConfiguration)? {
        get { storedContentConfiguration }
        set {
            storedContentConfiguration = newValue
            configurationContentView?.removeFromSuperview()
            configurationContentView = nil
            if let newValue {
                let view = newValue.makeContentView()
                contentView.addSubview(view)
                configurationContentView = view
            }
        }
    }

    // /documentation/UIKit/UITableViewHeaderFooterView/defaultContentConfiguration() (iOS 14.0+)
    /// Retrieves a default list content configuration for the header or footer's style.
    /// `@MainActor @preconcurrency func defaultContentConfiguration() -> UIListContentConfiguration`
    /// (Swift overlay: not overridable).
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public func defaultContentConfiguration() -> UIListContentConfiguration {
        .plainHeader()
    }

    // /documentation/UIKit/UITableViewHeaderFooterView/textLabel (iOS 6.0+, deprecated)
    /// A primary text label for the view.
    @available(
        iOS, deprecated: 100000,
        message: "Use UIListContentConfiguration instead, this property will be deprecated in a future release."
    )
    open var textLabel: UILabel? {
        if storedTextLabel == nil {
            let label = UILabel(frame: .zero)
            contentView.addSubview(label)
            storedTextLabel = label
        }
        return storedTextLabel
    }

    // /documentation/UIKit/UITableViewHeaderFooterView/detailTextLabel (iOS 6.0+, deprecated)
    @available(
        iOS, deprecated: 100000,
        message: "Use UIListContentConfiguration instead, this property will be deprecated in a future release."
    )
    open var detailTextLabel: UILabel? {
        if storedDetailTextLabel == nil {
            let label = UILabel(frame: .zero)
            contentView.addSubview(label)
            storedDetailTextLabel = label
        }
        return storedDetailTextLabel
    }

    /// The title UIKit's standard header shows (set when the table makes one for a title).
    var standardTitle: String? {
        get { storedTextLabel?.text }
        set {
            if storedTextLabel == nil {
                let label = UILabel(frame: .zero)
                contentView.addSubview(label)
                storedTextLabel = label
            }
            storedTextLabel?.text = newValue
        }
    }
}
