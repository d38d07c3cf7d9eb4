import Foundation

// /documentation/UIKit/UIEdgeInsets (iOS 2.0+)
/// The inset distances for views.
public struct UIEdgeInsets: Equatable, Hashable, Sendable {
    // /documentation/UIKit/UIEdgeInsets/top
    public var top: CGFloat
    // /documentation/UIKit/UIEdgeInsets/left
    public var left: CGFloat
    // /documentation/UIKit/UIEdgeInsets/bottom
    public var bottom: CGFloat
    // /documentation/UIKit/UIEdgeInsets/right
    public var right: CGFloat

    // /documentation/UIKit/UIEdgeInsets/init()
    public init() {
        self.init(top: 0, left: 0, bottom: 0, right: 0)
    }

    // /documentation/UIKit/UIEdgeInsets/init(top:left:bottom:right:)
    public init(top: CGFloat, left: CGFloat, bottom: CGFloat, right: CGFloat) {
        self.top = top
        self.left = left
        self.bottom = bottom
        self.right = right
    }

    // /documentation/UIKit/UIEdgeInsets/zero (iOS 2.0+)
    public static let zero = UIEdgeInsets()
}
