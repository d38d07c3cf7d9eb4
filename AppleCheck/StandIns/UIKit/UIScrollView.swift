import Foundation

// /documentation/UIKit/UIScrollView (iOS 2.0+)
/// A view that allows the scrolling and zooming of its contained views.
///
/// STAND-IN: no `delegate` property here. In UIKit, UITableView and UICollectionView
/// redeclare UIScrollView's `delegate` with their own protocol types, which Objective-C
/// allows and Swift does not; the stand-in declares `delegate` on those subclasses only.
@MainActor
open class UIScrollView: UIView {
    // /documentation/UIKit/UIScrollView/contentOffset (iOS 2.0+)
    /// The point at which the origin of the content view is offset from the origin of the
    /// scroll view. As in UIKit, it is the origin of `bounds`; changing it asks for a layout.
    open var contentOffset: CGPoint {
        get { bounds.origin }
        set {
            guard newValue != bounds.origin else { return }
            bounds = CGRect(origin: newValue, size: bounds.size)
            setNeedsLayout()
        }
    }

    // /documentation/UIKit/UIScrollView/setContentOffset(_:animated:) (iOS 2.0+)
    open func setContentOffset(_ contentOffset: CGPoint, animated: Bool) {
        self.contentOffset = contentOffset
    }

    // /documentation/UIKit/UIScrollView/contentSize (iOS 2.0+)
    /// The size of the content view.
    open var contentSize: CGSize = .zero

    // /documentation/UIKit/UIScrollView/contentInset (iOS 2.0+)
    open var contentInset: UIEdgeInsets = .zero

    // /documentation/UIKit/UIScrollView/isScrollEnabled (iOS 2.0+)
    open var isScrollEnabled: Bool = true

    // /documentation/UIKit/UIScrollView/isDragging (iOS 2.0+)
    open var isDragging: Bool { false }

    // /documentation/UIKit/UIScrollView/isDecelerating (iOS 2.0+)
    open var isDecelerating: Bool { false }
}
