import Foundation

// /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct (iOS 13.0+; UIKit's Swift overlay)
/// A representation of the state of the data in a view at a specific point in time.
///
/// STAND-IN: where UIKit raises an exception for a misuse (appending items with no
/// section, duplicate identifiers, unknown identifiers) the snapshot ignores the call and
/// keeps UIKit's message; the diffable data source records it as a failure of its view
/// when the snapshot is applied.
@available(iOS 13.0, *)
public struct NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>: Sendable
where
    SectionIdentifierType: Hashable, SectionIdentifierType: Sendable, ItemIdentifierType: Hashable,
    ItemIdentifierType: Sendable
{
    struct Section: Sendable {
        var identifier: SectionIdentifierType
        var items: [ItemIdentifierType]
    }

    var storedSections: [Section] = []
    var sectionOfItem: [ItemIdentifierType: SectionIdentifierType] = [:]
    var storedReloadedItems: [ItemIdentifierType] = []
    var storedReconfiguredItems: [ItemIdentifierType] = []
    var storedReloadedSections: [SectionIdentifierType] = []
    /// UIKit's exception messages for misuses, in order.
    var misuses: [String] = []

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/init() (iOS 13.0+)
    /// Creates an empty snapshot.
    public init() {}

    // MARK: Counts and identifiers

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/numberOfItems
    public var numberOfItems: Int { storedSections.reduce(0) { $0 + $1.items.count } }
    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/numberOfSections
    public var numberOfSections: Int { storedSections.count }
    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/sectionIdentifiers
    public var sectionIdentifiers: [SectionIdentifierType] { storedSections.map(\.identifier) }
    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/itemIdentifiers
    public var itemIdentifiers: [ItemIdentifierType] { storedSections.flatMap(\.items) }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/numberOfItems(inSection:)
    public func numberOfItems(inSection identifier: SectionIdentifierType) -> Int {
        sectionIndex(identifier).map { storedSections[$0].items.count } ?? 0
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/itemIdentifiers(inSection:)
    public func itemIdentifiers(inSection identifier: SectionIdentifierType) -> [ItemIdentifierType] {
        sectionIndex(identifier).map { storedSections[$0].items } ?? []
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/sectionIdentifier(containingItem:)
    public func sectionIdentifier(containingItem identifier: ItemIdentifierType) -> SectionIdentifierType? {
        sectionOfItem[identifier]
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/indexOfItem(_:)
    public func indexOfItem(_ identifier: ItemIdentifierType) -> Int? {
        var offset = 0
        for section in storedSections {
            if let index = section.items.firstIndex(of: identifier) { return offset + index }
            offset += section.items.count
        }
        return nil
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/indexOfSection(_:)
    public func indexOfSection(_ identifier: SectionIdentifierType) -> Int? {
        sectionIndex(identifier)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reloadedItemIdentifiers (iOS 15.0+)
    @available(iOS 15.0, *)
    public var reloadedItemIdentifiers: [ItemIdentifierType] { storedReloadedItems }
    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reconfiguredItemIdentifiers (iOS 15.0+)
    @available(iOS 15.0, *)
    public var reconfiguredItemIdentifiers: [ItemIdentifierType] { storedReconfiguredItems }
    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reloadedSectionIdentifiers (iOS 15.0+)
    @available(iOS 15.0, *)
    public var reloadedSectionIdentifiers: [SectionIdentifierType] { storedReloadedSections }

    // MARK: Items

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/appendItems(_:toSection:)
    /// Adds the items with the specified identifiers to the specified section of the
    /// snapshot. "If no value is provided, the items are appended to the last section."
    public mutating func appendItems(
        _ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType? = nil
    ) {
        guard !storedSections.isEmpty else {
            misuses.append("There are currently no sections in the data source. Please add a section first.")
            return
        }
        let index: Int
        if let sectionIdentifier {
            guard let found = sectionIndex(sectionIdentifier) else {
                misuses.append(
                    "Invalid section identifier \(sectionIdentifier) specified: the section does not exist in the snapshot."
                )
                return
            }
            index = found
        } else {
            index = storedSections.count - 1
        }
        guard let fresh = uniqueNew(identifiers) else { return }
        storedSections[index].items += fresh
        for item in fresh { sectionOfItem[item] = storedSections[index].identifier }
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/insertItems(_:beforeItem:)
    public mutating func insertItems(
        _ identifiers: [ItemIdentifierType], beforeItem beforeIdentifier: ItemIdentifierType
    ) {
        insert(identifiers, near: beforeIdentifier, after: false)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/insertItems(_:afterItem:)
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], afterItem afterIdentifier: ItemIdentifierType)
    {
        insert(identifiers, near: afterIdentifier, after: true)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/deleteItems(_:)
    public mutating func deleteItems(_ identifiers: [ItemIdentifierType]) {
        for item in identifiers {
            guard let section = sectionOfItem[item], let s = sectionIndex(section) else { continue }
            storedSections[s].items.removeAll { $0 == item }
            sectionOfItem[item] = nil
        }
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/deleteAllItems()
    /// Deletes all of the items (and sections) from the snapshot.
    public mutating func deleteAllItems() {
        storedSections = []
        sectionOfItem = [:]
        storedReloadedItems = []
        storedReconfiguredItems = []
        storedReloadedSections = []
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/moveItem(_:beforeItem:)
    public mutating func moveItem(_ identifier: ItemIdentifierType, beforeItem toIdentifier: ItemIdentifierType) {
        move(identifier, near: toIdentifier, after: false)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/moveItem(_:afterItem:)
    public mutating func moveItem(_ identifier: ItemIdentifierType, afterItem toIdentifier: ItemIdentifierType) {
        move(identifier, near: toIdentifier, after: true)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reloadItems(_:)
    /// Reloads the data within the specified items in the snapshot.
    public mutating func reloadItems(_ identifiers: [ItemIdentifierType]) {
        for item in identifiers {
            guard sectionOfItem[item] != nil else {
                misuses.append("Attempted to reload item identifier that does not exist in the snapshot: \(item)")
                continue
            }
            if !storedReloadedItems.contains(item) { storedReloadedItems.append(item) }
        }
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reconfigureItems(_:) (iOS 15.0+)
    /// Updates the data for the items you specify in the snapshot, preserving the existing cells for the items.
    @available(iOS 15.0, *)
    public mutating func reconfigureItems(_ identifiers: [ItemIdentifierType]) {
        for item in identifiers {
            guard sectionOfItem[item] != nil else {
                misuses.append("Attempted to reconfigure item identifier that does not exist in the snapshot: \(item)")
                continue
            }
            if !storedReconfiguredItems.contains(item) { storedReconfiguredItems.append(item) }
        }
    }

    // MARK: Sections

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/appendSections(_:)
    /// Adds the sections with the specified identifiers to the snapshot.
    public mutating func appendSections(_ identifiers: [SectionIdentifierType]) {
        guard let fresh = uniqueNewSections(identifiers) else { return }
        storedSections += fresh.map { Section(identifier: $0, items: []) }
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/insertSections(_:beforeSection:)
    public mutating func insertSections(
        _ identifiers: [SectionIdentifierType], beforeSection toIdentifier: SectionIdentifierType
    ) {
        guard let index = sectionIndex(toIdentifier) else {
            misuses.append(
                "Invalid parameter not satisfying: section identifier \(toIdentifier) does not exist in the snapshot")
            return
        }
        guard let fresh = uniqueNewSections(identifiers) else { return }
        storedSections.insert(contentsOf: fresh.map { Section(identifier: $0, items: []) }, at: index)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/insertSections(_:afterSection:)
    public mutating func insertSections(
        _ identifiers: [SectionIdentifierType], afterSection toIdentifier: SectionIdentifierType
    ) {
        guard let index = sectionIndex(toIdentifier) else {
            misuses.append(
                "Invalid parameter not satisfying: section identifier \(toIdentifier) does not exist in the snapshot")
            return
        }
        guard let fresh = uniqueNewSections(identifiers) else { return }
        storedSections.insert(contentsOf: fresh.map { Section(identifier: $0, items: []) }, at: index + 1)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/deleteSections(_:)
    /// Deletes the sections with the specified identifiers (and their items) from the snapshot.
    public mutating func deleteSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            guard let index = sectionIndex(identifier) else { continue }
            for item in storedSections[index].items { sectionOfItem[item] = nil }
            storedSections.remove(at: index)
        }
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/moveSection(_:beforeSection:)
    public mutating func moveSection(
        _ identifier: SectionIdentifierType, beforeSection toIdentifier: SectionIdentifierType
    ) {
        moveSection(identifier, near: toIdentifier, after: false)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/moveSection(_:afterSection:)
    public mutating func moveSection(
        _ identifier: SectionIdentifierType, afterSection toIdentifier: SectionIdentifierType
    ) {
        moveSection(identifier, near: toIdentifier, after: true)
    }

    // /documentation/UIKit/NSDiffableDataSourceSnapshot-swift.struct/reloadSections(_:)
    /// Reloads the data within the specified sections of the snapshot.
    public mutating func reloadSections(_ identifiers: [SectionIdentifierType]) {
        for identifier in identifiers {
            guard sectionIndex(identifier) != nil else {
                misuses.append(
                    "Attempted to reload section identifier that does not exist in the snapshot: \(identifier)")
                continue
            }
            if !storedReloadedSections.contains(identifier) { storedReloadedSections.append(identifier) }
        }
    }

    // MARK: Helpers

    func sectionIndex(_ identifier: SectionIdentifierType) -> Int? {
        storedSections.firstIndex { $0.identifier == identifier }
    }

    private mutating func uniqueNew(_ identifiers: [ItemIdentifierType]) -> [ItemIdentifierType]? {
        var seen = Set<ItemIdentifierType>()
        var duplicates: [ItemIdentifierType] = []
        for item in identifiers where !seen.insert(item).inserted || sectionOfItem[item] != nil {
            duplicates.append(item)
        }
        guard duplicates.isEmpty else {
            misuses.append(
                "Fatal: supplied item identifiers are not unique. Duplicate identifiers: {(\(duplicates.map { "\($0)" }.joined(separator: ", ")))}"
            )
            return nil
        }
        return identifiers
    }

    private mutating func uniqueNewSections(_ identifiers: [SectionIdentifierType]) -> [SectionIdentifierType]? {
        var seen = Set<SectionIdentifierType>()
        var duplicates: [SectionIdentifierType] = []
        for section in identifiers where !seen.insert(section).inserted || sectionIndex(section) != nil {
            duplicates.append(section)
        }
        guard duplicates.isEmpty else {
            misuses.append(
                "Fatal: supplied section identifiers are not unique. Duplicate identifiers: {(\(duplicates.map { "\($0)" }.joined(separator: ", ")))}"
            )
            return nil
        }
        return identifiers
    }

    private mutating func insert(_ identifiers: [ItemIdentifierType], near anchor: ItemIdentifierType, after: Bool) {
        guard let section = sectionOfItem[anchor], let s = sectionIndex(section),
            let index = storedSections[s].items.firstIndex(of: anchor)
        else {
            misuses.append("Invalid parameter not satisfying: item identifier \(anchor) does not exist in the snapshot")
            return
        }
        guard let fresh = uniqueNew(identifiers) else { return }
        storedSections[s].items.insert(contentsOf: fresh, at: after ? index + 1 : index)
        for item in fresh { sectionOfItem[item] = section }
    }

    private mutating func move(_ identifier: ItemIdentifierType, near anchor: ItemIdentifierType, after: Bool) {
        guard identifier != anchor, let from = sectionOfItem[identifier], let fromIndex = sectionIndex(from),
            sectionOfItem[anchor] != nil
        else {
            if identifier != anchor {
                misuses.append(
                    "Invalid parameter not satisfying: item identifiers \(identifier) and \(anchor) must exist in the snapshot"
                )
            }
            return
        }
        storedSections[fromIndex].items.removeAll { $0 == identifier }
        let to = sectionOfItem[anchor]!
        let toIndex = sectionIndex(to)!
        let anchorIndex = storedSections[toIndex].items.firstIndex(of: anchor)!
        storedSections[toIndex].items.insert(identifier, at: after ? anchorIndex + 1 : anchorIndex)
        sectionOfItem[identifier] = to
    }

    private mutating func moveSection(
        _ identifier: SectionIdentifierType, near anchor: SectionIdentifierType, after: Bool
    ) {
        guard identifier != anchor, let fromIndex = sectionIndex(identifier), sectionIndex(anchor) != nil else {
            if identifier != anchor {
                misuses.append(
                    "Invalid parameter not satisfying: section identifiers \(identifier) and \(anchor) must exist in the snapshot"
                )
            }
            return
        }
        let moving = storedSections.remove(at: fromIndex)
        let anchorIndex = sectionIndex(anchor)!
        storedSections.insert(moving, at: after ? anchorIndex + 1 : anchorIndex)
    }

    /// Moves an item to an index path (the view's reorder), keeping everything else.
    mutating func moveItem(from source: IndexPath, to destination: IndexPath) {
        guard source.section < storedSections.count, source.item < storedSections[source.section].items.count,
            destination.section < storedSections.count
        else { return }
        let item = storedSections[source.section].items.remove(at: source.item)
        let index = min(destination.item, storedSections[destination.section].items.count)
        storedSections[destination.section].items.insert(item, at: index)
        sectionOfItem[item] = storedSections[destination.section].identifier
    }
}
