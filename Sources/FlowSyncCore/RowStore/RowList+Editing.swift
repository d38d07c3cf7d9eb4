// Editing a RowList: one row at a time (O(log m) plus a move inside one chunk), runs
// (bulk chunk building), and the split/merge rules that keep every chunk at 64…256
// rows so the chunk table stays at most n/64 + 1 long.

extension RowList: RangeReplaceableCollection {
    /// Inserts `row` at `index` (`0...count`).
    /// - Complexity: O(log m) plus a move of ≤ 256 rows; amortized O(m/64) for splits.
    public mutating func insert(_ row: Row, at index: Int) {
        precondition(index >= 0 && index <= count, "RowList insert index \(index) out of range 0...\(count)")
        if chunks.isEmpty {
            let serial = allocateSerial()
            replaceChunks(0..<0, with: [RowChunk(serial: serial, rows: [row])])
            idIndex?[row.id] = serial
            count = 1
            return
        }
        // At a chunk boundary `locate` names the later chunk, at the end the last one.
        let (c, o) = index == count ? (chunks.count - 1, chunks[chunks.count - 1].rows.count) : locate(index)
        makeChunkUnique(c)
        chunks[c].rows.insert(row, at: o)
        counts.add(1, at: c)
        idIndex?[row.id] = chunks[c].serial
        count += 1
        if chunks[c].rows.count > Self.maxChunk { split(c) }
    }

    /// Appends `row`.
    /// - Complexity: amortized O(log m).
    public mutating func append(_ row: Row) {
        insert(row, at: count)
    }

    /// Removes and returns the row at `index`.
    /// - Complexity: O(log m) plus a move of ≤ 256 rows; amortized O(m/64) for merges.
    @discardableResult
    public mutating func remove(at index: Int) -> Row {
        precondition(index >= 0 && index < count, "RowList remove index \(index) out of range 0..<\(count)")
        let (c, o) = locate(index)
        makeChunkUnique(c)
        let row = chunks[c].rows.remove(at: o)
        counts.add(-1, at: c)
        idIndex?[row.id] = nil
        count -= 1
        rebalance(afterRemovalFrom: c)
        return row
    }

    /// Removes every row.
    public mutating func removeAll(keepingCapacity keepCapacity: Bool = false) {
        let indexed = idIndex != nil
        self = RowList()
        if indexed { idIndex = [:] }
    }

    /// Replaces `subrange` with `newElements`. An insertion of more than 256 rows at one
    /// position builds whole chunks: O(k + m). Otherwise row by row: O((r + k)·(log m +
    /// 256)) for r removed and k inserted rows.
    public mutating func replaceSubrange<C: Collection>(_ subrange: Range<Int>, with newElements: C)
    where C.Element == Row {
        precondition(
            subrange.lowerBound >= 0 && subrange.upperBound <= count,
            "RowList range \(subrange) out of range 0...\(count)")
        for index in subrange.reversed() { remove(at: index) }
        if newElements.count > Self.maxChunk {
            insertRun(Array(newElements), at: subrange.lowerBound)
        } else {
            var index = subrange.lowerBound
            for row in newElements {
                insert(row, at: index)
                index += 1
            }
        }
    }

    // MARK: Runs

    /// Inserts a long run by rebuilding the chunk it lands in: the chunk's head, the run
    /// and the chunk's tail are cut into new chunks of 128…256 rows.
    /// - Complexity: O(k + m).
    mutating func insertRun(_ run: [Row], at index: Int) {
        guard !chunks.isEmpty else {
            let indexed = idIndex != nil
            self = RowList(run)
            if indexed { turnOnIDIndex() }
            return
        }
        let (c, o) = index == count ? (chunks.count - 1, chunks[chunks.count - 1].rows.count) : locate(index)
        let old = chunks[c]
        var all: [Row] = []
        all.reserveCapacity(old.rows.count + run.count)
        all.append(contentsOf: old.rows[..<o])
        all.append(contentsOf: run)
        all.append(contentsOf: old.rows[o...])
        // The old chunk's serial is reused for the first new chunk, the rest are minted.
        var reused = false
        let built = Self.makeChunks(all[...]) {
            if !reused {
                reused = true
                return old.serial
            }
            return allocateSerial()
        }
        replaceChunks(c..<(c + 1), with: built)
        count += run.count
        if idIndex != nil {
            for chunk in built {
                for row in chunk.rows { idIndex![row.id] = chunk.serial }
            }
        }
    }

    // MARK: Split and merge

    /// Splits chunk `c` (over ``maxChunk``) into two halves.
    mutating func split(_ c: Int) {
        let half = chunks[c].rows.count / 2
        let moved = Array(chunks[c].rows[half...])
        chunks[c].rows.removeSubrange(half...)
        let serial = allocateSerial()
        if idIndex != nil {
            for row in moved { idIndex![row.id] = serial }
        }
        replaceChunks(c..<(c + 1), with: [chunks[c], RowChunk(serial: serial, rows: moved)])
    }

    /// After a removal from chunk `c`: drops it when empty; when it fell below
    /// ``minChunk``, merges it with a neighbour if both fit in ``mergeLimit``, else
    /// evens the two out (both then hold ≥ 96 rows).
    mutating func rebalance(afterRemovalFrom c: Int) {
        let size = chunks[c].rows.count
        if size == 0 {
            freeSerial(chunks[c].serial)
            replaceChunks(c..<(c + 1), with: [])
            return
        }
        guard size < Self.minChunk, chunks.count > 1 else { return }
        let neighbour = c + 1 < chunks.count ? c + 1 : c - 1
        let (left, right) = (Swift.min(c, neighbour), Swift.max(c, neighbour))
        makeChunkUnique(left)
        makeChunkUnique(right)
        let leftCount = chunks[left].rows.count, rightCount = chunks[right].rows.count
        if leftCount + rightCount <= Self.mergeLimit {
            let moved = chunks[right].rows
            chunks[left].rows.append(contentsOf: moved)
            let serial = chunks[left].serial
            if idIndex != nil {
                for row in moved { idIndex![row.id] = serial }
            }
            freeSerial(chunks[right].serial)
            replaceChunks(left..<(right + 1), with: [chunks[left]])
        } else {
            // Borrow: no chunk is added or removed, so only two counts change.
            let target = (leftCount + rightCount) / 2
            let moved: [Row]
            let serial: Int32
            if leftCount > target {
                moved = Array(chunks[left].rows[target...])
                chunks[left].rows.removeSubrange(target...)
                chunks[right].rows.insert(contentsOf: moved, at: 0)
                serial = chunks[right].serial
            } else {
                let take = target - leftCount
                moved = Array(chunks[right].rows[..<take])
                chunks[right].rows.removeSubrange(..<take)
                chunks[left].rows.append(contentsOf: moved)
                serial = chunks[left].serial
            }
            if idIndex != nil {
                for row in moved { idIndex![row.id] = serial }
            }
            counts.add(chunks[left].rows.count - leftCount, at: left)
            counts.add(chunks[right].rows.count - rightCount, at: right)
        }
    }
}
