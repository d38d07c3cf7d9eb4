import FlowSyncClient
import FlowSyncCore

/// A header or footer adapter, and how the presenter decodes its values.
public struct SupplementaryRegistration<Adapter> {
    /// The adapter.
    public let adapter: Adapter
    /// Turns a header's (or footer's) JSON into the adapter's value.
    public let decode: ([UInt8]) throws -> Any

    public init(adapter: Adapter, decode: @escaping ([UInt8]) throws -> Any) {
        self.adapter = adapter
        self.decode = decode
    }
}

/// A section's header or footer as the view shows it, with the adapter that shows it.
public struct PresentedSupplementary<Adapter> {
    /// The adapter and its decoder.
    public let registration: SupplementaryRegistration<Adapter>
    /// The decoded value.
    public let value: Any
    /// The section's index in what the view shows.
    public let section: Int
    /// The section's ID.
    public let sectionID: String
    /// Header or footer.
    public let element: SupplementaryUpdate.Element
}

extension ListPresenter {
    /// Section `index`'s header (or footer) with the adapter registered for it, decoded
    /// once per value; `nil` when there is no adapter, no header, no such section, or the
    /// value does not decode (the view then shows none).
    public func supplementary<A>(
        _ element: SupplementaryUpdate.Element, inSection index: Int,
        registrations: [SupplementaryUpdate.Element: SupplementaryRegistration<A>]
    ) -> PresentedSupplementary<A>? {
        guard let registration = registrations[element], let sectionID = section(at: index)?.id,
            case .success(let value)? = supplementaryValue(element, inSection: index, decode: registration.decode)
        else {
            return nil
        }
        return PresentedSupplementary(
            registration: registration, value: value, section: index, sectionID: sectionID, element: element)
    }

    /// The rows at `paths` that have an adapter, grouped by adapter (`key` says which
    /// adapters are the same), in the order each adapter first appears: what a prefetch
    /// hands each adapter.
    public func items(
        at paths: [RowPath], groupedBy key: (Adapter) -> ObjectIdentifier
    ) -> [(adapter: Adapter, items: [PresentedRow<Adapter>])] {
        var position: [ObjectIdentifier: Int] = [:]
        var groups: [(adapter: Adapter, items: [PresentedRow<Adapter>])] = []
        for path in paths {
            guard let item = item(at: path), let adapter = item.adapter else { continue }
            let id = key(adapter)
            if let index = position[id] {
                groups[index].items.append(item)
            } else {
                position[id] = groups.count
                groups.append((adapter, [item]))
            }
        }
        return groups
    }
}

extension PresentedRow {
    /// The models of type `M` among `items`, with where the view shows each: what an
    /// adapter's prefetch event receives (rows that did not decode are left out).
    public static func models<M>(of items: [PresentedRow], as type: M.Type) -> (models: [M], paths: [RowPath]) {
        var models: [M] = []
        var paths: [RowPath] = []
        for item in items {
            guard let model = item.model(as: M.self) else { continue }
            models.append(model)
            paths.append(item.path)
        }
        return (models, paths)
    }
}

extension SupplementaryRefresh {
    /// What refreshing one header or footer takes.
    public enum Step: Hashable, Sendable {
        /// The section's layout changes (its header or footer appeared or went): reload it.
        case reloadSection(Int)
        /// Only the content changed: refresh the visible view in place (if the view cannot,
        /// reload the section).
        case refreshInPlace(section: Int, element: SupplementaryUpdate.Element)
    }

    /// The steps for `refreshes`: each changed element once, a section to reload at most
    /// once.
    public static func steps(_ refreshes: [SupplementaryRefresh]) -> [Step] {
        var steps: [Step] = []
        for refresh in refreshes {
            var reloads = false
            for element in [SupplementaryUpdate.Element.header, .footer] {
                let (changed, presenceChanged) = refresh.changed(element)
                guard changed else { continue }
                if presenceChanged {
                    reloads = true
                } else {
                    steps.append(.refreshInPlace(section: refresh.section, element: element))
                }
            }
            if reloads {
                steps.removeAll { if case .refreshInPlace(refresh.section, _) = $0 { true } else { false } }
                steps.append(.reloadSection(refresh.section))
            }
        }
        return steps
    }
}
