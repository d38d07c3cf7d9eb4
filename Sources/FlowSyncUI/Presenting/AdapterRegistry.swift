import FlowSyncCore

/// Which adapter shows each row kind, and how its model is decoded: FlowKit's
/// "register an adapter per model type", keyed by the row's ``Row/kind`` (a model's
/// `flowKind`).
///
/// Generic over the adapter so the routing is platform-neutral and tested on Linux;
/// ``TableDirector`` and ``CollectionDirector`` register their typed cell adapters here.
/// A row whose kind has no adapter gets none: the director shows its documented
/// fallback for it, and never traps.
public struct AdapterRegistry<Adapter> {
    /// One registration.
    public struct Registration {
        /// The adapter.
        public let adapter: Adapter
        /// Turns a row of this kind into the adapter's model (JSON, for `FlowModel`s).
        public let decode: (Row) throws -> Any
    }

    private var byKind: [String: Registration] = [:]

    public init() {}

    /// Shows rows of `kind` with `adapter`, decoding them with `decode`. A second
    /// registration for the same kind replaces the first.
    public mutating func register(_ adapter: Adapter, forKind kind: String, decode: @escaping (Row) throws -> Any) {
        byKind[kind] = Registration(adapter: adapter, decode: decode)
    }

    /// Stops showing rows of `kind` with an adapter.
    public mutating func unregister(kind: String) {
        byKind[kind] = nil
    }

    /// The registration for `kind`, if any.
    ///
    /// - Complexity: O(1).
    public func registration(forKind kind: String) -> Registration? { byKind[kind] }

    /// The registered kinds, sorted.
    public var kinds: [String] { byKind.keys.sorted() }
}
