import Dispatch
import FlowSyncCore
import Foundation
import Logging

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// The client's persistence directory: POSIX file I/O only (the same calls on Linux and
/// Darwin), every file replaced atomically — written to a temporary file, `fsync`ed,
/// renamed over the old one, and the directory `fsync`ed — so a crash leaves either the
/// old file or the new one, never a mix. Damage that gets through anyway (a torn sector,
/// a bit flip) fails the file's checksum and the file is ignored (``load(list:)``).
///
/// Files: `lock` (held with `flock` while a client uses the directory), `client-id`
/// (the writer identity) and, per list, `list-<XXH64 of the name, hex>.replica`
/// and `.pending` (``ReplicaFileFormat``); the list's name is inside each file and checked.
final class ReplicaDirectory: @unchecked Sendable {
    let path: String
    let synchronizes: Bool
    let logger: Logger
    /// Guards the maps and counters below. Never held during file I/O: the client
    /// queues captures under its own lock, and must not wait for a disk there.
    private let lock = NSLock()
    /// Held during each file write (on the queue), so that ``disable()`` returns only
    /// once no write is in progress — after it, nothing is written, as after a kill.
    private let ioLock = NSLock()
    /// Per file, the generation of the content last written: older content is never
    /// written over newer.
    private var written: [String: UInt64] = [:]
    /// Per list, the newest capture queued of each file (what a queued job writes).
    private var newestPending: [String: (generation: UInt64, content: PersistedPending)] = [:]
    private var newestReplica: [String: (generation: UInt64, content: PersistedReplica)] = [:]
    private var disabled = false
    private let queue = DispatchQueue(label: "FlowSyncClient.persistence", qos: .utility)
    /// The open `lock` file, holding an exclusive `flock` while this client uses the
    /// directory; -1 once released.
    private var lockDescriptor: Int32

    /// Opens (creating if needed) the directory at `path` and takes its lock.
    ///
    /// Why a lock: two clients on one directory (an app and its extension sharing an
    /// app-group container, or two clients in one process) would overwrite each other's
    /// files and send each other's writes under one client ID. `flock` is released by
    /// the kernel when the process dies, so a killed app never leaves it stale.
    /// - Throws: ``ReplicaFileError`` when it cannot be created, or another client holds it.
    init(path: String, synchronizes: Bool, logger: Logger) throws(ReplicaFileError) {
        self.path = path
        self.synchronizes = synchronizes
        self.logger = logger
        try Self.makeDirectory(path)
        let fd = open("\(path)/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("open", "\(path)/lock") }
        // A few tries, 5 ms apart: a child process forked by another thread of the app
        // holds a copy of the descriptor (and so the lock) until it execs, which is
        // brief; a real second client holds it for good.
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK && tries < 40 {
            tries += 1
            usleep(5_000)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            let error =
                busy
                ? ReplicaFileError(
                    message: "\(path) is in use by another FlowSyncClient (one client per persistence directory)")
                : Self.failure("flock", "\(path)/lock")
            close(fd)
            throw error
        }
        lockDescriptor = fd
    }

    deinit { releaseLock() }

    /// Lets another client open the directory (the client closed, or was abandoned).
    private func releaseLock() {
        if lockDescriptor >= 0 { close(lockDescriptor) }  // closing drops the flock
        lockDescriptor = -1
    }

    private static func makeDirectory(_ path: String) throws(ReplicaFileError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ReplicaFileError(message: "cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
    }

    // MARK: Names

    static func fileStem(list name: String) -> String {
        let hash = String(XXH64.hash(name), radix: 16)
        return "list-" + String(repeating: "0", count: 16 - hash.count) + hash
    }

    func replicaPath(_ list: String) -> String { "\(path)/\(Self.fileStem(list: list)).replica" }
    func pendingPath(_ list: String) -> String { "\(path)/\(Self.fileStem(list: list)).pending" }
    var clientIDPath: String { "\(path)/client-id" }

    // MARK: Reading

    /// The writer identity stored here; stores `proposed` when there is none.
    func clientID(proposing proposed: String) -> String {
        if let bytes = Self.readFile(clientIDPath), !bytes.isEmpty, bytes.count <= 256 {
            let stored = String(decoding: bytes, as: UTF8.self)
            if stored.utf8.elementsEqual(bytes) { return stored }
        }
        do throws(ReplicaFileError) {
            try replace(clientIDPath, with: Array(proposed.utf8))
        } catch {
            logger.warning("cannot store the client ID: \(error)")
        }
        return proposed
    }

    /// What a previous launch left for `list`. A file that is damaged, truncated or of
    /// another list is logged and left out (the next write replaces it): nothing from
    /// it is ever shown.
    func load(list name: String) -> RestoredList? {
        let (restored, discarded) = ReplicaFileFormat.restore(
            list: name, replica: Self.readFile(replicaPath(name)),
            pending: Self.readFile(pendingPath(name)))
        for problem in discarded {
            logger.warning(
                "persisted file discarded: \(problem)", metadata: ["flowsync.list": "\(name)", "directory": "\(path)"])
        }
        return restored
    }

    /// The whole file, or `nil` when it does not exist or cannot be read.
    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return Array(bytes[0..<done]) }
            done += n
        }
        return bytes
    }

    // MARK: Writing

    /// One capture of a list's state to write, ``generation`` ordering captures.
    struct Job: Sendable {
        var generation: UInt64
        var action: ReplicaPersistence.Action
    }

    /// Queues `jobs`, in order, on the directory's own queue. `replicaWritten` is
    /// called (on that queue) after each durable replica file.
    func perform(_ jobs: [Job], replicaWritten: @escaping @Sendable (String, ListVersion) -> Void) {
        guard !jobs.isEmpty else { return }
        lock.lock()
        for job in jobs {
            switch job.action {
            case .writePending(let pending):
                newestPending[pending.name] = (job.generation, pending)
            case .writeReplica(let replica, let pending):
                newestPending[pending.name] = (job.generation, pending)
                newestReplica[replica.name] = (job.generation, replica)
            }
        }
        lock.unlock()
        // The queue gets only what to write, not the content: the captures live in the
        // `newest…` maps alone, dropped once taken, so no queued closure keeps a second
        // reference to a list's storage (the next edit of the session's copy would then
        // copy the whole list).
        let work = jobs.map { job -> (list: String, generation: UInt64, replica: Bool) in
            switch job.action {
            case .writePending(let pending): return (pending.name, job.generation, false)
            case .writeReplica(let replica, _): return (replica.name, job.generation, true)
            }
        }
        queue.async { self.run(work, replicaWritten) }
    }

    /// Runs `work` on the directory's queue after everything queued before it.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        queue.async(execute: work)
    }

    /// Waits until every queued write is done.
    func drain() { queue.sync {} }

    /// Stops writing, as a killed process would: queued writes never happen, and the
    /// directory's lock is released (the kernel does that for a dead process).
    func disable() {
        ioLock.lock()
        lock.lock()
        disabled = true
        releaseLock()
        lock.unlock()
        ioLock.unlock()
    }

    /// Waits for the queued writes, then releases the directory for another client.
    func finish() {
        drain()
        ioLock.lock()
        lock.lock()
        releaseLock()
        lock.unlock()
        ioLock.unlock()
    }

    private var counts = PersistenceStatistics()
    /// What was written so far.
    var statistics: PersistenceStatistics {
        lock.lock()
        defer { lock.unlock() }
        return counts
    }

    /// Writes each job's files — or newer content for them, when newer captures are
    /// queued behind (coalescing: a burst of edits is one file write, not one per edit).
    ///
    /// Writing newer content early is safe: a pending file captured later names every
    /// write an earlier capture did, or a replica containing it was durable before the
    /// capture; and a replica is written only after a pending file at least as new. A
    /// frame queued behind a job (``enqueue(_:)``) thus never leaves before the marks
    /// captured before it.
    private func run(
        _ work: [(list: String, generation: UInt64, replica: Bool)],
        _ replicaWritten: @Sendable (String, ListVersion) -> Void
    ) {
        for (list, generation, replica) in work {
            // A replica's pending file first: it must name every write the new replica
            // contains with its commit version before that replica exists.
            storePending(list, atLeast: generation)
            if replica, let position = storeReplica(list, atLeast: generation) {
                replicaWritten(list, position)
            }
        }
    }

    private func storePending(_ list: String, atLeast generation: UInt64) {
        lock.lock()
        let taken = newestPending[list].flatMap { $0.generation >= generation ? $0 : nil }
        // Forgotten once taken: a kept capture would share the list's storage with the
        // session, and the next edit would copy it (copy-on-write).
        if taken != nil { newestPending[list] = nil }
        lock.unlock()
        guard let (newest, pending) = taken else { return }
        _ = store(pendingPath(list), generation: newest) { ReplicaFileFormat.encode(pending) }
    }

    /// - Returns: The position of the replica written, if one was.
    private func storeReplica(_ list: String, atLeast generation: UInt64) -> ListVersion? {
        lock.lock()
        let taken = newestReplica[list].flatMap { $0.generation >= generation ? $0 : nil }
        if taken != nil { newestReplica[list] = nil }
        lock.unlock()
        guard let (newest, replica) = taken else { return nil }
        return store(replicaPath(list), generation: newest) { ReplicaFileFormat.encode(replica) }
            ? replica.position : nil
    }

    /// Replaces `file` with `content()` unless that content (or newer) is there
    /// already. On the queue only (so `written` changes on one thread).
    private func store(_ file: String, generation: UInt64, _ content: () -> [UInt8]) -> Bool {
        ioLock.lock()
        defer { ioLock.unlock() }
        lock.lock()
        let skip = disabled || generation <= written[file] ?? 0
        lock.unlock()
        guard !skip else { return false }
        let bytes = content()
        do throws(ReplicaFileError) {
            try replace(file, with: bytes)
        } catch {
            logger.warning("cannot write \(file): \(error)")
            return false
        }
        lock.lock()
        written[file] = generation
        if file.hasSuffix(".replica") {
            counts.replicaFilesWritten += 1
            counts.replicaBytesWritten += bytes.count
        } else {
            counts.pendingFilesWritten += 1
            counts.pendingBytesWritten += bytes.count
        }
        lock.unlock()
        return true
    }

    /// Temporary file, write, fsync, rename, fsync the directory.
    private func replace(_ file: String, with bytes: [UInt8]) throws(ReplicaFileError) {
        let temporary = file + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure("open", temporary) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = Self.failure("write", temporary)
                close(fd)
                throw error
            }
            done += n
        }
        if synchronizes && fsync(fd) != 0 {
            let error = Self.failure("fsync", temporary)
            close(fd)
            throw error
        }
        close(fd)
        guard rename(temporary, file) == 0 else { throw Self.failure("rename", file) }
        if synchronizes {
            // The rename itself is durable only once the directory is.
            let dir = open(path, O_RDONLY | O_CLOEXEC)
            if dir >= 0 {
                _ = fsync(dir)
                close(dir)
            }
        }
    }

    private static func failure(_ call: String, _ file: String) -> ReplicaFileError {
        ReplicaFileError(message: "\(call)(\(file)): \(String(cString: strerror(errno)))")
    }
}

/// What a client wrote to its persistence directory since it started
/// (``FlowSyncClient/persistenceStatistics``): to check the cadence's cost in an app.
public struct PersistenceStatistics: Sendable, Hashable {
    /// Replica files written (each the whole list, compressed).
    public var replicaFilesWritten = 0
    /// Their bytes.
    public var replicaBytesWritten = 0
    /// Pending-writes files written (one per change of the pending queue).
    public var pendingFilesWritten = 0
    /// Their bytes.
    public var pendingBytesWritten = 0
}
