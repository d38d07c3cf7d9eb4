import Foundation

// /documentation/UIKit/UITextField (iOS 2.0+)
/// An object that displays an editable text area in your interface.
@MainActor
open class UITextField: UIControl {
    // /documentation/UIKit/UITextField/text (iOS 2.0+)
    /// The text that the text field displays.
    open var text: String? = ""

    // /documentation/UIKit/UITextField/placeholder (iOS 2.0+)
    /// The string that displays when there is no other text in the text field.
    open var placeholder: String?

    // /documentation/UIKit/UITextField/textColor (iOS 2.0+)
    open var textColor: UIColor?

    // /documentation/UIKit/UITextField/font (iOS 2.0+)
    open var font: UIFont?

    // /documentation/UIKit/UITextField/clearButtonMode (iOS 2.0+)
    open var clearButtonMode: UITextField.ViewMode = .never

    // /documentation/UIKit/UITextField/hasText (iOS 2.0+, UIKeyInput)
    open var hasText: Bool { !(text ?? "").isEmpty }

    open override var canBecomeFirstResponder: Bool { true }
}

extension UITextField {
    // /documentation/UIKit/UITextField/ViewMode (iOS 2.0+)
    public enum ViewMode: Int, Sendable {
        case never = 0
        case whileEditing = 1
        case unlessEditing = 2
        case always = 3
    }
}
