import Foundation

// /documentation/UIKit/UIColor (iOS 2.0+)
/// An object that stores color data and sometimes opacity.
///
/// STAND-IN: Sendable is declared `@unchecked` (UIKit's UIColor is Sendable and immutable;
/// a non-final NSObject subclass cannot be checked by the compiler on Linux).
open class UIColor: NSObject, @unchecked Sendable {
    /// The components in the sRGB space (named system colours keep their name too).
    let components: (red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat)
    let systemName: String?

    init(systemName: String, red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat = 1) {
        self.components = (red, green, blue, alpha)
        self.systemName = systemName
        super.init()
    }

    // /documentation/UIKit/UIColor/init(red:green:blue:alpha:) (iOS 2.0+)
    public init(red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat) {
        self.components = (red, green, blue, alpha)
        self.systemName = nil
        super.init()
    }

    // /documentation/UIKit/UIColor/init(white:alpha:) (iOS 2.0+)
    public convenience init(white: CGFloat, alpha: CGFloat) {
        self.init(red: white, green: white, blue: white, alpha: alpha)
    }

    // /documentation/UIKit/UIColor/withAlphaComponent(_:) (iOS 2.0+)
    open func withAlphaComponent(_ alpha: CGFloat) -> UIColor {
        UIColor(red: components.red, green: components.green, blue: components.blue, alpha: alpha)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? UIColor else { return false }
        if let name = systemName { return name == other.systemName }
        return other.systemName == nil && components == other.components
    }

    open override var description: String {
        systemName.map { "UIColor.\($0)" }
            ?? "UIColor(red: \(components.red), green: \(components.green), blue: \(components.blue), alpha: \(components.alpha))"
    }

    // MARK: Standard colours

    // /documentation/UIKit/UIColor/clear (iOS 2.0+)
    open class var clear: UIColor { UIColor(systemName: "clear", red: 0, green: 0, blue: 0, alpha: 0) }
    // /documentation/UIKit/UIColor/black (iOS 2.0+)
    open class var black: UIColor { UIColor(systemName: "black", red: 0, green: 0, blue: 0) }
    // /documentation/UIKit/UIColor/white (iOS 2.0+)
    open class var white: UIColor { UIColor(systemName: "white", red: 1, green: 1, blue: 1) }
    // /documentation/UIKit/UIColor/gray (iOS 2.0+)
    open class var gray: UIColor { UIColor(systemName: "gray", red: 0.5, green: 0.5, blue: 0.5) }

    // MARK: Adaptable system colours (iOS 13.0+; values are the light-mode sRGB values)

    // /documentation/UIKit/UIColor/systemRed (iOS 7.0+)
    open class var systemRed: UIColor { UIColor(systemName: "systemRed", red: 1, green: 0.231, blue: 0.188) }
    // /documentation/UIKit/UIColor/systemOrange (iOS 7.0+)
    open class var systemOrange: UIColor { UIColor(systemName: "systemOrange", red: 1, green: 0.584, blue: 0) }
    // /documentation/UIKit/UIColor/systemYellow (iOS 7.0+)
    open class var systemYellow: UIColor { UIColor(systemName: "systemYellow", red: 1, green: 0.8, blue: 0) }
    // /documentation/UIKit/UIColor/systemGreen (iOS 7.0+)
    open class var systemGreen: UIColor { UIColor(systemName: "systemGreen", red: 0.204, green: 0.78, blue: 0.349) }
    // /documentation/UIKit/UIColor/systemBlue (iOS 7.0+)
    open class var systemBlue: UIColor { UIColor(systemName: "systemBlue", red: 0, green: 0.478, blue: 1) }
    // /documentation/UIKit/UIColor/systemPurple (iOS 9.0+)
    open class var systemPurple: UIColor { UIColor(systemName: "systemPurple", red: 0.686, green: 0.322, blue: 0.871) }
    // /documentation/UIKit/UIColor/systemGray (iOS 7.0+)
    open class var systemGray: UIColor { UIColor(systemName: "systemGray", red: 0.557, green: 0.557, blue: 0.576) }
    // /documentation/UIKit/UIColor/label (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var label: UIColor { UIColor(systemName: "label", red: 0, green: 0, blue: 0) }
    // /documentation/UIKit/UIColor/secondaryLabel (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var secondaryLabel: UIColor {
        UIColor(systemName: "secondaryLabel", red: 0.235, green: 0.235, blue: 0.263, alpha: 0.6)
    }
    // /documentation/UIKit/UIColor/tertiaryLabel (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var tertiaryLabel: UIColor {
        UIColor(systemName: "tertiaryLabel", red: 0.235, green: 0.235, blue: 0.263, alpha: 0.3)
    }
    // /documentation/UIKit/UIColor/systemBackground (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var systemBackground: UIColor { UIColor(systemName: "systemBackground", red: 1, green: 1, blue: 1) }
    // /documentation/UIKit/UIColor/secondarySystemBackground (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var secondarySystemBackground: UIColor {
        UIColor(systemName: "secondarySystemBackground", red: 0.949, green: 0.949, blue: 0.969)
    }
    // /documentation/UIKit/UIColor/systemGroupedBackground (iOS 13.0+)
    @available(iOS 13.0, *)
    open class var systemGroupedBackground: UIColor {
        UIColor(systemName: "systemGroupedBackground", red: 0.949, green: 0.949, blue: 0.969)
    }
    // /documentation/UIKit/UIColor/tintColor (iOS 15.0+)
    @available(iOS 15.0, *)
    open class var tintColor: UIColor { UIColor(systemName: "tintColor", red: 0, green: 0.478, blue: 1) }
}
