import FlowSyncCore

/// Decoded models, one per row *version*: a row is decoded the first time a cell needs
/// it, and again only when its content changes (its ``Row/contentHash``), not on every
/// `cellForRowAt` as a scroll asks again and again.
///
/// Keys are row IDs (unique in a list); an entry is valid while the row's content hash
/// is the one it was decoded from. A failure is cached like a success, so a row that
/// does not decode costs one attempt per version, not one per scroll.
///
/// **Bounded.** The cache keeps at most about `2 × capacity` entries in two generations:
/// new entries go to the young one; when it is full, it becomes the old one and the old
/// one is dropped; a hit in the old generation moves back to the young one. Rows a
/// screen keeps showing stay; rows scrolled past long ago go. No per-access list upkeep,
/// so a hit costs one dictionary lookup.
///
/// Not thread-safe: used on the presenter's thread (the main thread for UIKit).
public final class ModelCache {
    /// One decoded value and the content it was decoded from.
    struct Entry {
        let contentHash: UInt64
        let value: Result<Any, ModelDecodingFailure>
    }

    /// Entries per generation.
    public let capacity: Int
    private var young: [String: Entry] = [:]
    private var old: [String: Entry] = [:]
    /// How many decodes ran (hits do not count): what tests and benchmarks read.
    public private(set) var decodes = 0
    /// Whether the last ``value(for:key:decode:)`` decoded (a miss), rather than
    /// answering from the cache.
    public private(set) var lastLookupDecoded = false

    /// A cache of about `capacity` to `2 × capacity` decoded models (default 1,024
    /// per generation: several screens of rows).
    public init(capacity: Int = 1_024) {
        precondition(capacity > 0, "a ModelCache needs a positive capacity")
        self.capacity = capacity
    }

    /// The value decoded from `row`'s current content under `key` (default: the row's
    /// ID), decoding it with `decode` on a miss.
    ///
    /// - Complexity: O(1) on a hit; a decode on a miss.
    public func value(
        for row: Row, key: String? = nil, decode: (Row) throws -> Any
    ) -> Result<Any, ModelDecodingFailure> {
        let key = key ?? row.id
        lastLookupDecoded = false
        if let entry = young[key], entry.contentHash == row.contentHash { return entry.value }
        if let entry = old[key], entry.contentHash == row.contentHash {
            store(entry, key)
            return entry.value
        }
        decodes += 1
        lastLookupDecoded = true
        let value: Result<Any, ModelDecodingFailure>
        do {
            value = .success(try decode(row))
        } catch {
            value = .failure(ModelDecodingFailure(rowID: row.id, kind: row.kind, detail: "\(error)"))
        }
        store(Entry(contentHash: row.contentHash, value: value), key)
        return value
    }

    /// Forgets every entry (a decoder was replaced).
    public func removeAll() {
        young.removeAll()
        old.removeAll()
    }

    /// The number of entries held (both generations; an ID may be in both).
    public var count: Int { young.count + old.count }

    private func store(_ entry: Entry, _ key: String) {
        if young.count >= capacity, young[key] == nil {
            // Age: the young generation becomes the old one, and the old one goes.
            old = young
            young = [:]
            young.reserveCapacity(capacity)
        }
        young[key] = entry
    }
}

/// A row whose payload did not decode as its adapter's model type: the row is shown
/// with the director's fallback, and never traps.
public struct ModelDecodingFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The row's ID.
    public let rowID: String
    /// The row's kind.
    public let kind: String
    /// What the decoder said.
    public let detail: String

    public var description: String { "row \(rowID) of kind \(kind) does not decode: \(detail)" }
}
