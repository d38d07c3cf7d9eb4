import Foundation

// /documentation/UIKit/UIFont (iOS 2.0+)
/// An object that provides access to the font's characteristics.
///
/// STAND-IN: Sendable is `@unchecked` (immutable; see UIColor).
open class UIFont: NSObject, @unchecked Sendable {
    let name: String

    init(name: String, pointSize: CGFloat) {
        self.name = name
        self.storedPointSize = pointSize
        super.init()
    }

    // /documentation/UIKit/UIFont/pointSize (iOS 2.0+)
    /// `var pointSize: CGFloat { get }` (not a `let`: audit fix).
    open var pointSize: CGFloat { storedPointSize }
    private let storedPointSize: CGFloat

    // /documentation/UIKit/UIFont/preferredFont(forTextStyle:) (iOS 7.0+)
    /// Returns an instance of the system font for the specified text style and scaled for the
    /// user's selected content size category. (Sizes are the Large category's.)
    open class func preferredFont(forTextStyle style: UIFont.TextStyle) -> UIFont {
        UIFont(name: style.rawValue, pointSize: TextStyle.largeCategorySizes[style] ?? 17)
    }

    // /documentation/UIKit/UIFont/systemFont(ofSize:) (iOS 2.0+)
    open class func systemFont(ofSize fontSize: CGFloat) -> UIFont {
        UIFont(name: ".SFUI-Regular", pointSize: fontSize)
    }

    // /documentation/UIKit/UIFont/boldSystemFont(ofSize:) (iOS 2.0+)
    open class func boldSystemFont(ofSize fontSize: CGFloat) -> UIFont {
        UIFont(name: ".SFUI-Semibold", pointSize: fontSize)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? UIFont else { return false }
        return name == other.name && pointSize == other.pointSize
    }
}

extension UIFont {
    // /documentation/UIKit/UIFont/TextStyle (iOS 7.0+)
    /// Constants that describe the preferred styles for fonts.
    public struct TextStyle: Hashable, Equatable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        // /documentation/UIKit/UIFont/TextStyle/largeTitle (iOS 11.0+)
        public static let largeTitle = TextStyle(rawValue: "UICTFontTextStyleTitle0")
        // /documentation/UIKit/UIFont/TextStyle/title1 (iOS 9.0+)
        public static let title1 = TextStyle(rawValue: "UICTFontTextStyleTitle1")
        // /documentation/UIKit/UIFont/TextStyle/title2 (iOS 9.0+)
        public static let title2 = TextStyle(rawValue: "UICTFontTextStyleTitle2")
        // /documentation/UIKit/UIFont/TextStyle/title3 (iOS 9.0+)
        public static let title3 = TextStyle(rawValue: "UICTFontTextStyleTitle3")
        // /documentation/UIKit/UIFont/TextStyle/headline (iOS 7.0+)
        public static let headline = TextStyle(rawValue: "UICTFontTextStyleHeadline")
        // /documentation/UIKit/UIFont/TextStyle/subheadline (iOS 7.0+)
        public static let subheadline = TextStyle(rawValue: "UICTFontTextStyleSubhead")
        // /documentation/UIKit/UIFont/TextStyle/body (iOS 7.0+)
        public static let body = TextStyle(rawValue: "UICTFontTextStyleBody")
        // /documentation/UIKit/UIFont/TextStyle/callout (iOS 9.0+)
        public static let callout = TextStyle(rawValue: "UICTFontTextStyleCallout")
        // /documentation/UIKit/UIFont/TextStyle/footnote (iOS 7.0+)
        public static let footnote = TextStyle(rawValue: "UICTFontTextStyleFootnote")
        // /documentation/UIKit/UIFont/TextStyle/caption1 (iOS 7.0+)
        public static let caption1 = TextStyle(rawValue: "UICTFontTextStyleCaption1")
        // /documentation/UIKit/UIFont/TextStyle/caption2 (iOS 7.0+)
        public static let caption2 = TextStyle(rawValue: "UICTFontTextStyleCaption2")

        /// Point sizes at the default (Large) content size category, from the Human Interface
        /// Guidelines' typography table.
        static let largeCategorySizes: [TextStyle: CGFloat] = [
            .largeTitle: 34, .title1: 28, .title2: 22, .title3: 20, .headline: 17, .subheadline: 15,
            .body: 17, .callout: 16, .footnote: 13, .caption1: 12, .caption2: 11,
        ]
    }
}
