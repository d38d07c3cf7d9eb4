import Foundation

// /documentation/UIKit/UIBarItem (iOS 2.0+)
/// An abstract superclass for items that you can add to a bar that appears at the bottom of the screen.
@MainActor
open class UIBarItem: NSObject {
    public override init() {
        super.init()
    }

    // /documentation/UIKit/UIBarItem/isEnabled (iOS 2.0+)
    /// A Boolean value that indicates whether the item is enabled.
    open var isEnabled: Bool = true

    // /documentation/UIKit/UIBarItem/title (iOS 2.0+)
    /// The title displayed on the item.
    open var title: String?

    // /documentation/UIKit/UIBarItem/image (iOS 2.0+)
    /// The image used to represent the item.
    open var image: UIImage?

    // /documentation/UIKit/UIBarItem/tag (iOS 2.0+)
    open var tag: Int = 0
}

// /documentation/UIKit/UIBarButtonItem (iOS 2.0+)
/// A specialized button for placement on a toolbar, navigation bar, or shortcuts bar.
///
/// STAND-IN: the target/action initializers are not declared (no Objective-C selectors on
/// Linux); use the `primaryAction` ones (iOS 14.0+).
@MainActor
open class UIBarButtonItem: UIBarItem {
    /// The system item it was created with, if any.
    public private(set) var systemItem: UIBarButtonItem.SystemItem?

    public override init() {
        super.init()
    }

    // /documentation/UIKit/UIBarButtonItem/init(systemItem:primaryAction:menu:) (iOS 14.0+)
    /// Creates an item using the specified system item, primary action, and context menu.
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public convenience init(systemItem: UIBarButtonItem.SystemItem, primaryAction: UIAction? = nil, menu: UIMenu? = nil)
    {
        self.init()
        self.systemItem = systemItem
        self.primaryAction = primaryAction
        self.menu = menu
    }

    // /documentation/UIKit/UIBarButtonItem/init(title:image:primaryAction:menu:) (iOS 14.0+)
    /// Creates a plain-style item using the specified title, image, primary action, and context menu.
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public convenience init(
        title: String? = nil, image: UIImage? = nil, primaryAction: UIAction? = nil, menu: UIMenu? = nil
    ) {
        self.init()
        self.title = title
        self.image = image
        self.menu = menu
        self.primaryAction = primaryAction
        // "If you specify primaryAction, it takes precedence over the title and image."
        if let primaryAction {
            self.title = primaryAction.title
            self.image = primaryAction.image ?? image
        }
    }

    // /documentation/UIKit/UIBarButtonItem/primaryAction (iOS 14.0+)
    /// The action to perform when a person taps the item.
    @available(iOS 14.0, *)
    open var primaryAction: UIAction?

    // /documentation/UIKit/UIBarButtonItem/menu (iOS 14.0+)
    /// The menu associated with the bar button item.
    @available(iOS 14.0, *)
    open var menu: UIMenu?

    // /documentation/UIKit/UIBarButtonItem/style (iOS 2.0+)
    open var style: UIBarButtonItem.Style = .plain

    /// Taps the item: runs its primary action (nothing when it is disabled).
    @_spi(Simulation) public func simulateTap() {
        guard isEnabled else { return }
        primaryAction?.perform(sender: self)
    }
}

extension UIBarButtonItem {
    // /documentation/UIKit/UIBarButtonItem/Style (iOS 2.0+)
    public enum Style: Int, Sendable {
        case plain = 0
        @available(iOS, deprecated: 8.0)
        case bordered = 1
        case done = 2
        // /documentation/UIKit/UIBarButtonItem/Style/prominent (iOS 26.0+)
        @available(iOS 26.0, *)
        case prominent = 3
    }

    // /documentation/UIKit/UIBarButtonItem/SystemItem (iOS 2.0+)
    /// Defines system-supplied images for bar button items.
    public enum SystemItem: Int, Sendable {
        case done = 0
        case cancel = 1
        case edit = 2
        case save = 3
        case add = 4
        case flexibleSpace = 5
        case fixedSpace = 6
        case compose = 7
        case reply = 8
        case action = 9
        case organize = 10
        case bookmarks = 11
        case search = 12
        case refresh = 13
        case stop = 14
        case camera = 15
        case trash = 16
        case play = 17
        case pause = 18
        case rewind = 19
        case fastForward = 20
        case undo = 21
        case redo = 22
        @available(iOS, deprecated: 11.0)
        case pageCurl = 23
        @available(iOS 13.0, *)
        case close = 24
    }
}

// /documentation/UIKit/UINavigationItem (iOS 2.0+)
/// The items that a navigation bar displays when the associated view controller is visible.
@MainActor
open class UINavigationItem: NSObject {
    // /documentation/UIKit/UINavigationItem/init(title:) (iOS 2.0+)
    public init(title: String) {
        self.title = title
        super.init()
    }

    public override convenience init() {
        self.init(title: "")
        title = nil
    }

    // /documentation/UIKit/UINavigationItem/title (iOS 2.0+)
    /// The navigation item's title that displays in the navigation bar.
    open var title: String?

    // /documentation/UIKit/UINavigationItem/prompt (iOS 2.0+)
    /// A single line of text displayed at the top of the navigation bar.
    open var prompt: String?

    // /documentation/UIKit/UINavigationItem/rightBarButtonItem (iOS 2.0+)
    /// A custom bar button item displayed on the right (or trailing) edge of the navigation
    /// bar when the receiver is the top navigation item. (The first of `rightBarButtonItems`.)
    open var rightBarButtonItem: UIBarButtonItem? {
        get { rightBarButtonItems?.first }
        set { rightBarButtonItems = newValue.map { [$0] } }
    }

    // /documentation/UIKit/UINavigationItem/rightBarButtonItems (iOS 5.0+)
    /// An array of custom bar button items to display on the right (or trailing) side of the navigation bar.
    open var rightBarButtonItems: [UIBarButtonItem]?

    // /documentation/UIKit/UINavigationItem/leftBarButtonItem (iOS 2.0+)
    open var leftBarButtonItem: UIBarButtonItem? {
        get { leftBarButtonItems?.first }
        set { leftBarButtonItems = newValue.map { [$0] } }
    }

    // /documentation/UIKit/UINavigationItem/leftBarButtonItems (iOS 5.0+)
    open var leftBarButtonItems: [UIBarButtonItem]?

    // /documentation/UIKit/UINavigationItem/setRightBarButtonItems(_:animated:) (iOS 5.0+)
    open func setRightBarButtonItems(_ items: [UIBarButtonItem]?, animated: Bool) {
        rightBarButtonItems = items
    }

    // /documentation/UIKit/UINavigationItem/setLeftBarButtonItems(_:animated:) (iOS 5.0+)
    open func setLeftBarButtonItems(_ items: [UIBarButtonItem]?, animated: Bool) {
        leftBarButtonItems = items
    }
}
