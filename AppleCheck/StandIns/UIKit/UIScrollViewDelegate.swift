import Foundation

// /documentation/UIKit/UIScrollViewDelegate (iOS 2.0+)
/// Methods for responding to scroll-related messages in a scroll view.
///
/// STAND-IN: optional requirements become requirements with do-nothing defaults.
@MainActor
public protocol UIScrollViewDelegate: NSObjectProtocol {
    // /documentation/UIKit/UIScrollViewDelegate/scrollViewDidScroll(_:) (iOS 2.0+)
    /// Tells the delegate when the user scrolls the content view within the scroll view.
    func scrollViewDidScroll(_ scrollView: UIScrollView)
}

extension UIScrollViewDelegate {
    public func scrollViewDidScroll(_ scrollView: UIScrollView) {}
}
