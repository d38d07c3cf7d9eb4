import FlowSyncClient
import FlowSyncCore

import struct Foundation.IndexSet  // not all of Foundation: its `Operation` would shadow FlowSyncCore's

// MARK: - Edits with SwiftUI's shapes
//
// `ForEach(…).onMove { offsets, destination in … }` and `.onDelete { offsets in … }` hand
// over offsets into one ForEach's data: one section's rows. These methods take them as
// they come. The rules they follow are on ``ListModel`` ("Edits from the view").

@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
extension ListModel {
    /// Deletes the rows at `offsets` of the section `sectionID`, as shown now: for
    /// SwiftUI's `onDelete`.
    ///
    /// ```swift
    /// ForEach(todos) { TodoRow(todo: $0) }
    ///     .onDelete { _ = try? model.delete(atOffsets: $0, inSection: section.id) }
    /// ```
    ///
    /// The offsets count every row of the section, so the `ForEach` must show them all
    /// (`section.models(as:)` of a section that holds one kind, or each row of
    /// `section.rows`).
    ///
    /// ``snapshot`` shows the deletion before the method returns. The rows are deleted
    /// by ID wherever the replica has them now; one another writer deleted already is
    /// simply gone.
    ///
    /// - Returns: The write's ticket; `nil` for a model without a director, or when
    ///   `offsets` is empty (nothing is written).
    /// - Throws: ``FlowSyncError/invalidEdit(_:)`` when the section is not shown or an
    ///   offset is out of its range, or what the director's edits throw
    ///   (``FlowSyncError/closed``, a failed list). Nothing changes then.
    /// - Complexity: O(k) for k offsets, plus the write.
    @discardableResult
    public func delete(atOffsets offsets: IndexSet, inSection sectionID: String) throws(FlowSyncError) -> WriteTicket? {
        let operations: [Operation]
        do {
            operations = try OffsetEdits.delete(atOffsets: Array(offsets), inSection: sectionID, of: snapshot.director)
        } catch {
            throw .invalidEdit(error)
        }
        return try write(operations)
    }

    /// Moves the rows at `offsets` of the section `sectionID` to `destination`, as
    /// shown now: for SwiftUI's `onMove`.
    ///
    /// ```swift
    /// ForEach(todos) { TodoRow(todo: $0) }
    ///     .onMove { _ = try? model.move(fromOffsets: $0, toOffset: $1, inSection: section.id) }
    /// ```
    ///
    /// `destination` is an offset in the section *before* the move, as SwiftUI gives
    /// it (and as SwiftUI's `MutableCollection.move(fromOffsets:toOffset:)` reads it): the moved rows end up,
    /// in their order, between the rows shown at `destination - 1` and `destination`.
    /// The offsets count every row of the section (see
    /// ``delete(atOffsets:inSection:)``).
    ///
    /// ``snapshot`` shows the move before the method returns. The write names the moved
    /// rows by ID and their place by the neighbours they were dropped between, so it
    /// lands there whatever arrived meanwhile.
    ///
    /// - Returns: The write's ticket; `nil` for a model without a director, or when the
    ///   rows are dropped where they are (nothing is written).
    /// - Throws: ``FlowSyncError/invalidEdit(_:)`` when the section is not shown, an
    ///   offset is out of range, or the replica no longer has a moved row (another
    ///   writer deleted it: SwiftUI animates it back, then the deletion arrives).
    ///   Nothing changes then.
    /// - Complexity: O(n + k·n) for k moved rows in a section of n rows (SwiftUI
    ///   moves one row at a time), plus the write.
    @discardableResult
    public func move(
        fromOffsets offsets: IndexSet, toOffset destination: Int, inSection sectionID: String
    ) throws(FlowSyncError) -> WriteTicket? {
        let operations: [Operation]
        do {
            operations = try OffsetEdits.move(
                fromOffsets: Array(offsets), toOffset: destination, inSection: sectionID, of: snapshot.director)
        } catch {
            throw .invalidEdit(error)
        }
        return try write(operations)
    }

    /// Runs `body`, which edits the director (an add, an update, any edit of its API),
    /// and shows the result before returning, as the model's own edits do: for a button
    /// that adds a row, say, so it appears in the same frame.
    ///
    /// ```swift
    /// Button("Add") {
    ///     _ = try? model.write { try $0.section(id: "today")?.add(model: Todo(id: UUID().uuidString, title: "New")) }
    /// }
    /// ```
    ///
    /// Indices in `body` mean the director's state, which may be ahead of
    /// ``snapshot``: address rows and sections by ID there (offsets from the view go
    /// through ``move(fromOffsets:toOffset:inSection:)`` and
    /// ``delete(atOffsets:inSection:)``).
    ///
    /// - Returns: What `body` returned; `nil` without running it for a model without a
    ///   director.
    /// - Throws: What `body` throws; nothing is shown then.
    @discardableResult
    public func write(_ body: (ListDirector) throws -> WriteTicket?) rethrows -> WriteTicket? {
        guard let director, let ticket = try body(director) else { return nil }
        show(ticket, of: director)
        return ticket
    }

    /// Writes `operations`, built on ``snapshot``, and shows the result at once.
    private func write(_ operations: [Operation]) throws(FlowSyncError) -> WriteTicket? {
        guard !operations.isEmpty else { return nil }
        guard let director else {
            // A preview: only what the model shows changes.
            var state = snapshot.director
            do {
                _ = try state.apply(operations)
            } catch {
                throw .invalidEdit(error)
            }
            snapshot = snapshot.replacing(director: state)
            return nil
        }
        // Built on what the model shows; the replica re-expresses it by identity in
        // its own state (rule 1).
        let ticket = try director.submit(operations, on: snapshot)
        show(ticket, of: director)
        return ticket
    }

    /// Shows the replica's state right after `ticket`'s write (rules 2 and 3), and
    /// keeps its pending count current until the write is answered (rule 5).
    private func show(_ ticket: WriteTicket, of director: ListDirector) {
        // Every change the model has not received up to the write's echo is in this
        // state. A batch that lands between the write and this read is in it too: it
        // is shown a little early, and its own change, after the echo, shows the same
        // state again (never a step back).
        echoes.showedWrite(seq: ticket.seq)
        snapshot = director.snapshot
        Task { [weak self] in
            _ = try? await ticket.committed()
            self?.refreshUnchangedList()
        }
    }

    /// Takes the replica's pending count, version and origin when its list is the one
    /// shown: an answer that changes nothing visible (the server committed the write as
    /// shown) is delivered as no change, which would leave ``snapshot`` claiming the
    /// write is pending.
    private func refreshUnchangedList() {
        guard let director else { return }
        let now = director.snapshot
        // The digest decides, as the SDK does between two views: O(1).
        guard now.director.digest == snapshot.director.digest, now.director.rowCount == snapshot.director.rowCount,
            now.director.sections.count == snapshot.director.sections.count
        else { return }
        snapshot = now
    }
}

/// Turns SwiftUI's offsets, which mean one section of the list as shown, into
/// operations on that state that name rows by ID.
///
/// Pure and platform-neutral: the offsets are checked here, against `shown`, so an
/// edit of a row the user did not see is refused before anything is written.
enum OffsetEdits {
    /// A `removeRows` of the rows at `offsets` of section `sectionID` in `shown`, by
    /// ID; no operation for no offsets.
    ///
    /// - Throws: ``MutationError`` (`unknownSection`, `indexOutOfRange`).
    static func delete(
        atOffsets offsets: [Int], inSection sectionID: String, of shown: Director
    ) throws(MutationError) -> [Operation] {
        let rows = try section(sectionID, of: shown).rows
        var ids: [RowRef] = []
        ids.reserveCapacity(offsets.count)
        for offset in offsets {
            guard rows.indices.contains(offset) else {
                throw MutationError(
                    opIndex: 0, reason: .indexOutOfRange,
                    message: "offset \(offset) not in 0..<\(rows.count) of section \"\(sectionID)\"")
            }
            ids.append(.id(rows[offset].id))
        }
        return ids.isEmpty ? [] : [.removeRows(ids)]
    }

    /// `moveRow` operations, applied in order to `shown`, that leave section
    /// `sectionID` as SwiftUI's `move(fromOffsets: offsets, toOffset: destination)` on
    /// its rows would: the moved rows in their order, between the rows shown at
    /// `destination - 1` and `destination`. One operation per moved row; none when the
    /// order does not change.
    ///
    /// Each operation names its row by ID and its place by index in the state the
    /// previous ones leave (the protocol's sequential semantics), chosen so that
    /// anchored in `shown` (``Director/anchor(_:)``: a place is "after the nearest
    /// surviving predecessor", "at the start" or "at the end") the rows stay one block
    /// wherever the replica has moved on:
    /// - a block dropped at the end: each row in turn goes to the end;
    /// - otherwise the first row goes after the row shown before the drop point (or to
    ///   the start), and each next one after the one before it.
    ///
    /// - Throws: ``MutationError`` (`unknownSection`, `indexOutOfRange`).
    static func move(
        fromOffsets offsets: [Int], toOffset destination: Int, inSection sectionID: String, of shown: Director
    ) throws(MutationError) -> [Operation] {
        let rows = try section(sectionID, of: shown).rows
        guard destination >= 0 && destination <= rows.count else {
            throw MutationError(
                opIndex: 0, reason: .indexOutOfRange,
                message: "destination \(destination) not in 0...\(rows.count) of section \"\(sectionID)\"")
        }
        let moved = Set(offsets)
        let sources = moved.sorted()
        for offset in sources where !rows.indices.contains(offset) {
            throw MutationError(
                opIndex: 0, reason: .indexOutOfRange,
                message: "offset \(offset) not in 0..<\(rows.count) of section \"\(sectionID)\"")
        }
        // The rows the block lands between: the nearest unmoved ones before and from
        // `destination` (`nil`: the start, the end).
        let before = (0..<destination).reversed().first { !moved.contains($0) }
        let after = (destination..<rows.count).first { !moved.contains($0) }
        // Unchanged when every moved row already sits in one block between them.
        let lower = before.map { $0 + 1 } ?? 0, upper = after ?? rows.count
        guard !sources.isEmpty, sources != Array(lower..<upper) else { return [] }
        var order = rows.map(\.id)
        var operations: [Operation] = []
        var previous = before.map { order[$0] }
        for id in sources.map({ order[$0] }) {
            order.remove(at: order.firstIndex(of: id)!)
            let to: Int
            if after == nil {
                to = order.count  // "at the end", whatever the replica appended meanwhile
            } else {
                to = previous.map { order.firstIndex(of: $0)! + 1 } ?? 0
            }
            order.insert(id, at: to)
            operations.append(.moveRow(.id(id), toSection: .id(sectionID), at: to))
            previous = id
        }
        return operations
    }

    private static func section(_ id: String, of shown: Director) throws(MutationError) -> Section {
        guard let section = shown.section(id: id) else {
            throw MutationError(opIndex: 0, reason: .unknownSection, message: "no section \"\(id)\" is shown")
        }
        return section
    }
}
