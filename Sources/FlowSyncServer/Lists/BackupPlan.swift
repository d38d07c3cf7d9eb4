/// The order in which an online backup takes the stored lists (docs/STORAGE.md, "Backup
/// and restore"). Pure and loop-confined; the server carries out its steps
/// (Server+Backup.swift) and `BackupPlanTests` drives it without a store.
///
/// Every stored list is taken exactly once, at a committed version no older than the
/// backup's start, from whichever place holds it safely at that moment:
/// - **memory**, when the list is loaded: a copy of its sequencer (copy-on-write, O(1));
/// - **disk**, when it is not: read on a worker, read-only. While that read runs the list
///   must not load (its load may cut a torn tail or write a marker, and once loaded it is
///   appended to), so its key is in ``reading`` and a load of it waits for the chunk —
///   one chunk's read, a bounded wait;
/// - **later**, when it is loading now: the plan cannot read it (the load's worker owns
///   its files) nor copy it (not in memory yet), so the key goes to the back of the
///   queue and is looked at again once loads finish.
///
/// Keys are taken in chunks of at most ``chunkSize``, so a backup of a million lists holds
/// one chunk of lists in memory at a time, and a blocked load waits for at most one
/// chunk's read.
struct BackupPlan {
    /// Where a stored list is now, as the server sees it.
    enum Place: Equatable {
        /// Loaded: take the list of this name from memory.
        case memory(name: String)
        /// Being loaded by a worker: look again later.
        case loading
        /// On disk only: read it.
        case disk
    }

    /// One chunk to take: names to copy from memory, keys to read from disk.
    struct Chunk: Equatable {
        var fromMemory: [String] = []
        var fromDisk: [String] = []
        var isEmpty: Bool { fromMemory.isEmpty && fromDisk.isEmpty }
    }

    enum Step: Equatable {
        /// Take this chunk, then call ``chunkTaken()``.
        case take(Chunk)
        /// Every key left is loading: call ``next(_:)`` again when a load finishes.
        case waitForLoads
        /// Every key was taken.
        case finished
    }

    let chunkSize: Int
    /// Keys not taken yet; the first `head` of them were consumed (dropped in bulk, so a
    /// step is O(chunk), not O(keys)).
    private var queue: [String]
    private var head = 0
    /// Keys read from disk by the chunk in flight: their lists must not load meanwhile.
    private(set) var reading: Set<String> = []

    /// - Parameter keys: the storage keys of every stored list, minus those already
    ///   taken (the lists loaded when the backup started).
    init(keys: [String], chunkSize: Int = 256) {
        precondition(chunkSize > 0, "Internal inconsistency in BackupPlan: chunk size \(chunkSize)")
        self.queue = keys
        self.chunkSize = chunkSize
    }

    /// Keys not taken yet.
    var remaining: Int { queue.count - head }

    /// The next chunk, placing each key by `place`. Call only when no chunk is in flight.
    mutating func next(_ place: (String) -> Place) -> Step {
        precondition(reading.isEmpty, "Internal inconsistency in BackupPlan: next() with a chunk in flight")
        var chunk = Chunk()
        var later: [String] = []
        // Deferred keys go to the back after the scan: each key is looked at at most
        // once per step.
        while head < queue.count, chunk.fromMemory.count + chunk.fromDisk.count < chunkSize {
            let key = queue[head]
            head += 1
            switch place(key) {
            case .memory(let name): chunk.fromMemory.append(name)
            case .disk:
                chunk.fromDisk.append(key)
                reading.insert(key)
            case .loading: later.append(key)
            }
        }
        queue.append(contentsOf: later)
        if head >= 4_096 && head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
        if !chunk.isEmpty { return .take(chunk) }
        return remaining == 0 ? .finished : .waitForLoads
    }

    /// The chunk in flight was taken: its lists may load again.
    mutating func chunkTaken() {
        reading = []
    }

    /// Whether a load of the list stored under `key` must wait for the chunk in flight.
    func blocksLoad(ofKey key: String) -> Bool { reading.contains(key) }
}
