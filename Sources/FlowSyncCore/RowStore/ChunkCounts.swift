/// Row counts of a ``RowList``'s chunks as a Fenwick (binary indexed) tree: prefix sums
/// and "which chunk holds row i" in O(log m) for m chunks, a count change in O(log m).
///
/// Why a Fenwick tree and not a prefix-sum array: every insert or remove changes one
/// chunk's count, which would shift every later prefix sum — O(m) per edit. The tree is
/// rebuilt (O(m), in place, over one contiguous array of integers: no chunk is touched)
/// only when chunks are added or removed, which happens at most once per ~64 edits of
/// a chunk (see `RowList+Editing.swift`).
struct ChunkCounts: Hashable, Sendable {
    /// 1-based Fenwick array; `tree[0]` is unused.
    private var tree: [Int]
    /// The largest power of two ≤ the number of chunks (0 when there are none).
    private var topStep: Int

    /// A tree over `counts`.
    /// - Complexity: O(m).
    init<C: Collection>(_ counts: C) where C.Element == Int {
        var tree = [0]
        tree.reserveCapacity(counts.count + 1)
        tree.append(contentsOf: counts)
        let m = tree.count - 1
        if m > 0 {
            for i in 1...m {
                let j = i + (i & -i)
                if j <= m { tree[j] += tree[i] }
            }
        }
        self.tree = tree
        var step = 1
        while step * 2 <= m { step *= 2 }
        self.topStep = m == 0 ? 0 : step
    }

    /// The number of chunks.
    var chunkCount: Int { tree.count - 1 }

    /// Replaces the counts of chunks `range` with `newCounts` (chunks were split, merged,
    /// added or removed there).
    /// - Complexity: O(m): the tree is turned back into plain counts, edited, and
    ///   rebuilt, each a linear pass without allocation.
    mutating func replaceChunks(_ range: Range<Int>, with newCounts: [Int]) {
        let m = tree.count - 1
        // Inverse of the linear build: tree → plain counts.
        if m > 0 {
            for i in stride(from: m, through: 1, by: -1) {
                let j = i + (i & -i)
                if j <= m { tree[j] -= tree[i] }
            }
        }
        tree.replaceSubrange((range.lowerBound + 1)..<(range.upperBound + 1), with: newCounts)
        let n = tree.count - 1
        if n > 0 {
            for i in 1...n {
                let j = i + (i & -i)
                if j <= n { tree[j] += tree[i] }
            }
        }
        var step = 1
        while step * 2 <= n { step *= 2 }
        topStep = n == 0 ? 0 : step
    }

    /// Adds `delta` to chunk `c`'s count.
    /// - Complexity: O(log m).
    mutating func add(_ delta: Int, at c: Int) {
        var i = c + 1
        while i < tree.count {
            tree[i] += delta
            i += i & -i
        }
    }

    /// The number of rows in chunks `0..<c`.
    /// - Complexity: O(log m).
    func rows(before c: Int) -> Int {
        var i = c, sum = 0
        while i > 0 {
            sum += tree[i]
            i -= i & -i
        }
        return sum
    }

    /// The chunk holding row `index` and the row's offset in it. With no empty chunks
    /// (a ``RowList`` invariant) this is exact for `0 <= index < total`.
    /// - Complexity: O(log m).
    func locate(_ index: Int) -> (chunk: Int, offset: Int) {
        var pos = 0, rest = index, step = topStep
        while step > 0 {
            let next = pos + step
            if next < tree.count && tree[next] <= rest {
                pos = next
                rest -= tree[next]
            }
            step >>= 1
        }
        return (pos, rest)
    }
}
