/// The rows of a ``Section``: an ordered collection of ``Row``s stored as a list of
/// chunks, so that an edit at any position costs about the same as one at the end.
///
/// ## Structure
/// Rows live in chunks of 64…256 rows (a lone chunk may hold fewer); each chunk is a
/// reference-counted buffer shared between copies and copied only when one copy edits
/// it (copy-on-write per chunk). A Fenwick tree over the chunks' row counts
/// (`ChunkCounts`) finds the chunk holding row `i` in O(log m), m ≤ n/64 + 1 chunks.
/// A ``Director`` also turns on an **ID index** (row ID → chunk), which finds a row's
/// position in O(256 + log m) (``firstIndex(ofID:)``).
///
/// ## Costs, for n rows (m ≤ n/64 + 1 chunks)
/// - `self[i]`, get and set: O(log m).
/// - insert or remove one row at any position: O(log m) plus a move of at most 256
///   rows inside one chunk; when the chunk splits or merges (at most once per ~64 edits
///   of that chunk), O(m) more to re-index the chunk table — amortized O(m/64) integer
///   writes, about 500 per pass (three passes) at the 2,000,000-row default limit (microseconds).
/// - a run of k rows inserted at one position (`insert(contentsOf:at:)` with k > 256):
///   O(k + m); removed through `removeSubrange`: O(k·(log m + 256)).
/// - iteration (`for row in rows`, `map`, `Array(rows)`): O(n), chunk by chunk.
/// - a copy: O(1); the first edit of a copy then copies the chunk table (O(m) pointers),
///   the edited chunk (≤ 256 rows) and, when the ID index is on, the index's shard
///   table (O(n/128) pointers) and one shard (``ShardedDictionary``): O(m) in all, not O(n).
///
/// ## Not guaranteed
/// - Generic algorithms that walk indices (`firstIndex(where:)` from the standard
///   library, `index(of:)`, `indices.map { rows[$0] }`) pay O(log m) per step: iterate
///   instead, or use the overloads this type provides (``map(_:)``,
///   ``firstIndex(where:)``).
/// - The ID index assumes unique row IDs (a director guarantees it). With duplicate IDs,
///   ``firstIndex(ofID:)`` may miss a row.
/// - `withUnsafeBufferPointer` / contiguous storage is not available.
public struct RowList: Sendable {
    /// The chunks, in order; never empty ones.
    @usableFromInline var chunks: [RowChunk]
    /// Row counts per chunk, for positional lookups.
    var counts: ChunkCounts
    /// `chunks[i].serial`, kept beside the chunks so re-indexing after a split walks one
    /// contiguous array instead of chasing a pointer per chunk (a cache miss each: at
    /// 1,000,000 rows that was most of the cost of a split).
    var serials: [Int32]
    /// Chunk serial → position in `chunks`, or -1 for a free serial. Serials (not
    /// positions) are what the ID index stores, so inserting a chunk does not touch it.
    var positions: [Int32]
    /// Serials of `positions` not in use, reused before new ones are minted (keeps
    /// `positions` at most as long as the largest chunk count seen).
    var freeSerials: [Int32]
    /// Row ID → serial of the chunk holding it; `nil` when the index is off. Sharded, so
    /// an edit of a copy copies one shard of it, not all of it.
    var idIndex: ShardedDictionary<String, Int32>?
    /// The number of rows.
    public internal(set) var count: Int

    /// Most rows per chunk; a chunk that grows past it splits in two halves.
    static let maxChunk = 256
    /// A chunk below this merges with (or borrows from) a neighbour.
    static let minChunk = 64
    /// Two chunks merge only if they fit in this, so a merged chunk does not split again
    /// at once (hysteresis between splitting and merging).
    static let mergeLimit = 192
    /// Size of the chunks a bulk build produces (`init`, long `insert(contentsOf:at:)`).
    static let buildChunk = 128

    /// An empty list.
    public init() {
        chunks = []
        counts = ChunkCounts([])
        serials = []
        positions = []
        freeSerials = []
        idIndex = nil
        count = 0
    }

    /// A list holding `rows`, in order.
    /// - Complexity: O(rows).
    public init<S: Sequence>(_ rows: S) where S.Element == Row {
        self.init()
        let all = Array(rows)
        guard !all.isEmpty else { return }
        chunks = Self.makeChunks(all[...], serials: { self.allocateSerial() })
        count = all.count
        counts = ChunkCounts(chunks.map { $0.rows.count })
        serials = chunks.map(\.serial)
        reindexPositions(from: 0)
    }

    // MARK: Chunk table

    /// Splits `rows` into chunks of 128…256 rows (fewer only when there are fewer rows).
    static func makeChunks(_ rows: ArraySlice<Row>, serials: () -> Int32) -> [RowChunk] {
        let pieces = Swift.max(1, rows.count / buildChunk)
        var result: [RowChunk] = []
        result.reserveCapacity(pieces)
        var start = rows.startIndex
        for p in 0..<pieces {
            // Even sizes: the first `rows.count % pieces` pieces get one more row.
            let size = rows.count / pieces + (p < rows.count % pieces ? 1 : 0)
            result.append(RowChunk(serial: serials(), rows: Array(rows[start..<(start + size)])))
            start += size
        }
        return result
    }

    mutating func allocateSerial() -> Int32 {
        if let serial = freeSerials.popLast() { return serial }
        positions.append(-1)
        return Int32(positions.count - 1)
    }

    mutating func freeSerial(_ serial: Int32) {
        positions[Int(serial)] = -1
        freeSerials.append(serial)
    }

    /// Replaces chunks `range` with `newChunks` and brings the count tree, the serial
    /// column and the serial → position table up to date.
    /// - Complexity: O(m) over contiguous integer arrays.
    mutating func replaceChunks(_ range: Range<Int>, with newChunks: [RowChunk]) {
        chunks.replaceSubrange(range, with: newChunks)
        serials.replaceSubrange(range, with: newChunks.map(\.serial))
        counts.replaceChunks(range, with: newChunks.map { $0.rows.count })
        reindexPositions(from: range.lowerBound)
    }

    /// Rewrites the serial → position table for chunks `start...`.
    mutating func reindexPositions(from start: Int) {
        var position = start
        while position < serials.count {
            positions[Int(serials[position])] = Int32(position)
            position += 1
        }
    }

    /// Chunk `c`, copied first if another list shares it (copy-on-write per chunk).
    @inline(__always)
    mutating func makeChunkUnique(_ c: Int) {
        if !isKnownUniquelyReferenced(&chunks[c]) {
            chunks[c] = RowChunk(serial: chunks[c].serial, rows: chunks[c].rows)
        }
    }

    /// The chunk and offset of row `index`, for `0 <= index < count`.
    @inline(__always)
    func locate(_ index: Int) -> (chunk: Int, offset: Int) {
        counts.locate(index)
    }

    /// Identities of the storage chunks, in order: lets a test check that an edit did
    /// not copy storage it did not need to (an unchanged identity means a shared buffer).
    public var storageIdentities: [ObjectIdentifier] { chunks.map(ObjectIdentifier.init) }
}

/// One chunk of a ``RowList``.
///
/// `@unchecked Sendable`: a chunk is mutated only through a list that holds the only
/// reference to it (`RowList.makeChunkUnique`), so a chunk reachable from two lists —
/// or two threads — is never written.
@usableFromInline
final class RowChunk: @unchecked Sendable {
    /// Identifies the chunk within its list's ID index; kept by a copy-on-write clone,
    /// which takes the original's place.
    let serial: Int32
    // Unchecked: every write goes through a list method that made this chunk unique
    // and holds no other access to it, so dynamic exclusivity checks (a runtime call
    // per access, ~6% of a large insert) can find nothing.
    @exclusivity(unchecked) var rows: [Row]

    init(serial: Int32, rows: [Row]) {
        self.serial = serial
        self.rows = rows
    }
}
