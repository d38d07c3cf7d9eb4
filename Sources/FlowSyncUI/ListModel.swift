import FlowSyncClient
import FlowSyncCore
import Observation

/// A list for SwiftUI: an `@Observable` model whose ``snapshot`` follows a
/// ``ListDirector``. Views that read it are redrawn on every visible change.
///
/// ```swift
/// struct ContactsView: View {
///     @State private var model = ListModel(director: client.director("contacts"))
///     var body: some View {
///         List(model.sections) { section in
///             SwiftUI.Section(section.id) {   // `Section` alone also names FlowSyncCore's
///                 ForEach((try? section.models(as: Contact.self)) ?? []) { Text($0.name) }
///             }
///         }
///     }
/// }
/// ```
///
/// SwiftUI diffs by identity itself, so the model needs no stages: each change's final
/// snapshot is enough. Main-actor isolated, as SwiftUI reads it there. Observation
/// needs iOS 17 / macOS 14 / tvOS 17 / watchOS 10 / visionOS 1 (on iOS 16, use
/// ``ListUpdateApplier`` with UIKit, or `observe` into an `ObservableObject`).
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ListModel {
    /// The list as shown now.
    public private(set) var snapshot: ListSnapshot
    /// The last change applied, `nil` before the first.
    public private(set) var lastChange: ListChange?
    /// Why the list stopped (the server refused it), `nil` while it runs or after the
    /// client closed normally.
    public private(set) var failure: FlowSyncError?

    /// The task that follows the director, cancelled when the model goes away. A `let`
    /// of a Sendable box, so the (nonisolated) `deinit` may touch it: an `isolated
    /// deinit` needs iOS 18.4 / macOS 15.4.
    @ObservationIgnored private let follower = Follower()

    /// A model that shows `snapshot` until ``apply(_:)`` is called (for previews and
    /// tests, or to drive it from an observer of your own).
    public init(snapshot: ListSnapshot) {
        self.snapshot = snapshot
    }

    /// A model that follows `director` from its current state
    /// (`director.changes(includingCurrent: true)`) until the client closes or the model
    /// is released.
    public convenience init(director: ListDirector) {
        self.init(snapshot: ListSnapshot(name: director.name))
        let changes = director.changes(includingCurrent: true)
        follower.task = Task { [weak self] in
            do {
                for try await change in changes {
                    guard let self else { return }
                    self.apply(change)
                }
            } catch {
                self?.failure = error as? FlowSyncError
            }
        }
    }

    deinit {
        follower.task?.cancel()
    }

    /// Shows `change` (its final snapshot).
    public func apply(_ change: ListChange) {
        snapshot = change.snapshot
        lastChange = change
    }

    /// The sections, in order.
    public var sections: [SectionSnapshot] { snapshot.sections }
    /// True once the server's first snapshot arrived.
    public var isLoaded: Bool { snapshot.isLoaded }
}

/// Holds the following task of a ``ListModel``.
private final class Follower: @unchecked Sendable {
    // Written once, on the main actor, in `ListModel.init(director:)`; read in `deinit`,
    // after every other reference is gone. Nothing else touches it.
    var task: Task<Void, Never>?
}
