import Foundation

// /documentation/UIKit/UIViewController (iOS 2.0+)
/// An object that manages a view hierarchy for your UIKit app.
///
/// The stand-in loads its view lazily (`loadView()` then `viewDidLoad()` on first access
/// of `view`), as UIKit documents, and keeps the parent/child, navigation and presentation
/// links. Appearance callbacks run when a controller becomes a window's root
/// (`makeKeyAndVisible`), is pushed or presented; there are no animations.
@MainActor
open class UIViewController: UIResponder {
    private var storedView: UIView?
    private var storedNavigationItem: UINavigationItem?
    private var storedEditButtonItem: UIBarButtonItem?
    weak var parentController: UIViewController?
    private var storedChildren: [UIViewController] = []
    private var storedPresented: UIViewController?
    weak var presentingController: UIViewController?

    // /documentation/UIKit/UIViewController/init(nibName:bundle:) (iOS 2.0+)
    /// Creates a view controller with the nib file in the specified bundle.
    public init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) {
        self.storedNibName = nibNameOrNil
        super.init()
    }

    // /documentation/UIKit/UIViewController/init(coder:) (iOS 2.0+)
    /// STAND-IN: required as in UIKit (NSCoding), without the NSCoding conformance.
    public required init?(coder: NSCoder) {
        self.storedNibName = nil
        super.init()
    }

    /// `UIViewController()` as in UIKit (`init(nibName: nil, bundle: nil)`).
    public override convenience init() {
        self.init(nibName: nil, bundle: nil)
    }

    // /documentation/UIKit/UIViewController/nibName (iOS 2.0+)
    open var nibName: String? { storedNibName }
    private let storedNibName: String?

    // MARK: View

    // /documentation/UIKit/UIViewController/view (iOS 2.0+)
    /// The view that the controller manages. Loaded on first access: `loadView()`, then `viewDidLoad()`.
    open var view: UIView! {
        get {
            if storedView == nil {
                loadView()
                if storedView == nil { storedView = UIView(frame: .zero) }
                viewDidLoad()
            }
            return storedView
        }
        set { storedView = newValue }
    }

    // /documentation/UIKit/UIViewController/isViewLoaded (iOS 3.0+)
    open var isViewLoaded: Bool { storedView != nil }

    // /documentation/UIKit/UIViewController/viewIfLoaded (iOS 9.0+)
    open var viewIfLoaded: UIView? { storedView }

    // /documentation/UIKit/UIViewController/loadView() (iOS 2.0+)
    /// Creates the view that the controller manages. UIKit's own implementation makes a plain view.
    open func loadView() {
        storedView = UIView(frame: .zero)
    }

    // /documentation/UIKit/UIViewController/loadViewIfNeeded() (iOS 9.0+)
    open func loadViewIfNeeded() {
        _ = view
    }

    // /documentation/UIKit/UIViewController/viewDidLoad() (iOS 2.0+)
    /// Called after the controller's view is loaded into memory.
    open func viewDidLoad() {}

    // /documentation/UIKit/UIViewController/viewWillAppear(_:) (iOS 2.0+)
    open func viewWillAppear(_ animated: Bool) {}

    // /documentation/UIKit/UIViewController/viewDidAppear(_:) (iOS 2.0+)
    open func viewDidAppear(_ animated: Bool) {}

    // /documentation/UIKit/UIViewController/viewWillDisappear(_:) (iOS 2.0+)
    open func viewWillDisappear(_ animated: Bool) {}

    // /documentation/UIKit/UIViewController/viewDidDisappear(_:) (iOS 2.0+)
    open func viewDidDisappear(_ animated: Bool) {}

    // /documentation/UIKit/UIViewController/viewWillLayoutSubviews() (iOS 5.0+)
    open func viewWillLayoutSubviews() {}

    // /documentation/UIKit/UIViewController/viewDidLayoutSubviews() (iOS 5.0+)
    open func viewDidLayoutSubviews() {}

    // MARK: Title, navigation, editing

    // /documentation/UIKit/UIViewController/title (iOS 2.0+)
    /// A localized string that represents the view this controller manages.
    open var title: String? {
        didSet { storedNavigationItem?.title = title }
    }

    // /documentation/UIKit/UIViewController/navigationItem (iOS 2.0+)
    /// The navigation item used to represent the view controller in a parent's navigation bar.
    open var navigationItem: UINavigationItem {
        if let storedNavigationItem { return storedNavigationItem }
        let item = UINavigationItem()
        item.title = title
        storedNavigationItem = item
        return item
    }

    // /documentation/UIKit/UIViewController/navigationController (iOS 2.0+)
    /// The nearest ancestor in the view controller hierarchy that's a navigation controller.
    open var navigationController: UINavigationController? {
        var current = parentController
        while let candidate = current {
            if let navigation = candidate as? UINavigationController { return navigation }
            current = candidate.parentController
        }
        return nil
    }

    // /documentation/UIKit/UIViewController/parent (iOS 5.0+)
    open var parent: UIViewController? { parentController }

    // /documentation/UIKit/UIViewController/children (iOS 5.0+)
    open var children: [UIViewController] { storedChildren }

    // /documentation/UIKit/UIViewController/addChild(_:) (iOS 5.0+)
    open func addChild(_ childController: UIViewController) {
        childController.removeFromParent()
        storedChildren.append(childController)
        childController.parentController = self
    }

    // /documentation/UIKit/UIViewController/removeFromParent() (iOS 5.0+)
    open func removeFromParent() {
        parentController?.storedChildren.removeAll { $0 === self }
        parentController = nil
    }

    // /documentation/UIKit/UIViewController/isEditing (iOS 2.0+)
    /// A Boolean value indicating whether the view controller currently allows the user to edit the view contents.
    open var isEditing: Bool {
        get { storedIsEditing }
        set { setEditing(newValue, animated: false) }
    }
    private var storedIsEditing = false

    // /documentation/UIKit/UIViewController/setEditing(_:animated:) (iOS 2.0+)
    /// Sets whether the view controller shows an editable view. Updates `editButtonItem`'s
    /// title ("Edit"/"Done") as UIKit does.
    open func setEditing(_ editing: Bool, animated: Bool) {
        storedIsEditing = editing
        storedEditButtonItem?.title = editing ? "Done" : "Edit"
        storedEditButtonItem?.style = editing ? .done : .plain
    }

    // /documentation/UIKit/UIViewController/editButtonItem (iOS 2.0+)
    /// A bar button item that toggles its title and associated state between Edit and Done.
    open var editButtonItem: UIBarButtonItem {
        if let storedEditButtonItem { return storedEditButtonItem }
        let item = UIBarButtonItem()
        item.title = isEditing ? "Done" : "Edit"
        item.primaryAction = UIAction(title: "") { [weak self] _ in
            guard let self else { return }
            self.setEditing(!self.isEditing, animated: true)
        }
        storedEditButtonItem = item
        return item
    }

    // MARK: Presentation

    // /documentation/UIKit/UIViewController/present(_:animated:completion:) (iOS 5.0+)
    /// Presents a view controller modally.
    open func present(_ viewControllerToPresent: UIViewController, animated flag: Bool, completion: (() -> Void)? = nil)
    {
        storedPresented = viewControllerToPresent
        viewControllerToPresent.presentingController = self
        viewControllerToPresent.loadViewIfNeeded()
        viewControllerToPresent.viewWillAppear(flag)
        viewControllerToPresent.viewDidAppear(flag)
        completion?()
    }

    // /documentation/UIKit/UIViewController/dismiss(animated:completion:) (iOS 5.0+)
    /// Dismisses the view controller that was presented modally by the view controller.
    open func dismiss(animated flag: Bool, completion: (() -> Void)? = nil) {
        // "If you call this method on the presented view controller itself, UIKit asks the
        // presenting view controller to handle the dismissal."
        if let presented = storedPresented {
            presented.viewWillDisappear(flag)
            presented.presentingController = nil
            storedPresented = nil
            presented.viewDidDisappear(flag)
        } else if let presenting = presentingController {
            presenting.dismiss(animated: flag, completion: completion)
            return
        }
        completion?()
    }

    // /documentation/UIKit/UIViewController/presentedViewController (iOS 5.0+)
    open var presentedViewController: UIViewController? { storedPresented }

    // /documentation/UIKit/UIViewController/presentingViewController (iOS 5.0+)
    open var presentingViewController: UIViewController? { presentingController }
}

// /documentation/UIKit/UINavigationController (iOS 2.0+)
/// A container view controller that defines a stack-based scheme for navigating hierarchical content.
@MainActor
open class UINavigationController: UIViewController {
    private var stack: [UIViewController] = []

    // /documentation/UIKit/UINavigationController/init(rootViewController:) (iOS 2.0+)
    /// Initializes and returns a newly created navigation controller.
    public init(rootViewController: UIViewController) {
        super.init(nibName: nil, bundle: nil)
        push(rootViewController)
    }

    // /documentation/UIKit/UINavigationController/init(nibName:bundle:) (iOS 2.0+)
    public override init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) {
        super.init(nibName: nibNameOrNil, bundle: nibBundleOrNil)
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    private func push(_ controller: UIViewController) {
        addChild(controller)
        stack.append(controller)
        if isViewLoaded {
            controller.view.frame = view.bounds
            view.addSubview(controller.view)
        }
    }

    open override func loadView() {
        view = ContainerView(frame: .zero)
        if let top = stack.last {
            view.addSubview(top.view)
        }
    }

    /// The navigation controller's view keeps the top view controller's view at its size.
    private final class ContainerView: UIView {
        override func layoutSubviews() {
            super.layoutSubviews()
            for subview in subviews where subview.frame != bounds { subview.frame = bounds }
        }
    }

    open override var view: UIView! {
        get {
            let loaded = super.view!
            if let top = stack.last, top.isViewLoaded, top.view.frame.size != loaded.bounds.size {
                top.view.frame = loaded.bounds
            }
            return loaded
        }
        set { super.view = newValue }
    }

    // /documentation/UIKit/UINavigationController/viewControllers (iOS 2.0+)
    /// The view controllers currently on the navigation stack.
    open var viewControllers: [UIViewController] {
        get { stack }
        set {
            for controller in stack {
                controller.removeFromParent()
                controller.viewIfLoaded?.removeFromSuperview()
            }
            stack = []
            for controller in newValue { push(controller) }
        }
    }

    // /documentation/UIKit/UINavigationController/topViewController (iOS 2.0+)
    open var topViewController: UIViewController? { stack.last }

    // /documentation/UIKit/UINavigationController/pushViewController(_:animated:) (iOS 2.0+)
    /// Pushes a view controller onto the receiver's stack and updates the display.
    open func pushViewController(_ viewController: UIViewController, animated: Bool) {
        let previous = stack.last
        previous?.viewWillDisappear(animated)
        push(viewController)
        viewController.loadViewIfNeeded()
        viewController.viewWillAppear(animated)
        previous?.viewIfLoaded?.removeFromSuperview()
        previous?.viewDidDisappear(animated)
        viewController.viewDidAppear(animated)
    }

    // /documentation/UIKit/UINavigationController/popViewController(animated:) (iOS 2.0+)
    /// Pops the top view controller from the navigation stack and updates the display.
    @discardableResult
    open func popViewController(animated: Bool) -> UIViewController? {
        guard stack.count > 1, let top = stack.popLast() else { return nil }
        top.viewWillDisappear(animated)
        top.viewIfLoaded?.removeFromSuperview()
        top.removeFromParent()
        if let revealed = stack.last, isViewLoaded {
            revealed.view.frame = view.bounds
            view.addSubview(revealed.view)
            revealed.viewWillAppear(animated)
            revealed.viewDidAppear(animated)
        }
        top.viewDidDisappear(animated)
        return top
    }
}
