// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// What a ``TableHeaderFooterAdapter``'s events receive.
@MainActor
public struct TableHeaderFooterContext<Value, View: UITableViewHeaderFooterView> {
    /// The header's (or footer's) value, decoded from its JSON once per version.
    public let value: Value
    /// The view, for the events that have one.
    public let view: View?
    /// The section's index in what the table shows.
    public let section: Int
    /// The section's ID.
    public let sectionID: String
    /// Header or footer.
    public let element: SupplementaryUpdate.Element
    /// The director that routed the event.
    public unowned let director: TableDirector
}

/// Shows sections' headers (or footers) in header/footer views of one class, their JSON
/// decoded as `Value`: the typed header views FlowKit's `TableHeaderFooterAdapter`
/// gives.
///
/// ```swift
/// director.register(header: TableHeaderFooterAdapter<TeamHeader, TeamHeaderView> { adapter in
///     adapter.events.dequeue = { ctx in ctx.view?.show(ctx.value) }
///     adapter.sizing = .fixed(44)
/// })
/// ```
///
/// A section whose header changes gets its visible header view reconfigured in place
/// (``Events/dequeue`` again), not its section reloaded: its cells stay as they are. A
/// section without a header, or whose header does not decode as `Value`, shows none.
@MainActor
public final class TableHeaderFooterAdapter<Value: Decodable, View: UITableViewHeaderFooterView> {
    /// The context every event receives.
    public typealias Context = TableHeaderFooterContext<Value, View>

    /// The adapter's events.
    public struct Events {
        /// Configures a dequeued view for its section, and reconfigures a visible one
        /// whose header changed.
        public var dequeue: ((Context) -> Void)?
        /// The view is about to appear.
        public var willDisplay: ((Context) -> Void)?
        /// The view left the screen.
        public var endDisplay: ((Context) -> Void)?
        /// Its height, when it depends on the value (overrides ``TableHeaderFooterAdapter/sizing``).
        public var height: ((Context) -> CGFloat)?
        /// Its estimated height, when it depends on the value (overrides the estimate of
        /// ``TableHeaderFooterAdapter/sizing``).
        public var estimatedHeight: ((Context) -> CGFloat)?

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
    /// How tall the views are (default: the table's section header/footer height).
    public var sizing: RowSizing = .default

    /// An adapter decoding headers as `Value` into `View`s, configured by `configure`.
    public init(reuseIdentifier: String? = nil, _ configure: ((TableHeaderFooterAdapter) -> Void)? = nil) {
        self.reuseIdentifier = reuseIdentifier ?? String(describing: View.self)
        configure?(self)
    }
}

/// A header/footer adapter with its types erased.
@MainActor
protocol TableSupplementaryRouting: AnyObject {
    var reuseIdentifier: String { get }
    var viewClass: UITableViewHeaderFooterView.Type { get }
    var sizing: RowSizing { get }
    /// The presenter's decoder for this adapter's values (see ``TableCellAdapter``).
    var valueDecoder: ([UInt8]) throws -> Any { get }
    /// Configures `view` for `value`; `false` when the value is not this adapter's type.
    func configure(
        _ view: UITableViewHeaderFooterView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, director: TableDirector
    ) -> Bool
    func display(
        _ view: UITableViewHeaderFooterView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, ended: Bool, director: TableDirector)
    func height(
        value: Any, section: Int, sectionID: String, element: SupplementaryUpdate.Element, estimated: Bool,
        director: TableDirector
    ) -> CGFloat?
}

extension TableHeaderFooterAdapter: TableSupplementaryRouting {
    var viewClass: UITableViewHeaderFooterView.Type { View.self }

    var valueDecoder: ([UInt8]) throws -> Any {
        let decoder = JSONDecoder()
        return { bytes in try decoder.decode(Value.self, from: Data(bytes)) }
    }

    private func context(
        _ value: Any, _ view: UITableViewHeaderFooterView?, _ section: Int, _ sectionID: String,
        _ element: SupplementaryUpdate.Element, _ director: TableDirector
    ) -> Context? {
        guard let value = value as? Value else { return nil }
        return Context(
            value: value, view: view as? View, section: section, sectionID: sectionID, element: element,
            director: director)
    }

    func configure(
        _ view: UITableViewHeaderFooterView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, director: TableDirector
    ) -> Bool {
        guard let ctx = context(value, view, section, sectionID, element, director) else { return false }
        events.dequeue?(ctx)
        return true
    }

    func display(
        _ view: UITableViewHeaderFooterView, value: Any, section: Int, sectionID: String,
        element: SupplementaryUpdate.Element, ended: Bool, director: TableDirector
    ) {
        guard let handler = ended ? events.endDisplay : events.willDisplay,
            let ctx = context(value, view, section, sectionID, element, director)
        else { return }
        handler(ctx)
    }

    func height(
        value: Any, section: Int, sectionID: String, element: SupplementaryUpdate.Element, estimated: Bool,
        director: TableDirector
    ) -> CGFloat? {
        guard let handler = estimated ? events.estimatedHeight : events.height,
            let ctx = context(value, nil, section, sectionID, element, director)
        else { return nil }
        return handler(ctx)
    }
}
#endif
