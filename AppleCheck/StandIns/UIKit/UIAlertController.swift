import Foundation

// /documentation/UIKit/UIAlertController (iOS 8.0+)
/// An object that displays an alert message.
@MainActor
open class UIAlertController: UIViewController {
    private var storedActions: [UIAlertAction] = []
    private var storedTextFields: [UITextField] = []

    // /documentation/UIKit/UIAlertController/init(title:message:preferredStyle:) (iOS 8.0+)
    /// Creates and returns a view controller for displaying an alert to the user.
    public convenience init(title: String?, message: String?, preferredStyle: UIAlertController.Style) {
        self.init(nibName: nil, bundle: nil)
        self.title = title
        self.message = message
        self.storedPreferredStyle = preferredStyle
    }

    private var storedPreferredStyle: UIAlertController.Style = .actionSheet

    // /documentation/UIKit/UIAlertController/message (iOS 8.0+)
    open var message: String?

    // /documentation/UIKit/UIAlertController/preferredStyle (iOS 8.0+)
    open var preferredStyle: UIAlertController.Style { storedPreferredStyle }

    // /documentation/UIKit/UIAlertController/addAction(_:) (iOS 8.0+)
    /// Attaches an action object to the alert or action sheet.
    open func addAction(_ action: UIAlertAction) {
        storedActions.append(action)
    }

    // /documentation/UIKit/UIAlertController/actions (iOS 8.0+)
    open var actions: [UIAlertAction] { storedActions }

    // /documentation/UIKit/UIAlertController/preferredAction (iOS 9.0+)
    open var preferredAction: UIAlertAction?

    // /documentation/UIKit/UIAlertController/addTextField(configurationHandler:) (iOS 8.0+)
    /// Adds a text field to an alert. (UIKit allows text fields on `.alert` only.)
    open func addTextField(configurationHandler: ((UITextField) -> Void)? = nil) {
        let field = UITextField(frame: .zero)
        storedTextFields.append(field)
        configurationHandler?(field)
    }

    // /documentation/UIKit/UIAlertController/textFields (iOS 8.0+)
    /// The array of text fields displayed by the alert.
    open var textFields: [UITextField]? {
        storedTextFields.isEmpty ? nil : storedTextFields
    }

    /// Taps the action's button: the alert is dismissed, then the action's handler runs.
    @_spi(Simulation) public func simulateTap(_ action: UIAlertAction) {
        guard action.isEnabled, storedActions.contains(where: { $0 === action }) else { return }
        dismiss(animated: true)
        action.handler?(action)
    }
}

extension UIAlertController {
    // /documentation/UIKit/UIAlertController/Style (iOS 8.0+)
    public enum Style: Int, Sendable {
        case actionSheet = 0
        case alert = 1
    }
}

// /documentation/UIKit/UIAlertAction (iOS 8.0+)
/// An action that can be taken when the user taps a button in an alert.
@MainActor
open class UIAlertAction: NSObject {
    let handler: ((UIAlertAction) -> Void)?

    // /documentation/UIKit/UIAlertAction/init(title:style:handler:) (iOS 8.0+)
    /// Create and return an action with the specified title and behavior.
    public convenience init(title: String?, style: UIAlertAction.Style, handler: ((UIAlertAction) -> Void)? = nil) {
        self.init(storedTitle: title, style: style, handler: handler)
    }

    init(storedTitle: String?, style: UIAlertAction.Style, handler: ((UIAlertAction) -> Void)?) {
        self.storedTitle = storedTitle
        self.storedStyle = style
        self.handler = handler
        super.init()
    }

    // /documentation/UIKit/UIAlertAction/title (iOS 8.0+)
    open var title: String? { storedTitle }
    private let storedTitle: String?
    // /documentation/UIKit/UIAlertAction/style-swift.property (iOS 8.0+)
    open var style: UIAlertAction.Style { storedStyle }
    private let storedStyle: UIAlertAction.Style
    // /documentation/UIKit/UIAlertAction/isEnabled (iOS 8.0+)
    open var isEnabled: Bool = true
}

extension UIAlertAction {
    // /documentation/UIKit/UIAlertAction/Style-swift.enum (iOS 8.0+)
    public enum Style: Int, Sendable {
        case `default` = 0
        case cancel = 1
        case destructive = 2
    }
}
