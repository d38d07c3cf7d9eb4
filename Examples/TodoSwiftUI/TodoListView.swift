import FlowSyncClient
import FlowSyncUI
import SwiftUI

/// The list: a text field to add, one `Section` per section of the live list, tap to
/// mark done, swipe to delete, Edit to drag. `onMove` and `onDelete` hand their offsets to
/// the `ListModel`, which writes them through the list and shows them before returning,
/// as SwiftUI requires (docs/SDK.md, "SwiftUI").
struct TodoListView: View {
    let store: TodoStore
    @State private var newTitle = ""
    @Environment(\.scenePhase) private var scenePhase

    var body: some View {
        NavigationStack {
            List {
                SwiftUI.Section {
                    HStack {
                        TextField("New to-do", text: $newTitle)
                        Button("Add") {
                            store.add(title: newTitle)
                            newTitle = ""
                        }
                    }
                }
                ForEach(store.list.sections) { section in
                    // `Section` alone would also name FlowSyncCore's Section.
                    SwiftUI.Section {
                        // Every row of a section is a to-do, so the offsets SwiftUI gives
                        // count the section's rows, as the model expects.
                        ForEach(Self.items(in: section)) { item in
                            TodoRow(item: item) { store.toggle(item) }
                        }
                        .onMove { _ = try? store.list.move(fromOffsets: $0, toOffset: $1, inSection: section.id) }
                        .onDelete { _ = try? store.list.delete(atOffsets: $0, inSection: section.id) }
                    } header: {
                        Text(Self.title(of: section))
                    }
                }
            }
            .overlay {
                if !store.list.isLoaded {
                    ProgressView("Connecting")
                }
            }
            .navigationTitle("To do")
            .toolbar {
                SyncBadgeView(status: store.status, list: store.list.snapshot)
                EditButton()
            }
        }
        .task { await store.followStatus() }
        // A phone must not hold a socket in the background (docs/SDK.md, "Mobile lifecycle").
        .onChange(of: scenePhase) { _, phase in
            if phase == .background { store.client.pause() }
            if phase == .active { store.client.resume() }
        }
    }

    static func items(in section: SectionSnapshot) -> [TodoItem] {
        (try? section.models(as: TodoItem.self)) ?? []
    }

    static func title(of section: SectionSnapshot) -> String {
        (try? section.header(as: String.self)) ?? section.id
    }
}

/// One to-do: tap to mark it done.
struct TodoRow: View {
    let item: TodoItem
    let toggle: @MainActor () -> Void

    var body: some View {
        Button(action: toggle) {
            HStack {
                Image(systemName: item.done ? "checkmark.circle.fill" : "circle")
                Text(item.title)
                Spacer()
            }
        }
    }
}
