import FlowSyncClient
import Foundation
import UIKit

/// The app: scenes show the to-do list (``SceneDelegate``).
@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
    func application(
        _ application: UIApplication, configurationForConnecting connectingSceneSession: UISceneSession,
        options: UIScene.ConnectionOptions
    ) -> UISceneConfiguration {
        let configuration = UISceneConfiguration(name: "Default", sessionRole: connectingSceneSession.role)
        configuration.delegateClass = SceneDelegate.self
        return configuration
    }
}

/// The app's one FlowSync client, created at first use: point it at your daemon (a host
/// that is not loopback uses TLS). Lists and unsent edits are kept in Caches, so the app
/// starts offline with what it showed last.
enum AppClient {
    static let shared: FlowSyncClient? = {
        var configuration = FlowSyncClient.Configuration(host: "127.0.0.1", port: 7400)
        if let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first {
            configuration.persistence = PersistenceOptions(directory: caches.appendingPathComponent("flowsync").path)
        }
        return try? FlowSyncClient(configuration: configuration)
    }()
}
