import Foundation

// /documentation/UIKit/UIApplication (iOS 2.0+)
/// The centralized point of control and coordination for apps running in iOS.
@MainActor
open class UIApplication: UIResponder {
    private static let sharedApplication = UIApplication()

    // /documentation/UIKit/UIApplication/shared (iOS 2.0+)
    /// The singleton app instance.
    open class var shared: UIApplication { sharedApplication }

    // /documentation/UIKit/UIApplication/delegate (iOS 2.0+)
    /// The delegate of the app object.
    /// STAND-IN: `weak` (UIKit's is `unowned(unsafe)`; both leave ownership to the app).
    open weak var delegate: (any UIApplicationDelegate)?

    // /documentation/UIKit/UIApplication/connectedScenes (iOS 13.0+)
    @available(iOS 13.0, *)
    open var connectedScenes: Set<UIScene> { [] }

    // /documentation/UIKit/UIApplication/applicationState (iOS 4.0+)
    open var applicationState: UIApplication.State { .active }
}

extension UIApplication {
    // /documentation/UIKit/UIApplication/State (iOS 4.0+)
    public enum State: Int, Sendable {
        case active = 0
        case inactive = 1
        case background = 2
    }

    // /documentation/UIKit/UIApplication/LaunchOptionsKey (iOS 2.0+)
    /// Keys used to access values in the launch options dictionary passed to the app.
    public struct LaunchOptionsKey: Hashable, Equatable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        // /documentation/UIKit/UIApplication/LaunchOptionsKey/url (iOS 3.0+)
        public static let url = LaunchOptionsKey(rawValue: "UIApplicationLaunchOptionsURLKey")
    }
}

// /documentation/UIKit/UIApplicationDelegate (iOS 2.0+)
/// A set of methods to manage shared behaviors for your app.
///
/// STAND-IN: UIKit's optional requirements are requirements with default implementations
/// (see DEVIATIONS.md). The `= nil` default argument UIKit shows on the launching methods
/// cannot be written on a Swift protocol requirement.
@MainActor
public protocol UIApplicationDelegate: NSObjectProtocol {
    // /documentation/UIKit/UIApplicationDelegate/window (iOS 5.0+)
    /// The window to use when presenting a storyboard.
    var window: UIWindow? { get set }

    // /documentation/UIKit/UIApplicationDelegate/application(_:willFinishLaunchingWithOptions:) (iOS 6.0+)
    func application(
        _ application: UIApplication,
        willFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool

    // /documentation/UIKit/UIApplicationDelegate/application(_:didFinishLaunchingWithOptions:) (iOS 3.0+)
    /// Tells the delegate that the launch process is almost done and the app is almost ready to run.
    func application(
        _ application: UIApplication,
        didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool

    // /documentation/UIKit/UIApplicationDelegate/application(_:configurationForConnecting:options:) (iOS 13.0+)
    /// Retrieves the configuration data for UIKit to use when creating a new scene.
    @available(iOS 13.0, *)
    func application(
        _ application: UIApplication, configurationForConnecting connectingSceneSession: UISceneSession,
        options: UIScene.ConnectionOptions
    ) -> UISceneConfiguration

    // /documentation/UIKit/UIApplicationDelegate/application(_:didDiscardSceneSessions:) (iOS 13.0+)
    @available(iOS 13.0, *)
    func application(_ application: UIApplication, didDiscardSceneSessions sceneSessions: Set<UISceneSession>)

    // /documentation/UIKit/UIApplicationDelegate/applicationDidBecomeActive(_:) (iOS 2.0+)
    func applicationDidBecomeActive(_ application: UIApplication)
    // /documentation/UIKit/UIApplicationDelegate/applicationWillResignActive(_:) (iOS 2.0+)
    func applicationWillResignActive(_ application: UIApplication)
    // /documentation/UIKit/UIApplicationDelegate/applicationDidEnterBackground(_:) (iOS 4.0+)
    func applicationDidEnterBackground(_ application: UIApplication)
    // /documentation/UIKit/UIApplicationDelegate/applicationWillEnterForeground(_:) (iOS 4.0+)
    func applicationWillEnterForeground(_ application: UIApplication)
    // /documentation/UIKit/UIApplicationDelegate/applicationWillTerminate(_:) (iOS 2.0+)
    func applicationWillTerminate(_ application: UIApplication)
}

/// What UIKit does when the app delegate leaves an optional method out.
extension UIApplicationDelegate {
    public var window: UIWindow? {
        get { nil }
        set {}
    }
    public func application(
        _ application: UIApplication,
        willFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool { true }
    public func application(
        _ application: UIApplication,
        didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool { true }
    @available(iOS 13.0, *)
    public func application(
        _ application: UIApplication, configurationForConnecting connectingSceneSession: UISceneSession,
        options: UIScene.ConnectionOptions
    ) -> UISceneConfiguration {
        connectingSceneSession.configuration
    }
    @available(iOS 13.0, *)
    public func application(_ application: UIApplication, didDiscardSceneSessions sceneSessions: Set<UISceneSession>) {}
    public func applicationDidBecomeActive(_ application: UIApplication) {}
    public func applicationWillResignActive(_ application: UIApplication) {}
    public func applicationDidEnterBackground(_ application: UIApplication) {}
    public func applicationWillEnterForeground(_ application: UIApplication) {}
    public func applicationWillTerminate(_ application: UIApplication) {}
}

extension UIApplicationDelegate {
    // /documentation/UIKit/UIApplicationDelegate/main() (iOS 2.0+; UIKit's Swift overlay)
    /// Provides the top-level entry point for the app, so `@main class AppDelegate:
    /// UIResponder, UIApplicationDelegate` compiles as it does with UIKit.
    ///
    /// STAND-IN: there is no event loop and no Objective-C runtime to instantiate the
    /// delegate class from its name on Linux, so this returns at once after saying so.
    /// Tests drive an app with `UIApplication.simulateLaunch(delegate:sceneDelegate:)`.
    @MainActor @preconcurrency
    public static func main() {
        FileHandle.standardError.write(
            Data("UIKit stand-in: UIApplicationDelegate.main() has no event loop on Linux; nothing to run.\n".utf8))
    }
}

@_spi(Simulation)
extension UIApplication {
    /// Launches an app as UIKit does with scenes, as far as the model goes: sets
    /// `delegate`, calls `application(_:willFinishLaunchingWithOptions:)` and
    /// `application(_:didFinishLaunchingWithOptions:)` (nil options), then, with a scene
    /// delegate, asks `application(_:configurationForConnecting:options:)`, creates a
    /// `UIWindowScene`, sets its delegate and calls `scene(_:willConnectTo:options:)`,
    /// `sceneWillEnterForeground(_:)` and `sceneDidBecomeActive(_:)`.
    /// - Returns: the connected scene, when there is a scene delegate.
    @discardableResult
    public func simulateLaunch(
        delegate: any UIApplicationDelegate, sceneDelegate: (any UISceneDelegate)? = nil
    ) -> UIWindowScene? {
        self.delegate = delegate
        _ = delegate.application(self, willFinishLaunchingWithOptions: nil)
        _ = delegate.application(self, didFinishLaunchingWithOptions: nil)
        guard let sceneDelegate else {
            delegate.applicationDidBecomeActive(self)
            return nil
        }
        let session = UISceneSession.simulated(role: .windowApplication)
        let options = UIScene.ConnectionOptions.simulated()
        _ = delegate.application(self, configurationForConnecting: session, options: options)
        let scene = UIWindowScene(session: session, connectionOptions: options)
        scene.delegate = sceneDelegate
        sceneDelegate.scene(scene, willConnectTo: session, options: options)
        sceneDelegate.sceneWillEnterForeground(scene)
        sceneDelegate.sceneDidBecomeActive(scene)
        return scene
    }
}

// /documentation/UIKit/UISceneDelegate (iOS 13.0+)
/// The core methods you use to respond to life-cycle events occurring within a scene.
@available(iOS 13.0, *)
@MainActor
public protocol UISceneDelegate: NSObjectProtocol {
    // /documentation/UIKit/UISceneDelegate/scene(_:willConnectTo:options:) (iOS 13.0+)
    /// Tells the delegate about the addition of a scene to the app.
    func scene(
        _ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions)
    // /documentation/UIKit/UISceneDelegate/sceneDidDisconnect(_:) (iOS 13.0+)
    func sceneDidDisconnect(_ scene: UIScene)
    // /documentation/UIKit/UISceneDelegate/sceneDidBecomeActive(_:) (iOS 13.0+)
    func sceneDidBecomeActive(_ scene: UIScene)
    // /documentation/UIKit/UISceneDelegate/sceneWillResignActive(_:) (iOS 13.0+)
    func sceneWillResignActive(_ scene: UIScene)
    // /documentation/UIKit/UISceneDelegate/sceneWillEnterForeground(_:) (iOS 13.0+)
    func sceneWillEnterForeground(_ scene: UIScene)
    // /documentation/UIKit/UISceneDelegate/sceneDidEnterBackground(_:) (iOS 13.0+)
    func sceneDidEnterBackground(_ scene: UIScene)
}

@available(iOS 13.0, *)
extension UISceneDelegate {
    public func scene(
        _ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions
    ) {}
    public func sceneDidDisconnect(_ scene: UIScene) {}
    public func sceneDidBecomeActive(_ scene: UIScene) {}
    public func sceneWillResignActive(_ scene: UIScene) {}
    public func sceneWillEnterForeground(_ scene: UIScene) {}
    public func sceneDidEnterBackground(_ scene: UIScene) {}
}

// /documentation/UIKit/UIWindowSceneDelegate (iOS 13.0+)
/// Additional methods that you use to manage app-specific tasks occurring in a scene.
@available(iOS 13.0, *)
@MainActor
public protocol UIWindowSceneDelegate: UISceneDelegate {
    // /documentation/UIKit/UIWindowSceneDelegate/window (iOS 13.0+)
    /// The main window associated with the scene.
    var window: UIWindow? { get set }
}

@available(iOS 13.0, *)
extension UIWindowSceneDelegate {
    public var window: UIWindow? {
        get { nil }
        set {}
    }
}
