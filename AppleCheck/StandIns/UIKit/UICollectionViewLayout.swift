import Foundation

// /documentation/UIKit/UICollectionViewLayout (iOS 6.0+)
/// An abstract base class for generating layout information for a collection view.
/// STAND-IN: the simulated collection view lays out a base layout (or a custom subclass)
/// as a default flow layout; see DEVIATIONS.md.
@MainActor
open class UICollectionViewLayout: NSObject {
    public override init() {
        super.init()
    }

    public required init?(coder: NSCoder) {
        super.init()
    }

    // /documentation/UIKit/UICollectionViewLayout/collectionView (iOS 6.0+)
    /// The collection view object currently using this layout object.
    open internal(set) weak var collectionView: UICollectionView?

    // /documentation/UIKit/UICollectionViewLayout/invalidateLayout() (iOS 6.0+)
    /// Invalidates the current layout and triggers a layout update.
    open func invalidateLayout() {
        collectionView?.setNeedsLayout()
    }

    // /documentation/UIKit/UICollectionViewLayout/collectionViewContentSize (iOS 6.0+)
    open var collectionViewContentSize: CGSize { collectionView?.contentSize ?? .zero }
}

// /documentation/UIKit/UICollectionViewFlowLayout (iOS 6.0+)
/// A layout object that organizes items into a grid with optional header and footer views for each section.
@MainActor
open class UICollectionViewFlowLayout: UICollectionViewLayout {
    public override init() {
        super.init()
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    // /documentation/UIKit/UICollectionViewFlowLayout/automaticSize (iOS 10.0+)
    /// A constant for estimated item sizes that asks the layout to compute them from the cells.
    /// STAND-IN: `static let` (UIKit's is `class let`).
    @available(iOS 10.0, *)
    public static let automaticSize = CGSize(
        width: CGFloat.greatestFiniteMagnitude, height: CGFloat.greatestFiniteMagnitude)

    // /documentation/UIKit/UICollectionViewFlowLayout/itemSize (iOS 6.0+)
    /// The default size to use for cells. "The default size value is (50.0, 50.0)."
    open var itemSize = CGSize(width: 50, height: 50) { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/estimatedItemSize (iOS 8.0+)
    /// The estimated size of cells in the collection view; non-zero turns on self-sizing cells.
    open var estimatedItemSize: CGSize = .zero { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/minimumLineSpacing (iOS 6.0+)
    /// "The default value of this property is 10.0."
    open var minimumLineSpacing: CGFloat = 10 { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/minimumInteritemSpacing (iOS 6.0+)
    /// "The default value of this property is 10.0."
    open var minimumInteritemSpacing: CGFloat = 10 { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/scrollDirection (iOS 6.0+)
    /// The scroll direction of the grid. "The default value of this property is UICollectionView.ScrollDirection.vertical."
    open var scrollDirection: UICollectionView.ScrollDirection = .vertical { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/headerReferenceSize (iOS 6.0+)
    /// The default sizes to use for section headers. (Zero: no headers.)
    open var headerReferenceSize: CGSize = .zero { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/footerReferenceSize (iOS 6.0+)
    open var footerReferenceSize: CGSize = .zero { didSet { invalidateLayout() } }

    // /documentation/UIKit/UICollectionViewFlowLayout/sectionInset (iOS 6.0+)
    /// The margins used to lay out content in a section.
    open var sectionInset: UIEdgeInsets = .zero { didSet { invalidateLayout() } }
}

// /documentation/UIKit/UICollectionViewCompositionalLayout (iOS 13.0+)
/// A layout object that lets you combine items in highly adaptive and flexible visual arrangements.
/// STAND-IN: only list layouts (`list(using:)`) are modelled; see DEVIATIONS.md.
@available(iOS 13.0, *)
@MainActor
open class UICollectionViewCompositionalLayout: UICollectionViewLayout {
    /// The list configuration, for a list layout.
    let listConfiguration: UICollectionLayoutListConfiguration?

    init(listConfiguration: UICollectionLayoutListConfiguration?) {
        self.listConfiguration = listConfiguration
        super.init()
    }

    public required init?(coder: NSCoder) {
        listConfiguration = nil
        super.init(coder: coder)
    }

    // /documentation/UIKit/UICollectionViewCompositionalLayout/list(using:) (iOS 14.0+)
    /// Creates a compositional layout that contains only list sections of the specified configuration.
    /// `@MainActor @preconcurrency static func` (UIKit's Swift overlay; was `open class func`,
    /// which an app could override: audit fix).
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public static func list(
        using configuration: UICollectionLayoutListConfiguration
    ) -> UICollectionViewCompositionalLayout {
        UICollectionViewCompositionalLayout(listConfiguration: configuration)
    }
}

// /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct (iOS 14.0+)
/// A configuration for creating a list layout.
@available(iOS 14.0, *)
public struct UICollectionLayoutListConfiguration {
    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/init(appearance:) (iOS 14.0+)
    /// Creates a list configuration with the specified appearance.
    public init(appearance: UICollectionLayoutListConfiguration.Appearance) {
        self.appearance = appearance
    }

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/appearance-swift.property
    /// The overall appearance of the list.
    public let appearance: UICollectionLayoutListConfiguration.Appearance

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/showsSeparators
    public var showsSeparators: Bool = true

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/backgroundColor
    public var backgroundColor: UIColor?

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/headerMode-swift.property
    /// The type of header to use for the list. The default value is `.none`.
    public var headerMode: UICollectionLayoutListConfiguration.HeaderMode = .none

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/footerMode-swift.property
    /// The type of footer to use for the list. The default value is `.none`.
    public var footerMode: UICollectionLayoutListConfiguration.FooterMode = .none

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/leadingSwipeActionsConfigurationProvider
    /// The closure that provides the set of actions to display when swiping on the leading edge of the cell.
    public var leadingSwipeActionsConfigurationProvider:
        UICollectionLayoutListConfiguration.SwipeActionsConfigurationProvider?

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/trailingSwipeActionsConfigurationProvider
    /// The closure that provides the set of actions to display when swiping on the trailing edge of the cell.
    public var trailingSwipeActionsConfigurationProvider:
        UICollectionLayoutListConfiguration.SwipeActionsConfigurationProvider?

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/SwipeActionsConfigurationProvider
    /// A closure that configures the swipe actions for a cell.
    public typealias SwipeActionsConfigurationProvider = (IndexPath) -> UISwipeActionsConfiguration?

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/Appearance-swift.enum
    public enum Appearance: Int, Sendable {
        case plain = 0
        case grouped = 1
        case insetGrouped = 2
        case sidebar = 3
        case sidebarPlain = 4
    }

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/HeaderMode-swift.enum
    public enum HeaderMode: Int, Sendable {
        case none = 0
        case supplementary = 1
        case firstItemInSection = 2
    }

    // /documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/FooterMode-swift.enum
    public enum FooterMode: Int, Sendable {
        case none = 0
        case supplementary = 1
    }
}
