import FlowSyncClient

/// One to-do: a row of kind "todo" in the list "todo", the same in the UIKit and the
/// SwiftUI example and for any other client (the JSON is `{"done":…,"id":…,"title":…}`).
struct TodoItem: FlowModel, Equatable {
    static let flowKind = "todo"
    var id: String
    var title: String
    var done = false

    /// The list's name.
    static let list = "todo"
    /// The section new to-dos go to.
    static let inbox = "inbox"
    /// A section for what is done, when an app wants one.
    static let done = "done"
}
