// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// What a ``CollectionSupplementaryAdapter``'s events receive.
@MainActor
public struct CollectionSupplementaryContext<Value, View: UICollectionReusableView> {
    /// The header's (or footer's) value, decoded from its JSON once per version.
    public let value: Value
    /// The view, for the events that have one.
    public let view: View?
    /// The section's index in what the collection view shows.
    public let section: Int
    /// The section's ID.
    public let sectionID: String
    /// Header or footer.
    public let element: SupplementaryUpdate.Element
    /// The director that routed the event.
    public unowned let director: CollectionDirector
}

/// Shows sections' headers (or footers) as supplementary views of one class, their
/// JSON decoded as `Value` (`UICollectionView.elementKindSectionHeader` / `…Footer`).
/// A header that changes is reconfigured in place in its visible view; the section's
/// items stay as they are.
@MainActor
public final class CollectionSupplementaryAdapter<Value: Decodable, View: UICollectionReusableView> {
    /// The context every event receives.
    public typealias Context = CollectionSupplementaryContext<Value, View>

    /// The adapter's events.
    public struct Events {
        /// Configures a dequeued view, and reconfigures a visible one whose value changed.
        public var dequeue: ((Context) -> Void)?
        /// The view is about to appear.
        public var willDisplay: ((Context) -> Void)?
        /// The view left the screen.
        public var endDisplay: ((Context) -> Void)?
        /// Its size in a flow layout, when it depends on the value (overrides ``CollectionSupplementaryAdapter/sizing``).
        public var referenceSize: ((Context) -> CGSize)?

        public init() {}
    }

    /// The views' reuse identifier (default: the view class's name).
    public let reuseIdentifier: String
    /// The events.
    public var events = Events()
    /// The events, by FlowKit's name for them.
    public var on: Events {
        get { events }
        set { events = newValue }
    }
    /// Its size in a flow layout (default: the layout's header/footer reference size).
    public var sizing: ItemSizing = .default

    /// An adapter decoding headers (or footers) as `Value` into `View`s.
    public init(reuseIdentifier: String? = nil, _ configure: ((CollectionSupplementaryAdapter) -> Void)? = nil) {
        self.reuseIdentifier = reuseIdentifier ?? String(describing: View.self)
        configure?(self)
    }
}

/// A supplementary adapter with its types erased.
@MainActor
protocol CollectionSupplementaryRouting: AnyObject {
    var reuseIdentifier: String { get }
    var viewClass: UICollectionReusableView.Type { get }
    var sizing: ItemSizing { get }
    var valueDecoder: ([UInt8]) throws -> Any { get }
    func configure(
        _ view: UICollectionReusableView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, director: CollectionDirector
    ) -> Bool
    func display(
        _ view: UICollectionReusableView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, ended: Bool, director: CollectionDirector)
    func size(
        value: Any, section: Int, sectionID: String, element: SupplementaryUpdate.Element, director: CollectionDirector
    ) -> CGSize?
}

extension CollectionSupplementaryAdapter: CollectionSupplementaryRouting {
    var viewClass: UICollectionReusableView.Type { View.self }

    var valueDecoder: ([UInt8]) throws -> Any {
        let decoder = JSONDecoder()
        return { bytes in try decoder.decode(Value.self, from: Data(bytes)) }
    }

    private func context(
        _ value: Any, _ view: UICollectionReusableView?, _ section: Int, _ sectionID: String,
        _ element: SupplementaryUpdate.Element, _ director: CollectionDirector
    ) -> Context? {
        guard let value = value as? Value else { return nil }
        return Context(
            value: value, view: view as? View, section: section, sectionID: sectionID, element: element,
            director: director)
    }

    func configure(
        _ view: UICollectionReusableView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, director: CollectionDirector
    ) -> Bool {
        guard let ctx = context(value, view, section, sectionID, element, director) else { return false }
        events.dequeue?(ctx)
        return true
    }

    func display(
        _ view: UICollectionReusableView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, ended: Bool, director: CollectionDirector
    ) {
        guard let handler = ended ? events.endDisplay : events.willDisplay,
            let ctx = context(value, view, section, sectionID, element, director)
        else { return }
        handler(ctx)
    }

    func size(
        value: Any, section: Int, sectionID: String, element: SupplementaryUpdate.Element, director: CollectionDirector
    ) -> CGSize? {
        guard let handler = events.referenceSize, let ctx = context(value, nil, section, sectionID, element, director)
        else { return nil }
        return handler(ctx)
    }
}
#endif
