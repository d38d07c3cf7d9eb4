// Collection conformances of RowList: random access by Int index (O(log m) per
// subscript), iteration chunk by chunk (O(1) per row), and the overloads of common
// algorithms that would otherwise walk indices.

extension RowList: RandomAccessCollection, MutableCollection {
    public typealias Index = Int
    public typealias Indices = Range<Int>
    public typealias SubSequence = Slice<RowList>

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public var isEmpty: Bool { count == 0 }

    /// The row at `index`. Setting a row with another ID keeps the ID index current.
    /// - Complexity: O(log m).
    public subscript(index: Int) -> Row {
        get {
            precondition(index >= 0 && index < count, "RowList index \(index) out of range 0..<\(count)")
            let (c, o) = locate(index)
            return chunks[c].rows[o]
        }
        set {
            precondition(index >= 0 && index < count, "RowList index \(index) out of range 0..<\(count)")
            let (c, o) = locate(index)
            makeChunkUnique(c)
            let old = chunks[c].rows[o]
            chunks[c].rows[o] = newValue
            if idIndex != nil && old.id != newValue.id {
                idIndex![old.id] = nil
                idIndex![newValue.id] = chunks[c].serial
            }
        }
    }

    public subscript(bounds: Range<Int>) -> Slice<RowList> {
        get { Slice(base: self, bounds: bounds) }
        set {
            precondition(newValue.count == bounds.count, "RowList slice assignment must keep the length")
            for (k, row) in newValue.enumerated() { self[bounds.lowerBound + k] = row }
        }
    }

    public var indices: Range<Int> { 0..<count }
    @inline(__always) public func index(after i: Int) -> Int { i + 1 }
    @inline(__always) public func index(before i: Int) -> Int { i - 1 }

    /// Walks the chunks directly: O(1) per row.
    public struct Iterator: IteratorProtocol {
        let chunks: [RowChunk]
        var chunk = 0
        var offset = 0

        public mutating func next() -> Row? {
            while chunk < chunks.count {
                let rows = chunks[chunk].rows
                if offset < rows.count {
                    defer { offset += 1 }
                    return rows[offset]
                }
                chunk += 1
                offset = 0
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(chunks: chunks) }

    public var underestimatedCount: Int { count }

    /// Calls `body` on every row in order.
    /// - Complexity: O(n).
    public func forEach(_ body: (Row) throws -> Void) rethrows {
        for chunk in chunks {
            for row in chunk.rows { try body(row) }
        }
    }

    /// The rows transformed, in order (chunk by chunk, not index by index).
    /// - Complexity: O(n).
    public func map<T, E: Error>(_ transform: (Row) throws(E) -> T) throws(E) -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for chunk in chunks {
            for row in chunk.rows { result.append(try transform(row)) }
        }
        return result
    }

    /// The index of the first row satisfying `predicate` (chunk by chunk).
    /// - Complexity: O(n).
    public func firstIndex(where predicate: (Row) throws -> Bool) rethrows -> Int? {
        var base = 0
        for chunk in chunks {
            for (o, row) in chunk.rows.enumerated() where try predicate(row) { return base + o }
            base += chunk.rows.count
        }
        return nil
    }

    /// The rows as an array.
    /// - Complexity: O(n).
    public var array: [Row] {
        var result: [Row] = []
        result.reserveCapacity(count)
        for chunk in chunks { result.append(contentsOf: chunk.rows) }
        return result
    }
}

extension RowList: ExpressibleByArrayLiteral {
    public init(arrayLiteral rows: Row...) {
        self.init(rows)
    }
}

extension RowList: Equatable {
    /// Same rows in the same order (the chunk layout and the ID index do not count).
    public static func == (lhs: RowList, rhs: RowList) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.chunks.count == rhs.chunks.count && zip(lhs.chunks, rhs.chunks).allSatisfy({ $0 === $1 }) { return true }
        return lhs.elementsEqual(rhs)
    }
}

extension RowList: Hashable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for chunk in chunks {
            for row in chunk.rows { hasher.combine(row) }
        }
    }
}

extension RowList: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { array.description }
    public var debugDescription: String { "RowList(\(array.debugDescription))" }
}
