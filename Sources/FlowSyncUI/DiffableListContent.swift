import FlowSyncClient
import FlowSyncCore

/// What a diffable data source (`UICollectionViewDiffableDataSource<String, String>`)
/// needs for one ``ListChange``: every section ID with its row IDs, in order, and the
/// items and sections whose content changed under the same ID.
///
/// Row IDs are unique in a whole list (not just in a section) and section IDs are
/// unique too, so they are the item and section identifiers as they are; the diffable
/// data source computes the animation itself. What it cannot see is a row (or a
/// header) that kept its ID and changed content: those are ``reconfiguredItems`` and
/// ``reloadedSections``.
///
/// Platform-neutral, so it is tested on Linux; ``ListDiffableAdapter`` turns it into an
/// `NSDiffableDataSourceSnapshot`.
public struct DiffableListContent: Hashable, Sendable {
    /// One section's identifier and its items' identifiers, in order.
    public struct SectionContent: Hashable, Sendable {
        public var id: String
        public var itemIDs: [String]
    }

    /// Every section, in order.
    public var sections: [SectionContent]
    /// Rows that were in the list before the change and are still there with other
    /// content (to `reconfigureItems`).
    public var reconfiguredItems: [String]
    /// Sections that were there before and are still there with another header or
    /// footer (to `reloadSections`).
    public var reloadedSections: [String]

    /// The content after `change`.
    ///
    /// - Complexity: O(n) for the n rows of the list (a diffable snapshot holds every
    ///   identifier), plus O(k) for the k changes.
    public init(change: ListChange) {
        self.init(snapshot: change.snapshot)
        let before = change.previous.director
        let after = change.snapshot.director
        // Candidates are the rows and sections the changeset touched; a row that is
        // deleted and inserted again (it left a deleted section, say) keeps its item
        // identity in a diffable data source, so it counts when its content differs.
        var items: [String] = []
        var seenItems = Set<String>()
        func consider(_ id: String) {
            guard seenItems.insert(id).inserted,
                let old = before.rowPath(id: id), let new = after.rowPath(id: id),
                !before[old].hasSameContent(as: after[new])
            else { return }
            items.append(id)
        }
        var sectionIDs: [String] = []
        var seenSections = Set<String>()
        func consider(section id: String) {
            guard seenSections.insert(id).inserted,
                let old = before.section(id: id), let new = after.section(id: id),
                old.header != new.header || old.footer != new.footer
            else { return }
            sectionIDs.append(id)
        }
        for stage in change.changeset.stages {
            for update in stage.rowUpdates { consider(update.row.id) }
            for insert in stage.rowInserts { consider(insert.row.id) }
            for insert in stage.sectionInserts {
                consider(section: insert.section.id)
                for row in insert.section.rows { consider(row.id) }
            }
            for update in stage.supplementaryUpdates where update.section < after.sections.count {
                consider(section: after.sections[update.section].id)
            }
        }
        reconfiguredItems = items
        reloadedSections = sectionIDs
    }

    /// The content of `snapshot`, with nothing to reconfigure (a first load).
    public init(snapshot: ListSnapshot) {
        sections = snapshot.director.sections.map { SectionContent(id: $0.id, itemIDs: $0.rows.map(\.id)) }
        reconfiguredItems = []
        reloadedSections = []
    }
}
