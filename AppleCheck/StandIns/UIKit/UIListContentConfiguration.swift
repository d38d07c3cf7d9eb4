import Foundation

// /documentation/UIKit/UIListContentConfiguration-swift.struct (iOS 14.0+)
/// A content configuration for a list-based content view.
@available(iOS 14.0, *)
public struct UIListContentConfiguration: UIContentConfiguration, Hashable, @unchecked Sendable {
    /// Which of UIKit's standard configurations this is.
    var kind: String

    init(kind: String, textStyle: UIFont.TextStyle = .body, secondaryTextStyle: UIFont.TextStyle = .subheadline) {
        self.kind = kind
        self.textProperties = TextProperties(font: .preferredFont(forTextStyle: textStyle), color: .label)
        self.secondaryTextProperties = TextProperties(
            font: .preferredFont(forTextStyle: secondaryTextStyle), color: .secondaryLabel)
    }

    // /documentation/UIKit/UIListContentConfiguration-swift.struct/cell() (iOS 14.0+)
    /// Returns the default configuration for a cell.
    public static func cell() -> UIListContentConfiguration { UIListContentConfiguration(kind: "cell") }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/subtitleCell() (iOS 14.0+)
    public static func subtitleCell() -> UIListContentConfiguration { UIListContentConfiguration(kind: "subtitleCell") }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/valueCell() (iOS 14.0+)
    public static func valueCell() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "valueCell", secondaryTextStyle: .body)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/header() (iOS 18.0+)
    @available(iOS 18.0, *)
    public static func header() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "header", textStyle: .headline)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/footer() (iOS 18.0+)
    @available(iOS 18.0, *)
    public static func footer() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "footer", textStyle: .footnote)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/plainHeader() (iOS 14.0+)
    public static func plainHeader() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "plainHeader", textStyle: .headline)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/plainFooter() (iOS 14.0+)
    public static func plainFooter() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "plainFooter", textStyle: .footnote)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/groupedHeader() (iOS 14.0+)
    public static func groupedHeader() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "groupedHeader", textStyle: .footnote)
    }
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/groupedFooter() (iOS 14.0+)
    public static func groupedFooter() -> UIListContentConfiguration {
        UIListContentConfiguration(kind: "groupedFooter", textStyle: .footnote)
    }

    // /documentation/UIKit/UIListContentConfiguration-swift.struct/text
    /// The primary text.
    public var text: String?
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/secondaryText
    /// The secondary text.
    public var secondaryText: String?
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/image
    /// The image to display.
    public var image: UIImage?
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/textProperties-swift.property
    /// The properties for the primary text.
    public var textProperties: UIListContentConfiguration.TextProperties
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/secondaryTextProperties
    /// The properties for the secondary text.
    public var secondaryTextProperties: UIListContentConfiguration.TextProperties
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/directionalLayoutMargins
    // (not modelled)

    // /documentation/UIKit/UIListContentConfiguration-swift.struct/makeContentView()
    @MainActor
    public func makeContentView() -> any UIView & UIContentView {
        UIListContentView(configuration: self)
    }

    // /documentation/UIKit/UIListContentConfiguration-swift.struct/updated(for:)
    public func updated(for state: any UIConfigurationState) -> UIListContentConfiguration { self }

    public static func == (lhs: UIListContentConfiguration, rhs: UIListContentConfiguration) -> Bool {
        lhs.kind == rhs.kind && lhs.text == rhs.text && lhs.secondaryText == rhs.secondaryText && lhs.image == rhs.image
            && lhs.textProperties == rhs.textProperties && lhs.secondaryTextProperties == rhs.secondaryTextProperties
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(text)
        hasher.combine(secondaryText)
    }
}

@available(iOS 14.0, *)
extension UIListContentConfiguration {
    // /documentation/UIKit/UIListContentConfiguration-swift.struct/TextProperties-swift.struct (iOS 14.0+)
    /// Properties that affect the list content configuration's text.
    public struct TextProperties: Hashable, @unchecked Sendable {
        init(font: UIFont, color: UIColor) {
            self.font = font
            self.color = color
        }
        // /documentation/UIKit/UIListContentConfiguration-swift.struct/TextProperties-swift.struct/font
        public var font: UIFont
        // /documentation/UIKit/UIListContentConfiguration-swift.struct/TextProperties-swift.struct/color
        public var color: UIColor
        // /documentation/UIKit/UIListContentConfiguration-swift.struct/TextProperties-swift.struct/numberOfLines
        public var numberOfLines: Int = 0
        // /documentation/UIKit/UIListContentConfiguration-swift.struct/TextProperties-swift.struct/adjustsFontSizeToFitWidth
        public var adjustsFontSizeToFitWidth: Bool = false
    }
}

// /documentation/UIKit/UIListContentView (iOS 14.0+)
/// A content view for displaying list-based content.
@available(iOS 14.0, *)
@MainActor
open class UIListContentView: UIView, UIContentView {
    private var listConfiguration: UIListContentConfiguration

    // /documentation/UIKit/UIListContentView/init(configuration:) (iOS 14.0+)
    /// Creates a list content view with the specified content configuration.
    public init(configuration: UIListContentConfiguration) {
        listConfiguration = configuration
        super.init(frame: .zero)
    }

    public required init?(coder: NSCoder) {
        listConfiguration = .cell()
        super.init(coder: coder)
    }

    // /documentation/UIKit/UIListContentView/configuration
    /// The current content configuration of the view. (Setting another kind of
    /// configuration is ignored, as UIKit requires a list content configuration here.)
    open var configuration: any UIContentConfiguration {
        get { listConfiguration }
        set { if let list = newValue as? UIListContentConfiguration { listConfiguration = list } }
    }

    /// STAND-IN: one or two lines of text at the fonts' sizes, plus 11-point margins.
    open override var intrinsicContentSize: CGSize {
        var height: CGFloat = 22
        if listConfiguration.text != nil {
            height += (listConfiguration.textProperties.font.pointSize * 1.2).rounded(.up)
        }
        if listConfiguration.secondaryText != nil {
            height += (listConfiguration.secondaryTextProperties.font.pointSize * 1.2).rounded(.up)
        }
        return CGSize(width: UIView.noIntrinsicMetric, height: max(height, 44))
    }
}
