import FlowSyncCore

/// What ``ListUpdateApplier`` drives: a table or collection view (through
/// ``TableViewUpdateTarget`` and ``CollectionViewUpdateTarget`` on UIKit platforms), or a
/// test double.
///
/// The calls mirror UIKit's batch-update API, with FlowSync's ``RowPath`` in place of
/// `IndexPath` (a conformance maps one to the other). Indices follow UIKit's batch
/// rules: deletes, reloads and move sources refer to the state before the batch;
/// inserts and move destinations to the state after it.
///
/// Threading: the applier calls the target on the thread it is called on. UIKit targets
/// are main-actor isolated and check that at run time.
public protocol ListUpdateTarget {
    /// Whether batch updates are worth animating: the view is in a window. When false
    /// the applier swaps the data and calls ``reloadData()`` instead (a view that is not
    /// on screen may not have asked its data source yet, and then would check the first
    /// batch against counts it never saw).
    var isOnScreen: Bool { get }

    /// Forgets everything shown and asks the data source again.
    func reloadData()

    /// Runs `updates` synchronously as one batch; the view then checks every section's
    /// row count against what its data source reports right after `updates` returns.
    /// `updates` switches the data source to the batch's data first, then calls the
    /// methods below.
    func performBatchUpdates(_ updates: @escaping () -> Void)

    /// Deletes sections at indices of the state before the batch.
    func deleteSections(_ sections: [Int])
    /// Inserts sections at indices of the state after the batch.
    func insertSections(_ sections: [Int])
    /// Moves a section from an index before the batch to one after it.
    func moveSection(_ section: Int, toSection newSection: Int)
    /// Deletes rows at paths of the state before the batch.
    func deleteRows(at paths: [RowPath])
    /// Inserts rows at paths of the state after the batch.
    func insertRows(at paths: [RowPath])
    /// Moves a row from a path before the batch to one after it (possibly to another
    /// section).
    func moveRow(at path: RowPath, to newPath: RowPath)
    /// Reloads rows (same ID, new content) at paths of the state before the batch.
    func reloadRows(at paths: [RowPath])
    /// Refreshes the headers and footers of sections whose content changed under the
    /// same section ID, at indices of the state after the batch. Each section appears
    /// once, with both of its elements when both changed: a view that reloads a section
    /// to refresh its header (the default UIKit targets, without a director) then
    /// reloads it once, never twice in one batch (what UIKit does with a section
    /// reloaded twice in one batch is not documented).
    ///
    /// The applier sends these in a batch of their own, with no row or section changes:
    /// a section reload in the same batch as row changes of that section is an
    /// "Invalid update". A ``TableDirector`` or ``CollectionDirector`` target
    /// reconfigures the visible header and footer views in place instead, so the
    /// section's cells are not reloaded; the batch then only lets the view measure
    /// them again.
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh])
}

/// One section whose header, footer or both changed content in one stage: what a
/// ``ListUpdateTarget`` refreshes, once per section per batch.
public struct SupplementaryRefresh: Hashable, Sendable, CustomStringConvertible {
    /// The section's index after the batch.
    public var section: Int
    /// Whether the header changed.
    public var header: Bool
    /// Whether the footer changed.
    public var footer: Bool
    /// Whether the section gained or lost its header (rather than only changed it): the
    /// view's layout changes then, and a reconfigure in place is not enough.
    public var headerPresenceChanged: Bool
    /// Whether the section gained or lost its footer.
    public var footerPresenceChanged: Bool

    public init(
        section: Int, header: Bool, footer: Bool, headerPresenceChanged: Bool = false,
        footerPresenceChanged: Bool = false
    ) {
        self.section = section
        self.header = header
        self.footer = footer
        self.headerPresenceChanged = headerPresenceChanged
        self.footerPresenceChanged = footerPresenceChanged
    }

    /// One refresh per section, in the order the sections first appear in `updates`.
    ///
    /// - Parameters:
    ///   - before: The list before the stage (to tell a header that appears or goes
    ///     from one that changes); `nil` when unknown (no presence change is reported).
    ///   - after: The list after the stage.
    /// - Complexity: O(k) for k updates.
    public static func grouping(
        _ updates: [SupplementaryUpdate], before: Director? = nil, after: Director? = nil
    ) -> [SupplementaryRefresh] {
        var position: [Int: Int] = [:]
        var result: [SupplementaryRefresh] = []
        for update in updates {
            let index: Int
            if let known = position[update.section] {
                index = known
            } else {
                index = result.count
                position[update.section] = index
                result.append(SupplementaryRefresh(section: update.section, header: false, footer: false))
            }
            // Did the element exist before? The section by ID in the state before.
            var presenceChanged = false
            if let before, let after, update.section < after.sections.count {
                let old = before.section(id: after.sections[update.section].id)
                let had = update.element == .header ? old?.header != nil : old?.footer != nil
                presenceChanged = had != (update.value != nil)
            }
            switch update.element {
            case .header:
                result[index].header = true
                result[index].headerPresenceChanged = result[index].headerPresenceChanged || presenceChanged
            case .footer:
                result[index].footer = true
                result[index].footerPresenceChanged = result[index].footerPresenceChanged || presenceChanged
            }
        }
        return result
    }

    /// Whether `element` changed here, and whether it appeared or went.
    public func changed(_ element: SupplementaryUpdate.Element) -> (changed: Bool, presenceChanged: Bool) {
        element == .header ? (header, headerPresenceChanged) : (footer, footerPresenceChanged)
    }

    public var description: String {
        "section \(section)" + (header ? (headerPresenceChanged ? " header±" : " header") : "")
            + (footer ? (footerPresenceChanged ? " footer±" : " footer") : "")
    }
}
