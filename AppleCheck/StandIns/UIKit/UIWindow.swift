import Foundation

// /documentation/UIKit/UIWindow (iOS 2.0+)
/// The backdrop for your app's user interface and the object that dispatches events to your views.
@MainActor
open class UIWindow: UIView {
    private weak var storedWindowScene: UIWindowScene?
    private var storedRootViewController: UIViewController?
    private var storedIsKeyWindow = false

    // /documentation/UIKit/UIWindow/init(windowScene:) (iOS 13.0+)
    /// Creates a window and associates it with the specified scene object. Its frame is the
    /// scene's screen bounds.
    @available(iOS 13.0, *)
    public init(windowScene: UIWindowScene) {
        super.init(frame: windowScene.simulatedScreenBounds)
        storedWindowScene = windowScene
        windowScene.attach(self)
        windowOverride = self
        isHidden = true
    }

    // /documentation/UIKit/UIWindow/init(frame:) — UIView's init(frame:) (iOS 2.0+)
    public override init(frame: CGRect) {
        super.init(frame: frame)
        windowOverride = self
        isHidden = true
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        windowOverride = self
    }

    open override var window: UIWindow? { self }

    // /documentation/UIKit/UIWindow/windowScene (iOS 13.0+)
    @available(iOS 13.0, *)
    open var windowScene: UIWindowScene? {
        get { storedWindowScene }
        set {
            storedWindowScene?.detach(self)
            storedWindowScene = newValue
            newValue?.attach(self)
        }
    }

    // /documentation/UIKit/UIWindow/rootViewController (iOS 4.0+)
    /// The root view controller for the window. Its view becomes the window's content view,
    /// sized to the window.
    open var rootViewController: UIViewController? {
        get { storedRootViewController }
        set {
            storedRootViewController?.viewIfLoaded?.removeFromSuperview()
            storedRootViewController = newValue
            if let controller = newValue {
                let content = controller.view!
                content.frame = bounds
                addSubview(content)
            }
        }
    }

    // /documentation/UIKit/UIWindow/isKeyWindow (iOS 2.0+)
    open var isKeyWindow: Bool { storedIsKeyWindow }

    // /documentation/UIKit/UIWindow/makeKey() (iOS 2.0+)
    open func makeKey() {
        storedIsKeyWindow = true
    }

    // /documentation/UIKit/UIWindow/makeKeyAndVisible() (iOS 2.0+)
    /// Shows the current window and makes it the key window.
    ///
    /// The model runs the first layout pass here (in UIKit it comes with the next turn of
    /// the run loop) and the root view controller's appearance callbacks.
    open func makeKeyAndVisible() {
        storedIsKeyWindow = true
        let wasHidden = isHidden
        isHidden = false
        if wasHidden, let root = storedRootViewController {
            root.viewWillAppear(false)
            layoutIfNeeded()
            root.viewDidAppear(false)
        } else {
            layoutIfNeeded()
        }
    }

    open override func layoutSubviews() {
        super.layoutSubviews()
        if let content = storedRootViewController?.viewIfLoaded, content.frame != bounds {
            content.frame = bounds
        }
    }
}
