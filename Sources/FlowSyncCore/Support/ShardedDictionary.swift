/// A hash map whose copies share storage shard by shard, so that editing a copy of a
/// large map costs about as much as editing a small one.
///
/// ## Why not `Dictionary`
/// A `Dictionary` is copy-on-write as a whole: the first edit of a copy copies every
/// entry. A ``Director`` keeps two maps as large as the list (row ID → section, and in
/// each section row ID → chunk), and a client keeps the snapshot it last delivered (so
/// does a table's data source) while the next edit is made. With `Dictionary`, each such
/// edit copied both maps: 2 ms at 100,000 rows, O(n) per edit.
///
/// ## Structure
/// Entries live in 2^k shards, each a `Dictionary` of about 64…256 entries (the top k
/// bits of a key's hash choose its shard), in an array. A `Dictionary` is itself one
/// reference to a copy-on-write buffer, so a copy of the map shares every shard; an
/// edit of a copy copies the array (O(m) references for m shards, the same per-chunk
/// copy-on-write `RowList` uses), which leaves every shard shared, then copies the one
/// shard it touches when that shard's dictionary finds its buffer shared.
///
/// A class per shard would add a pointer to chase per lookup: measured 2.2× a plain
/// `Dictionary`'s cost for 20,000 inserts and removals in a map of 100,000 entries,
/// against 1.4–1.8× for this layout (the first hop to the shard's buffer misses the
/// cache in a large map; a single `Dictionary` has its header in cache).
///
/// ## Costs, for n entries and m ≈ n/128 shards
/// - lookup, insert, update, remove: O(1) expected (one extra hash to pick the shard).
/// - a copy: O(1); the first edit of a copy: O(m) pointers plus one shard (≤ 256·2 entries).
/// - growth doubles the shard count when the average shard passes 256 entries: O(n)
///   then, amortized O(1) per insert. The shard count never shrinks (a map that shrank
///   keeps small shards, which cost only their table slot).
/// - `==`: O(n).
///
/// Not guaranteed: iteration order (as `Dictionary`).
struct ShardedDictionary<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The shards; `shards.count` is a power of two.
    private var shards: [[Key: Value]]
    /// log2(shards.count): how many top bits of a hash choose a shard.
    private var shift: Int
    /// The number of entries.
    private(set) var count: Int

    /// Average entries per shard past which the shard count doubles.
    static var maxAverageShard: Int { 256 }

    /// An empty map (one shard).
    init() {
        shards = [[:]]
        shift = 0
        count = 0
    }

    /// The value for `key`, or `nil`; assigning `nil` removes the entry.
    subscript(key: Key) -> Value? {
        get { shards[shardIndex(of: key)][key] }
        set {
            // `shards[s]` is mutated in place through the array's accessor: the array
            // is copied first if shared (references only), then the shard's dictionary
            // copies its own buffer if that is still shared with another map.
            let s = shardIndex(of: key)
            if let newValue {
                if shards[s].updateValue(newValue, forKey: key) == nil {
                    count += 1
                    if count > shards.count * Self.maxAverageShard { rebuild(shift: shift + 1) }
                }
            } else if shards[s].removeValue(forKey: key) != nil {
                count -= 1
            }
        }
    }

    /// Makes room for `minimumCapacity` entries without further growth of the shard table.
    /// - Complexity: O(n) when the shard count changes.
    mutating func reserveCapacity(_ minimumCapacity: Int) {
        var newShift = shift
        while minimumCapacity > (1 << newShift) * Self.maxAverageShard / 2 { newShift += 1 }
        if newShift != shift { rebuild(shift: newShift) }
    }

    /// Every entry, shard by shard (no particular order).
    /// - Complexity: O(n + m).
    func forEach(_ body: (Key, Value) throws -> Void) rethrows {
        for shard in shards {
            for (key, value) in shard { try body(key, value) }
        }
    }

    /// The address of each shard's storage buffer, in order: lets a test check that an
    /// edit of a copy did not copy shards it did not touch (an unchanged address means a
    /// shared buffer). A `Dictionary` is a single reference to its buffer; an empty one
    /// points at the shared empty singleton.
    var storageIdentities: [UInt] {
        shards.map { shard in withUnsafeBytes(of: shard) { $0.load(as: UInt.self) } }
    }

    // MARK: Shards

    /// The shard `key` belongs in: the top `shift` bits of its hash. The top bits, not
    /// the bottom ones: a shard's own `Dictionary` places its keys by the bottom bits
    /// (of a per-buffer seeded hash), which the choice of shard then leaves evenly spread.
    @inline(__always)
    private func shardIndex(of key: Key) -> Int {
        guard shift > 0 else { return 0 }
        return Int(truncatingIfNeeded: UInt(bitPattern: key.hashValue) >> UInt(UInt.bitWidth - shift))
    }

    /// Redistributes every entry over 2^`newShift` shards. Growth doubles the shard count
    /// when the average shard passes ``maxAverageShard``: O(n) then, amortized O(1) per
    /// insert, the same as a `Dictionary`'s own growth.
    private mutating func rebuild(shift newShift: Int) {
        var buckets = [[Key: Value]](repeating: [:], count: 1 << newShift)
        let expected = Swift.max(1, count >> newShift)
        for b in buckets.indices { buckets[b].reserveCapacity(expected + expected / 4) }
        let bits = UInt(UInt.bitWidth - newShift)
        for shard in shards {
            for (key, value) in shard {
                buckets[Int(truncatingIfNeeded: UInt(bitPattern: key.hashValue) >> bits)][key] = value
            }
        }
        shards = buckets
        shift = newShift
    }
}

extension ShardedDictionary: ExpressibleByDictionaryLiteral {
    init(dictionaryLiteral elements: (Key, Value)...) {
        self.init()
        reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }
}

extension ShardedDictionary: Equatable where Value: Equatable {
    /// Equal when both hold the same keys with equal values (shard layout is ignored).
    static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var equal = true
        // The dictionary's own forEach: it is no Sequence, so there is no for-in.
        // swift-format-ignore: ReplaceForEachWithForLoop
        lhs.forEach { key, value in
            if equal, rhs[key] != value { equal = false }
        }
        return equal
    }
}
