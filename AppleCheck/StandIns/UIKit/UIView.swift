import Foundation

// /documentation/UIKit/UIView (iOS 2.0+)
/// An object that manages the content for a rectangular area on the screen.
///
/// The stand-in keeps the view hierarchy, frames and a layout pass (`setNeedsLayout` /
/// `layoutIfNeeded` → `layoutSubviews`). There is no rendering, no Auto Layout and no
/// run loop: a layout pass happens when `layoutIfNeeded()` is called, or when the view
/// moves into a window (the model of "the next layout pass"; see DEVIATIONS.md).
@MainActor
open class UIView: UIResponder {
    private var storedFrame: CGRect
    private var storedBoundsOrigin: CGPoint = .zero
    private weak var storedSuperview: UIView?
    private var storedSubviews: [UIView] = []
    /// Set by UIWindow on itself; for other views the window is found through the superviews.
    weak var windowOverride: UIWindow?
    var needsLayout = true

    // /documentation/UIKit/UIView/init(frame:) (iOS 2.0+)
    /// Initializes and returns a newly allocated view object with the specified frame rectangle.
    public init(frame: CGRect) {
        storedFrame = frame
        super.init()
    }

    // /documentation/UIKit/UIView/init(coder:) (iOS 2.0+)
    /// STAND-IN: UIView adopts NSCoding in UIKit; the stand-in declares the required
    /// initializer (so subclasses write it as in UIKit) without the NSCoding conformance.
    /// Nothing is ever decoded: it makes an empty view.
    public required init?(coder: NSCoder) {
        storedFrame = .zero
        super.init()
    }

    /// `UIView()` as in UIKit (NSObject's `init()`, which UIView implements as
    /// `init(frame: .zero)`).
    public override convenience init() {
        self.init(frame: .zero)
    }

    // MARK: Geometry

    // /documentation/UIKit/UIView/frame (iOS 2.0+)
    /// The frame rectangle, which describes the view's location and size in its superview's coordinate system.
    open var frame: CGRect {
        get { storedFrame }
        set {
            let resized = newValue.size != storedFrame.size
            storedFrame = newValue
            if resized { setNeedsLayout() }
        }
    }

    // /documentation/UIKit/UIView/bounds (iOS 2.0+)
    /// The bounds rectangle, which describes the view's location and size in its own coordinate system.
    open var bounds: CGRect {
        get { CGRect(origin: storedBoundsOrigin, size: storedFrame.size) }
        set {
            storedBoundsOrigin = newValue.origin
            if newValue.size != storedFrame.size {
                storedFrame.size = newValue.size
                setNeedsLayout()
            }
        }
    }

    // /documentation/UIKit/UIView/center (iOS 2.0+)
    open var center: CGPoint {
        get { CGPoint(x: storedFrame.midX, y: storedFrame.midY) }
        set {
            storedFrame.origin = CGPoint(x: newValue.x - storedFrame.width / 2, y: newValue.y - storedFrame.height / 2)
        }
    }

    // MARK: Hierarchy

    // /documentation/UIKit/UIView/window (iOS 2.0+)
    /// The receiver's window object, or nil if it has none.
    open var window: UIWindow? {
        if let windowOverride { return windowOverride }
        return storedSuperview?.window
    }

    // /documentation/UIKit/UIView/superview (iOS 2.0+)
    /// The receiver's superview, or nil if it has none.
    open var superview: UIView? { storedSuperview }

    // /documentation/UIKit/UIView/subviews (iOS 2.0+)
    /// The receiver's immediate subviews.
    open var subviews: [UIView] { storedSubviews }

    open override var next: UIResponder? { storedSuperview }

    // /documentation/UIKit/UIView/addSubview(_:) (iOS 2.0+)
    /// Adds a view to the end of the receiver's list of subviews.
    open func addSubview(_ view: UIView) {
        if view.storedSuperview === self {
            storedSubviews.removeAll { $0 === view }
            storedSubviews.append(view)
            return
        }
        let oldWindow = view.window
        view.removeFromSuperview()
        storedSubviews.append(view)
        view.storedSuperview = self
        view.didMoveToSuperview()
        if view.window !== oldWindow { view.propagateWindowChange() }
        didAddSubview(view)
    }

    // /documentation/UIKit/UIView/removeFromSuperview() (iOS 2.0+)
    /// Unlinks the view from its superview and its window, and removes it from the responder chain.
    open func removeFromSuperview() {
        guard let parent = storedSuperview else { return }
        let oldWindow = window
        parent.willRemoveSubview(self)
        parent.storedSubviews.removeAll { $0 === self }
        storedSuperview = nil
        didMoveToSuperview()
        if window !== oldWindow { propagateWindowChange() }
    }

    // /documentation/UIKit/UIView/didAddSubview(_:) (iOS 2.0+)
    open func didAddSubview(_ subview: UIView) {}

    // /documentation/UIKit/UIView/willRemoveSubview(_:) (iOS 2.0+)
    open func willRemoveSubview(_ subview: UIView) {}

    // /documentation/UIKit/UIView/didMoveToSuperview() (iOS 2.0+)
    open func didMoveToSuperview() {}

    // /documentation/UIKit/UIView/didMoveToWindow() (iOS 2.0+)
    open func didMoveToWindow() {}

    func propagateWindowChange() {
        didMoveToWindow()
        for subview in storedSubviews where subview.windowOverride == nil {
            subview.propagateWindowChange()
        }
    }

    // /documentation/UIKit/UIView/isDescendant(of:) (iOS 2.0+)
    open func isDescendant(of view: UIView) -> Bool {
        var current: UIView? = self
        while let candidate = current {
            if candidate === view { return true }
            current = candidate.storedSuperview
        }
        return false
    }

    // MARK: Appearance

    // /documentation/UIKit/UIView/backgroundColor (iOS 2.0+)
    /// The view's background color.
    open var backgroundColor: UIColor?

    // /documentation/UIKit/UIView/isHidden (iOS 2.0+)
    /// A Boolean value that determines whether the view is hidden.
    open var isHidden: Bool = false

    // /documentation/UIKit/UIView/alpha (iOS 2.0+)
    /// The view's alpha value.
    open var alpha: CGFloat = 1

    // /documentation/UIKit/UIView/tag (iOS 2.0+)
    /// An integer that you can use to identify view objects in your application.
    open var tag: Int = 0

    // /documentation/UIKit/UIView/isUserInteractionEnabled (iOS 2.0+)
    open var isUserInteractionEnabled: Bool = true

    // /documentation/UIKit/UIView/tintColor (iOS 7.0+)
    open var tintColor: UIColor! = UIColor.systemBlue

    // /documentation/UIKit/UIView/viewWithTag(_:) (iOS 2.0+)
    open func viewWithTag(_ tag: Int) -> UIView? {
        if self.tag == tag { return self }
        for subview in storedSubviews {
            if let found = subview.viewWithTag(tag) { return found }
        }
        return nil
    }

    // MARK: Layout

    // /documentation/UIKit/UIView/layoutSubviews() (iOS 2.0+)
    /// Lays out subviews.
    open func layoutSubviews() {}

    // /documentation/UIKit/UIView/setNeedsLayout() (iOS 2.0+)
    /// Invalidates the current layout of the receiver and triggers a layout update during the next update cycle.
    open func setNeedsLayout() {
        needsLayout = true
    }

    // /documentation/UIKit/UIView/layoutIfNeeded() (iOS 2.0+)
    /// Lays out the subviews immediately, if layout updates are pending.
    open func layoutIfNeeded() {
        if needsLayout {
            needsLayout = false
            layoutSubviews()
        }
        for subview in storedSubviews {
            subview.layoutIfNeeded()
        }
    }

    // /documentation/UIKit/UIView/sizeThatFits(_:) (iOS 2.0+)
    /// Asks the view to calculate and return the size that best fits the specified size.
    /// (UIView's own implementation returns the view's existing size.)
    open func sizeThatFits(_ size: CGSize) -> CGSize {
        bounds.size
    }

    // /documentation/UIKit/UIView/sizeToFit() (iOS 2.0+)
    open func sizeToFit() {
        frame.size = sizeThatFits(frame.size)
    }

    // /documentation/UIKit/UIView/systemLayoutSizeFitting(_:) (iOS 6.0+)
    /// Returns the optimal size of the view based on its current constraints.
    /// STAND-IN: no Auto Layout; returns `intrinsicContentSize` where it has a metric,
    /// the target size elsewhere.
    open func systemLayoutSizeFitting(_ targetSize: CGSize) -> CGSize {
        let intrinsic = intrinsicContentSize
        return CGSize(
            width: intrinsic.width == UIView.noIntrinsicMetric ? targetSize.width : intrinsic.width,
            height: intrinsic.height == UIView.noIntrinsicMetric ? targetSize.height : intrinsic.height
        )
    }

    // /documentation/UIKit/UIView/intrinsicContentSize (iOS 6.0+)
    /// The natural size for the receiving view, considering only properties of the view itself.
    open var intrinsicContentSize: CGSize {
        CGSize(width: UIView.noIntrinsicMetric, height: UIView.noIntrinsicMetric)
    }

    // /documentation/UIKit/UIView/invalidateIntrinsicContentSize() (iOS 6.0+)
    open func invalidateIntrinsicContentSize() {}

    // /documentation/UIKit/UIView/noIntrinsicMetric (iOS 6.0+)
    /// The absence of an intrinsic metric for a given numeric view property.
    public static let noIntrinsicMetric: CGFloat = -1

    // /documentation/UIKit/UIView/layoutFittingCompressedSize (iOS 6.0+)
    /// The option to use the smallest possible size.
    public static let layoutFittingCompressedSize = CGSize(width: 0, height: 0)

    // /documentation/UIKit/UIView/layoutFittingExpandedSize (iOS 6.0+)
    /// The option to use the largest possible size.
    public static let layoutFittingExpandedSize = CGSize(width: 10_000, height: 10_000)
}
