// The optional ID → position index of a RowList. A Director turns it on for every
// section it holds; a list built elsewhere (a decoded snapshot, a client view) does not
// pay for it.

extension RowList {
    /// True when the ID index is on (see ``turnOnIDIndex()``).
    public var hasIDIndex: Bool { idIndex != nil }

    /// Builds the row ID → chunk index, kept current by every later edit, so that
    /// ``firstIndex(ofID:)`` costs O(256 + log m) instead of O(n). Row IDs must be
    /// unique for the index to be exact.
    /// - Complexity: O(n) once; then O(1) expected per edited row (O(rows moved) when a
    ///   chunk splits or merges, amortized O(1)).
    public mutating func turnOnIDIndex() {
        guard idIndex == nil else { return }
        var index: ShardedDictionary<String, Int32> = [:]
        index.reserveCapacity(count)
        for chunk in chunks {
            for row in chunk.rows { index[row.id] = chunk.serial }
        }
        idIndex = index
    }

    /// The position of the row with ID `id`, if present.
    /// - Complexity: with the ID index, one hash lookup, a scan of one chunk (≤ 256
    ///   rows) and O(log m); without it, O(n).
    public func firstIndex(ofID id: String) -> Int? {
        guard let idIndex else { return firstIndex { $0.id == id } }
        guard let serial = idIndex[id] else { return nil }
        let c = Int(positions[Int(serial)])
        guard c >= 0, let o = chunks[c].rows.firstIndex(where: { $0.id == id }) else { return nil }
        return counts.rows(before: c) + o
    }

    /// True when a row with ID `id` is present.
    /// - Complexity: that of ``firstIndex(ofID:)``.
    public func contains(id: String) -> Bool {
        firstIndex(ofID: id) != nil
    }

    /// Verifies the structure from scratch and traps on a violation: chunk sizes, the
    /// count tree, the serial table and the ID index. For tests; O(n).
    public func checkInvariants() {
        var total = 0
        var seenSerials = Set<Int32>()
        for (position, chunk) in chunks.enumerated() {
            let size = chunk.rows.count
            precondition(
                size >= 1 && size <= Self.maxChunk,
                "Internal inconsistency in RowList: chunk \(position) holds \(size) rows")
            precondition(
                chunks.count == 1 || size >= Self.minChunk,
                "Internal inconsistency in RowList: chunk \(position) of \(chunks.count) holds \(size) < \(Self.minChunk) rows"
            )
            precondition(
                counts.rows(before: position) == total,
                "Internal inconsistency in RowList: count tree before chunk \(position)")
            precondition(
                seenSerials.insert(chunk.serial).inserted,
                "Internal inconsistency in RowList: serial \(chunk.serial) used twice")
            precondition(
                Int(positions[Int(chunk.serial)]) == position,
                "Internal inconsistency in RowList: serial table of chunk \(position)")
            precondition(
                serials[position] == chunk.serial,
                "Internal inconsistency in RowList: serial column of chunk \(position)")
            for (offset, row) in chunk.rows.enumerated() where idIndex != nil {
                precondition(
                    idIndex![row.id] == chunk.serial, "Internal inconsistency in RowList: ID index of row \(row.id)")
                precondition(
                    counts.locate(total + offset) == (position, offset),
                    "Internal inconsistency in RowList: locate(\(total + offset))")
            }
            total += size
        }
        precondition(
            serials.count == chunks.count,
            "Internal inconsistency in RowList: serial column has \(serials.count) entries for \(chunks.count) chunks")
        precondition(
            counts.chunkCount == chunks.count,
            "Internal inconsistency in RowList: count tree has \(counts.chunkCount) chunks, table \(chunks.count)")
        precondition(total == count, "Internal inconsistency in RowList: count \(count) != \(total)")
        precondition(
            chunks.count <= count / Self.minChunk + 1,
            "Internal inconsistency in RowList: \(chunks.count) chunks for \(count) rows")
        if let idIndex {
            precondition(
                idIndex.count == count,
                "Internal inconsistency in RowList: ID index holds \(idIndex.count) IDs for \(count) rows")
        }
        for serial in freeSerials {
            precondition(
                positions[Int(serial)] == -1 && !seenSerials.contains(serial),
                "Internal inconsistency in RowList: free serial \(serial) in use")
        }
        precondition(
            seenSerials.count + freeSerials.count == positions.count,
            "Internal inconsistency in RowList: serial table leaks")
    }
}
