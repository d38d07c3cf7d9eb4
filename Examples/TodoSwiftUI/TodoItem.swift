import FlowSyncClient

/// One to-do: a row of kind "todo" in the list "todo", shared with the UIKit example and
/// any other client (the JSON is `{"done":…,"id":…,"title":…}`).
struct TodoItem: FlowModel, Equatable {
    static let flowKind = "todo"
    var id: String
    var title: String
    var done = false

    /// The list's name.
    static let list = "todo"
    /// The section new to-dos go to.
    static let inbox = "inbox"
}
