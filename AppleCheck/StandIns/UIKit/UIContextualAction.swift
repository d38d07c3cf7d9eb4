import Foundation

// /documentation/UIKit/UIContextualAction (iOS 11.0+)
/// An action to display when the user swipes a table row.
@available(iOS 11.0, *)
@MainActor
open class UIContextualAction: NSObject {
    // /documentation/UIKit/UIContextualAction/init(style:title:handler:) (iOS 11.0+)
    /// Creates a new contextual action with the specified title and handler.
    public convenience init(
        style: UIContextualAction.Style, title: String?, handler: @escaping UIContextualAction.Handler
    ) {
        self.init(storedStyle: style, title: title, handler: handler)
    }

    init(storedStyle: UIContextualAction.Style, title: String?, handler: @escaping UIContextualAction.Handler) {
        self.storedStyle = storedStyle
        self.title = title
        self.storedHandler = handler
        self.backgroundColor = storedStyle == .destructive ? UIColor.systemRed : UIColor.systemGray
        super.init()
    }

    // /documentation/UIKit/UIContextualAction/style-swift.property (iOS 11.0+)
    /// The style that is applied to the action button.
    open var style: UIContextualAction.Style { storedStyle }
    private let storedStyle: UIContextualAction.Style

    // /documentation/UIKit/UIContextualAction/handler-swift.property (iOS 11.0+)
    /// The handler block to execute when the user selects the action.
    open var handler: UIContextualAction.Handler { storedHandler }
    private let storedHandler: UIContextualAction.Handler

    // /documentation/UIKit/UIContextualAction/title (iOS 11.0+)
    /// The title displayed on the action button.
    open var title: String?

    // /documentation/UIKit/UIContextualAction/backgroundColor (iOS 11.0+)
    /// The background color of the action button. (Red for destructive actions, gray otherwise.)
    open var backgroundColor: UIColor!

    // /documentation/UIKit/UIContextualAction/image (iOS 11.0+)
    /// The image to display in the action button.
    open var image: UIImage?
}

@available(iOS 11.0, *)
extension UIContextualAction {
    // /documentation/UIKit/UIContextualAction/Style-swift.enum (iOS 11.0+)
    /// Constants indicating the style information that is applied to the action button.
    public enum Style: Int, Sendable {
        case normal = 0
        case destructive = 1
    }

    // /documentation/UIKit/UIContextualAction/Handler-swift.typealias
    /// The handler block to call in response to the selection of an action.
    public typealias Handler = (UIContextualAction, UIView, @escaping (Bool) -> Void) -> Void
}

// /documentation/UIKit/UISwipeActionsConfiguration (iOS 11.0+)
/// The set of actions to perform when swiping on rows of a table.
@available(iOS 11.0, *)
@MainActor
open class UISwipeActionsConfiguration: NSObject {
    // /documentation/UIKit/UISwipeActionsConfiguration/init(actions:) (iOS 11.0+)
    /// Creates a swipe action configuration object with the specified set of actions.
    public convenience init(actions: [UIContextualAction]) {
        self.init(storedActions: actions)
    }

    init(storedActions: [UIContextualAction]) {
        self.storedActions = storedActions
        super.init()
    }

    // /documentation/UIKit/UISwipeActionsConfiguration/actions (iOS 11.0+)
    /// The swipe actions.
    open var actions: [UIContextualAction] { storedActions }
    private let storedActions: [UIContextualAction]

    // /documentation/UIKit/UISwipeActionsConfiguration/performsFirstActionWithFullSwipe (iOS 11.0+)
    /// A Boolean value indicating whether a full swipe automatically performs the first action.
    open var performsFirstActionWithFullSwipe: Bool = true
}
