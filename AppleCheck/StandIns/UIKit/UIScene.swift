import Foundation

// /documentation/UIKit/UIScene (iOS 13.0+)
/// An object that represents one instance of your app's user interface.
@available(iOS 13.0, *)
@MainActor
open class UIScene: UIResponder {
    // /documentation/UIKit/UIScene/init(session:connectionOptions:) (iOS 13.0+)
    /// Creates a scene object using the specified session and connection information.
    public init(session: UISceneSession, connectionOptions: UIScene.ConnectionOptions) {
        self.storedSession = session
        super.init()
        session.scene = self
    }

    // /documentation/UIKit/UIScene/session (iOS 13.0+)
    /// The session associated with the scene.
    open var session: UISceneSession { storedSession }
    private let storedSession: UISceneSession

    // /documentation/UIKit/UIScene/delegate (iOS 13.0+)
    /// The object you use to respond to life-cycle events occurring within the scene.
    /// (UIKit keeps a strong reference to it.)
    open var delegate: (any UISceneDelegate)?

    // /documentation/UIKit/UIScene/title (iOS 13.0+)
    open var title: String!
}

@available(iOS 13.0, *)
extension UIScene {
    // /documentation/UIKit/UIScene/ConnectionOptions (iOS 13.0+)
    /// A data object containing information about the reasons why UIKit created the scene.
    @MainActor
    open class ConnectionOptions: NSObject {
        override init() {
            super.init()
        }

        /// Options as UIKit hands them to a freshly launched app (nothing to open or handle).
        @_spi(Simulation) public static func simulated() -> UIScene.ConnectionOptions {
            UIScene.ConnectionOptions()
        }
    }
}

// /documentation/UIKit/UIWindowScene (iOS 13.0+)
/// A scene that manages one or more windows for your app.
///
/// STAND-IN: its screen is a 390 × 844-point iPhone screen (no UIScreen in the stand-in).
@available(iOS 13.0, *)
@MainActor
open class UIWindowScene: UIScene {
    private var storedWindows: [Weak] = []
    private struct Weak { weak var window: UIWindow? }

    /// The bounds of the scene's screen.
    @_spi(Simulation) public var simulatedScreenBounds = CGRect(x: 0, y: 0, width: 390, height: 844)

    // /documentation/UIKit/UIWindowScene/windows (iOS 13.0+)
    /// The windows associated with the scene.
    open var windows: [UIWindow] { storedWindows.compactMap(\.window) }

    // /documentation/UIKit/UIWindowScene/keyWindow (iOS 15.0+)
    @available(iOS 15.0, *)
    open var keyWindow: UIWindow? { windows.first { $0.isKeyWindow } }

    func attach(_ window: UIWindow) {
        storedWindows.removeAll { $0.window == nil || $0.window === window }
        storedWindows.append(Weak(window: window))
    }

    func detach(_ window: UIWindow) {
        storedWindows.removeAll { $0.window == nil || $0.window === window }
    }

    /// A window scene connected as UIKit connects one at launch: a session with the
    /// `.windowApplication` role, and empty connection options.
    @_spi(Simulation) public static func simulated() -> UIWindowScene {
        UIWindowScene(session: UISceneSession.simulated(role: .windowApplication), connectionOptions: .simulated())
    }
}

// /documentation/UIKit/UISceneSession (iOS 13.0+)
/// An object that contains information about one of your app's scenes.
@available(iOS 13.0, *)
@MainActor
open class UISceneSession: NSObject {
    init(role: UISceneSession.Role, configuration: UISceneConfiguration) {
        self.storedRole = role
        self.storedConfiguration = configuration
        self.storedPersistentIdentifier = UUID().uuidString
        super.init()
    }

    // /documentation/UIKit/UISceneSession/role-swift.property (iOS 13.0+)
    open var role: UISceneSession.Role { storedRole }
    private let storedRole: UISceneSession.Role
    // /documentation/UIKit/UISceneSession/configuration (iOS 13.0+)
    open var configuration: UISceneConfiguration { storedConfiguration }
    private let storedConfiguration: UISceneConfiguration
    // /documentation/UIKit/UISceneSession/persistentIdentifier (iOS 13.0+)
    open var persistentIdentifier: String { storedPersistentIdentifier }
    private let storedPersistentIdentifier: String
    // /documentation/UIKit/UISceneSession/scene (iOS 13.0+)
    open weak internal(set) var scene: UIScene?
    // /documentation/UIKit/UISceneSession/userInfo (iOS 13.0+)
    open var userInfo: [String: Any]?

    /// A session as UIKit makes one for a new scene.
    @_spi(Simulation) public static func simulated(role: UISceneSession.Role = .windowApplication) -> UISceneSession {
        UISceneSession(
            role: role, configuration: UISceneConfiguration(name: "Default Configuration", sessionRole: role))
    }
}

@available(iOS 13.0, *)
extension UISceneSession {
    // /documentation/UIKit/UISceneSession/Role-swift.struct (iOS 13.0+)
    /// Constants that indicate the possible roles for a scene.
    public struct Role: Hashable, Equatable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        // /documentation/UIKit/UISceneSession/Role-swift.struct/windowApplication (iOS 13.0+)
        public static let windowApplication = Role(rawValue: "UIWindowSceneSessionRoleApplication")
    }
}

// /documentation/UIKit/UISceneConfiguration (iOS 13.0+)
/// Information about the objects and storyboard for UIKit to use when creating a particular scene.
@available(iOS 13.0, *)
@MainActor
open class UISceneConfiguration: NSObject {
    // /documentation/UIKit/UISceneConfiguration/init(name:sessionRole:) (iOS 13.0+)
    /// Creates a scene-configuration object with the specified role and app-specific name.
    public init(name: String?, sessionRole: UISceneSession.Role) {
        self.storedName = name
        self.storedRole = sessionRole
        super.init()
    }

    // /documentation/UIKit/UISceneConfiguration/name (iOS 13.0+)
    open var name: String? { storedName }
    private let storedName: String?
    // /documentation/UIKit/UISceneConfiguration/role (iOS 13.0+)
    open var role: UISceneSession.Role { storedRole }
    private let storedRole: UISceneSession.Role
    // /documentation/UIKit/UISceneConfiguration/delegateClass (iOS 13.0+)
    /// The class of the scene delegate object that you want UIKit to create.
    open var delegateClass: AnyClass?
    // /documentation/UIKit/UISceneConfiguration/sceneClass (iOS 13.0+)
    open var sceneClass: AnyClass?
}
