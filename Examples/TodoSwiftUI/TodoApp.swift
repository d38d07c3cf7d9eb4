import FlowSyncClient
import FlowSyncUI
import SwiftUI

/// The app: one window showing the live list "todo" (the same list, model and sections as
/// the UIKit example, so both apps and the CLI can edit it at once).
@main
struct TodoApp: App {
    @State private var store = TodoStore()

    var body: some Scene {
        WindowGroup {
            TodoListView(store: store)
        }
    }
}
