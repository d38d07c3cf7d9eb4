import FlowSyncClient
import UIKit

/// Puts the to-do list in the window, on one client for the app's life.
final class SceneDelegate: UIResponder, UIWindowSceneDelegate {
    var window: UIWindow?

    func scene(
        _ scene: UIScene, willConnectTo session: UISceneSession, options connectionOptions: UIScene.ConnectionOptions
    ) {
        guard let windowScene = scene as? UIWindowScene, let client = AppClient.shared else { return }
        let window = UIWindow(windowScene: windowScene)
        window.rootViewController = UINavigationController(rootViewController: TodoListViewController(client: client))
        window.makeKeyAndVisible()
        self.window = window
    }
}
