import FlowSyncClient
import FlowSyncCore
import Observation

/// A list for SwiftUI: an `@Observable` model whose ``snapshot`` follows a
/// ``ListDirector``, with edit methods shaped like SwiftUI's `onMove` and `onDelete`
/// that write back through the director. Views that read it are redrawn on every
/// visible change.
///
/// ```swift
/// struct TodosView: View {
///     @State private var model = ListModel(director: client.director("todo"))
///     var body: some View {
///         List {
///             ForEach(model.sections) { section in
///                 SwiftUI.Section {   // `Section` alone also names FlowSyncCore's
///                     ForEach((try? section.models(as: Todo.self)) ?? []) { Text($0.title) }
///                         .onMove { _ = try? model.move(fromOffsets: $0, toOffset: $1, inSection: section.id) }
///                         .onDelete { _ = try? model.delete(atOffsets: $0, inSection: section.id) }
///                 } header: {
///                     Text(section.id)
///                 }
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
///
/// ## Edits from the view
///
/// ``move(fromOffsets:toOffset:inSection:)`` and ``delete(atOffsets:inSection:)``
/// (in `ListModel+Editing.swift`) follow these rules:
///
/// 1. **Offsets mean what the model shows**, ``snapshot``, which may be behind the
///    director (its next change may be queued for the main actor when the finger
///    lifts). They are turned into row IDs there and written with
///    `ListDirector.submit(_:on:)`, which re-expresses them by identity in the replica
///    as it is: a remote change in between never moves or deletes another row.
/// 2. **The edit shows before the call returns**: SwiftUI expects its data to change
///    inside `onMove`/`onDelete`, or it animates the row back. The model then shows the
///    director's own state (its replica with the edit applied, rebased by the SDK over
///    whatever had arrived), so it is never a second, possibly different, rebase.
/// 3. **The changes the model has not received yet are already shown**: every change
///    delivered up to the write's own (`.local(seq)`) is in that state, so they are
///    skipped (``ListModelEchoFilter``). The edit neither applies twice nor flickers
///    back; the changes after it (remote batches rebased by the SDK over the pending
///    write, or the `.rollback` if the server refuses it) are shown as usual.
/// 4. An edit that does not apply to what the model shows (an offset out of range) or
///    that conflicts with the replica (another writer deleted the dragged row) throws
///    and changes nothing: SwiftUI animates the row back, and the model shows the other
///    writer's change when it arrives.
/// 5. **The pending count follows the model's writes.** When the server commits a
///    write as it was shown, the director delivers no change (nothing visible moved),
///    so the model takes the replica's ``ListSnapshot/pendingWrites``, version and
///    ``ListSnapshot/isFromDisk`` itself when each of its writes is answered, if the
///    list is the one it shows. The server sends a writer the batch with its write before
///    the acknowledgment, so the replica has dropped the write by then; when it does not
///    (a subscription paused by back-pressure gets the acknowledgment first), and for
///    writes made on the director directly rather than through the model (``write(_:)``),
///    the count is refreshed only with the next change. The SDK delivers no change when
///    only the pending count or `isFromDisk` moves (a resume with nothing new): a UI
///    reading them from a change's snapshot sees them late.
///
/// Edits of other kinds (a button that adds a row) go through ``write(_:)``, which runs
/// them on the director and shows them at once in the same way.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ListModel {
    /// The list as shown now: the last change received, or, right after an edit made
    /// through the model, the director's state with that edit (ahead of ``lastChange``
    /// until the edit's own change arrives).
    public internal(set) var snapshot: ListSnapshot
    /// The last change received from the director, `nil` before the first. Right after
    /// an edit made through the model, ``snapshot`` is ahead of it (rule 3 above).
    public private(set) var lastChange: ListChange?
    /// Why the list stopped (the server refused it), `nil` while it runs or after the
    /// client closed normally.
    public private(set) var failure: FlowSyncError?

    /// The list the model follows and writes to; `nil` for a model made from a
    /// snapshot (a preview), whose edits change only what it shows.
    @ObservationIgnored public let director: ListDirector?

    /// Which received changes the model already shows (rule 3).
    @ObservationIgnored var echoes = ListModelEchoFilter()

    /// The task that follows the director, cancelled when the model goes away. A `let`
    /// of a Sendable box, so the (nonisolated) `deinit` may touch it: an `isolated
    /// deinit` needs iOS 18.4 / macOS 15.4.
    @ObservationIgnored private let follower = Follower()

    /// A model that shows `snapshot` until ``apply(_:)`` is called (for previews and
    /// tests, or to drive it from an observer of your own). Its edits change only what
    /// it shows: there is no director to write to.
    public init(snapshot: ListSnapshot) {
        self.snapshot = snapshot
        self.director = nil
    }

    /// A model that follows `director` from its current state until the client closes
    /// or the model is released, and writes its edits through it.
    ///
    /// It shows the director's state at once (a list loaded from disk, or already
    /// followed elsewhere, is there in the first frame), then every change of
    /// `director.changes(includingCurrent: true)`, whose first element is that state or
    /// a later one.
    public convenience init(director: ListDirector) {
        self.init(director: director, following: true)
    }

    /// With `following` false the model writes through `director` but receives changes
    /// only through ``apply(_:)``: tests feed them one by one, to put the model behind
    /// the director on purpose.
    init(director: ListDirector, following: Bool) {
        // Read before the stream starts, so its first change is this state or a later
        // one: the model never steps back.
        self.snapshot = director.snapshot
        self.director = director
        guard following else { return }
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

    /// Receives `change`, the director's next change: shows its final snapshot, unless
    /// the model already shows it (an edit made through the model is shown ahead of
    /// the changes before it; see rule 3 above).
    ///
    /// A model that writes through its director must receive every change of that
    /// director, in order, from before its first edit (a `changes` stream, or an
    /// observer that is not silenced with `withoutNotifying`): the model waits for its
    /// writes' own changes.
    public func apply(_ change: ListChange) {
        lastChange = change
        switch echoes.received(change.cause) {
        case .show: snapshot = change.snapshot
        case .skip: break
        }
    }

    /// The sections, in order.
    public var sections: [SectionSnapshot] { snapshot.sections }
    /// True once the server's first snapshot arrived.
    public var isLoaded: Bool { snapshot.isLoaded }
}

/// Holds the following task of a ``ListModel``.
private final class Follower: @unchecked Sendable {
    // Written once, on the main actor, in `ListModel.init(director:following:)`; read in
    // `deinit`, after every other reference is gone. Nothing else touches it.
    var task: Task<Void, Never>?
}
