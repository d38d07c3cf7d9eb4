import Foundation

// /documentation/UIKit/UILabel (iOS 2.0+)
/// A view that displays one or more lines of informational text.
@MainActor
open class UILabel: UIView {
    // /documentation/UIKit/UILabel/text (iOS 2.0+)
    /// The text that the label displays.
    open var text: String?

    // /documentation/UIKit/UILabel/textColor (iOS 2.0+)
    /// The color of the text.
    open var textColor: UIColor! = UIColor.label

    // /documentation/UIKit/UILabel/font (iOS 2.0+)
    /// The font of the text.
    open var font: UIFont! = UIFont.preferredFont(forTextStyle: .body)

    // /documentation/UIKit/UILabel/numberOfLines (iOS 2.0+)
    /// The maximum number of lines for rendering text.
    open var numberOfLines: Int = 1

    // /documentation/UIKit/UILabel/isEnabled (iOS 2.0+)
    open var isEnabled: Bool = true

    /// STAND-IN: one line of the font's point size × 1.2 per line, 8 points per character.
    open override var intrinsicContentSize: CGSize {
        let characters = CGFloat(text?.count ?? 0)
        let lineHeight = ((font?.pointSize ?? 17) * 1.2).rounded(.up)
        return CGSize(width: characters * 8, height: characters == 0 ? 0 : lineHeight)
    }

    open override func sizeThatFits(_ size: CGSize) -> CGSize {
        intrinsicContentSize
    }
}
