import FlowSyncClient

/// One to-do: a row of kind "todo" in the list "todo" (shared with the SwiftUI example,
/// the CLI and any other client).
struct TodoItem: FlowModel, Equatable {
    static let flowKind = "todo"
    var id: String
    var title: String
    var done = false
}

/// A section's header: its title, as a JSON string (what `flowsync add-section --header
/// '"Today"'` writes), which a TableDirector without a header adapter shows as the title.
enum TodoSections {
    static let inbox = "inbox"
    static let done = "done"
}
