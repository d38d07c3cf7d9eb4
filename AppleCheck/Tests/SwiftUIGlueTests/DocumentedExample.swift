// swift-format-ignore-file
// (formatted as docs/SDK.md shows it, which a test checks)
// docs/SDK.md's SwiftUI example, compiled against the SwiftUI stand-in. Everything below
// the marker line must be that example exactly: SwiftUIGlueTests checks it.
// ---- docs/SDK.md, "SwiftUI" ----
import FlowSyncClient
import FlowSyncUI
import SwiftUI

struct Todo: FlowModel {
    static let flowKind = "todo"
    var id: String
    var title: String
}

struct TodosView: View {
    @State private var model: ListModel

    init(client: FlowSyncClient) {
        _model = State(initialValue: ListModel(director: client.director("todo")))
    }

    var body: some View {
        List {
            ForEach(model.sections) { section in
                // `Section` alone would also name FlowSyncCore's Section.
                SwiftUI.Section {
                    ForEach((try? section.models(as: Todo.self)) ?? []) { todo in
                        Text(todo.title)
                    }
                    .onMove { _ = try? model.move(fromOffsets: $0, toOffset: $1, inSection: section.id) }
                    .onDelete { _ = try? model.delete(atOffsets: $0, inSection: section.id) }
                } header: {
                    Text((try? section.header(as: String.self)) ?? section.id)
                }
            }
        }
        .overlay { if !model.isLoaded { ProgressView() } }
        .toolbar { EditButton() }
    }
}
