import FlowSyncClient
import FlowSyncUI
import Foundation
import Observation

/// The app's one client and its live list, shared by the views.
@MainActor
@Observable
final class TodoStore {
    /// Where the daemon runs. The simulator reaches the Mac's loopback; a device needs the
    /// Mac's address, and TLS for any host that is not loopback (docs/SDK.md).
    static let host = "127.0.0.1"
    static let port = 7400

    @ObservationIgnored let client: FlowSyncClient
    /// The list "todo", for SwiftUI: `onMove`/`onDelete` write through it.
    @ObservationIgnored let list: ListModel
    /// The connection's status, for the offline badge.
    private(set) var status: ConnectionStatus = .connecting

    init() {
        var configuration = FlowSyncClient.Configuration(host: Self.host, port: Self.port)
        // Offline: the list and unsent edits survive a relaunch (docs/SDK.md, "Offline").
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask)[0]
        configuration.persistence = PersistenceOptions(directory: caches.appendingPathComponent("FlowSync").path)
        let client: FlowSyncClient
        do {
            client = try FlowSyncClient(configuration: configuration)
        } catch {
            // The directory is unusable (another process has it): run without persistence.
            configuration.persistence = nil
            client = try! FlowSyncClient(configuration: configuration)  // only persistence throws
        }
        self.client = client
        list = ListModel(director: client.director(TodoItem.list))
    }

    /// Follows the connection's status until the client closes (run it from `.task`).
    func followStatus() async {
        for await status in client.statusUpdates {
            self.status = status
        }
    }

    // MARK: Edits that are not gestures on a row

    /// Adds a to-do at the top of the inbox, creating the inbox if the list has none.
    /// Shown in the same frame (`ListModel.write`).
    func add(title: String) {
        let item = TodoItem(id: UUID().uuidString, title: title)
        _ = try? list.write { director in
            if let inbox = director.section(id: TodoItem.inbox) {
                return try inbox.add(model: item, at: 0)
            }
            return try director.add(section: NewSection(id: TodoItem.inbox, header: "Inbox", models: [item]), at: 0)
        }
    }

    /// Marks a to-do done or not done (an update of that row, wherever it is now).
    func toggle(_ item: TodoItem) {
        var changed = item
        changed.done.toggle()
        _ = try? list.write { try $0.update(model: changed) }
    }
}
