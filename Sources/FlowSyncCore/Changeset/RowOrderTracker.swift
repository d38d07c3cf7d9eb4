/// The current order of one section's rows during a batch, as the ``ChangeTracker``
/// sees it: runs of *untouched* rows (only a length and the old index of the first)
/// and single *touched* entries (a tracker handle), kept in a treap ordered by position
/// with subtree lengths.
///
/// Why: a touched row's old index is `run.oldStart + offset` of the run it is cut from
/// (untouched rows keep their old relative order, and a run is never merged back), and
/// a touched row's final index is its position here at the end. Inserting or removing
/// at a position is a split and a merge: O(log k) expected for k touched rows, where
/// the former tracker shifted every entry (O(k) per edit, O(k²) per batch).
///
/// One pool holds the nodes of every section of a batch; each section is a root.
struct RowOrderTracker {
    struct Node {
        var left = -1
        var right = -1
        let priority: UInt64
        /// Rows this node stands for: 1 for an entry, the run length for a run.
        var length: Int
        /// Rows in this subtree.
        var size: Int
        /// The tracker handle of a touched row, or -1 for a run.
        var entry: Int
        /// For a run of original rows, the old index of its first row; -1 for a run of
        /// rows that arrived with a section inserted in this batch.
        var oldStart: Int
    }

    /// What a position held when it was taken out or touched.
    enum Slot {
        /// A touched row: its handle.
        case entry(Int)
        /// An untouched original row with this old index.
        case original(Int)
        /// An untouched row of a section inserted in this batch.
        case inserted
    }

    private(set) var nodes: [Node] = []
    /// Priorities only need to look random to keep the treap balanced; a fixed seed
    /// keeps every run (and every test) the same.
    private var random = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)

    private mutating func nextPriority() -> UInt64 {
        random.next()
    }

    private mutating func makeNode(length: Int, entry: Int, oldStart: Int) -> Int {
        nodes.append(Node(priority: nextPriority(), length: length, size: length, entry: entry, oldStart: oldStart))
        return nodes.count - 1
    }

    @inline(__always) private func size(_ t: Int) -> Int { t < 0 ? 0 : nodes[t].size }

    @inline(__always) private mutating func update(_ t: Int) {
        nodes[t].size = nodes[t].length + size(nodes[t].left) + size(nodes[t].right)
    }

    /// A new sequence of `count` untouched rows: original ones from old index 0, or
    /// (`original == false`) rows of a section inserted in this batch. Returns its root.
    mutating func makeSequence(count: Int, original: Bool) -> Int {
        count == 0 ? -1 : makeNode(length: count, entry: -1, oldStart: original ? 0 : -1)
    }

    private mutating func merge(_ a: Int, _ b: Int) -> Int {
        if a < 0 { return b }
        if b < 0 { return a }
        if nodes[a].priority > nodes[b].priority {
            nodes[a].right = merge(nodes[a].right, b)
            update(a)
            return a
        } else {
            nodes[b].left = merge(a, nodes[b].left)
            update(b)
            return b
        }
    }

    /// Splits `t` into its first `k` rows and the rest, cutting a run in two if `k`
    /// falls inside it.
    private mutating func split(_ t: Int, _ k: Int) -> (Int, Int) {
        if t < 0 { return (-1, -1) }
        let leftSize = size(nodes[t].left)
        if k <= leftSize {
            let (a, b) = split(nodes[t].left, k)
            nodes[t].left = b
            update(t)
            return (a, t)
        }
        let own = nodes[t].length
        if k >= leftSize + own {
            let (a, b) = split(nodes[t].right, k - leftSize - own)
            nodes[t].right = a
            update(t)
            return (t, b)
        }
        // Inside this run: its tail becomes a node of its own on the right side.
        let offset = k - leftSize
        let oldStart = nodes[t].oldStart
        let tail = makeNode(length: own - offset, entry: -1, oldStart: oldStart < 0 ? -1 : oldStart + offset)
        nodes[t].length = offset
        let right = merge(tail, nodes[t].right)
        nodes[t].right = -1
        update(t)
        return (t, right)
    }

    /// Cuts the single row at `position` out of `root` into a node of its own.
    private mutating func isolate(_ root: Int, at position: Int) -> (before: Int, row: Int, after: Int) {
        let (before, rest) = split(root, position)
        let (row, after) = split(rest, 1)
        return (before, row, after)
    }

    private func slot(of node: Int) -> Slot {
        let n = nodes[node]
        if n.entry >= 0 { return .entry(n.entry) }
        return n.oldStart < 0 ? .inserted : .original(n.oldStart)
    }

    /// What is at `position`, and its node: an untouched row there is cut out of its run
    /// into a node of its own, which ``assign(entry:to:)`` then makes an entry.
    mutating func touch(_ root: inout Int, at position: Int) -> (node: Int, slot: Slot) {
        let (before, row, after) = isolate(root, at: position)
        root = merge(merge(before, row), after)
        return (row, slot(of: row))
    }

    /// Marks the single-row node `node` (from ``touch(_:at:)``) as the entry `handle`.
    mutating func assign(entry handle: Int, to node: Int) {
        assert(nodes[node].length == 1)
        nodes[node].entry = handle
    }

    /// Takes the row at `position` out; returns what it was.
    mutating func remove(_ root: inout Int, at position: Int) -> Slot {
        let (before, row, after) = isolate(root, at: position)
        root = merge(before, after)
        return slot(of: row)
    }

    /// Puts the touched row `handle` at `position`.
    mutating func insert(_ root: inout Int, entry handle: Int, at position: Int) {
        let (before, after) = split(root, position)
        root = merge(merge(before, makeNode(length: 1, entry: handle, oldStart: -1)), after)
    }

    /// Calls `body(handle, position)` for every touched row of the sequence, in order.
    /// - Complexity: O(nodes of the sequence).
    func forEachEntry(_ root: Int, _ body: (Int, Int) -> Void) {
        var stack: [Int] = []
        var t = root
        var position = 0
        while t >= 0 || !stack.isEmpty {
            while t >= 0 {
                stack.append(t)
                t = nodes[t].left
            }
            let node = stack.removeLast()
            if nodes[node].entry >= 0 { body(nodes[node].entry, position) }
            position += nodes[node].length
            t = nodes[node].right
        }
    }
}
