#if canImport(Glibc)
import Glibc
#endif

/// The file operations the file store uses, and nothing else — so tests can inject a
/// failing write or fsync at the Nth call (`FaultInjectingFileIO` in
/// FlowSyncTestSupport) and check that no acknowledgement leaves for that batch.
///
/// Every method either does all it says or throws; `write` never returns after a short
/// write. Paths are plain POSIX paths. `sync` may be called from several threads at
/// once (for different descriptors); everything else from one thread.
public protocol FileIO: AnyObject, Sendable {
    /// Creates `path` and missing parents (`mkdir -p`).
    func makeDirectory(_ path: String) throws(StoreError)
    /// Names of the entries of a directory (not `.`/`..`).
    func listDirectory(_ path: String) throws(StoreError) -> [String]
    /// Whether a file or directory exists.
    func exists(_ path: String) -> Bool
    /// The whole content of a file.
    func readFile(_ path: String) throws(StoreError) -> [UInt8]
    /// Opens for appending (`O_WRONLY|O_APPEND`), creating the file when `create`
    /// (and truncating it when `truncate`).
    func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32
    /// Writes all of `bytes`, looping over partial writes; throws on failure.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError)
    /// Flushes the file's data (and the size, which reading it back needs) to disk.
    func sync(_ fd: Int32, path: String) throws(StoreError)
    /// Closes a descriptor (errors ignored: the data was synced or is not needed).
    func close(_ fd: Int32)
    /// Truncates a file to `length` bytes.
    func truncate(_ path: String, to length: Int) throws(StoreError)
    /// Atomically replaces `to` with `from`.
    func rename(_ from: String, to: String) throws(StoreError)
    /// Deletes a file (missing is not an error).
    func remove(_ path: String) throws(StoreError)
    /// Makes a directory's entries (created, renamed, removed files) durable.
    func syncDirectory(_ path: String) throws(StoreError)
    /// Makes everything written to the file system that holds `path` durable — data,
    /// new files and directory entries — in one call (`syncfs(2)`; since Linux 5.8 it
    /// reports a writeback error of that file system). For a backup of many small files,
    /// where one `fdatasync` and one directory `fsync` per file cost a journal commit
    /// each.
    func syncFileSystem(_ path: String) throws(StoreError)
    /// Takes an exclusive advisory lock on `path` (created if missing), held until the
    /// process exits or the descriptor is closed; throws when another process holds it.
    func lock(_ path: String) throws(StoreError) -> Int32
}

extension FileIO {
    /// Writes all of `bytes` (see ``write(_:_:path:)``).
    public func write(_ fd: Int32, _ bytes: [UInt8], path: String) throws(StoreError) {
        var failure: StoreError?
        bytes.withUnsafeBytes { raw in
            do throws(StoreError) { try write(fd, raw, path: path) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}

/// ``FileIO`` over the POSIX calls.
public final class PosixFileIO: FileIO, Sendable {
    public init() {}

    public func makeDirectory(_ path: String) throws(StoreError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o755) != 0 && Glibc.errno != EEXIST {
                throw .io("mkdir", path: prefix, errno: Glibc.errno)
            }
            prefix += "/"
        }
    }

    public func listDirectory(_ path: String) throws(StoreError) -> [String] {
        guard let dir = opendir(path) else { throw .io("opendir", path: path, errno: Glibc.errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    public func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    public func readFile(_ path: String) throws(StoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io("fstat", path: path, errno: Glibc.errno) }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        let failure: Int32? = bytes.withUnsafeMutableBytes { buffer in
            while done < size {
                let n = read(fd, buffer.baseAddress! + done, size - done)
                if n < 0 {
                    if Glibc.errno == EINTR { continue }
                    return Glibc.errno
                }
                if n == 0 { break }
                done += n
            }
            return nil
        }
        if let failure { throw .io("read", path: path, errno: failure) }
        if done < size { bytes.removeLast(size - done) }
        return bytes
    }

    public func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32 {
        var flags = O_WRONLY | O_APPEND | O_CLOEXEC
        if create { flags |= O_CREAT }
        if truncate { flags |= O_TRUNC }
        let fd = open(path, flags, 0o644)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        return fd
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                throw .io("write", path: path, errno: Glibc.errno)
            }
            if n == 0 { throw .io("write", path: path, errno: ENOSPC) }
            done += n
        }
    }

    public func sync(_ fd: Int32, path: String) throws(StoreError) {
        // fdatasync: the data and the size (needed to read it back), not the mtime.
        if fdatasync(fd) != 0 { throw .io("fdatasync", path: path, errno: Glibc.errno) }
    }

    public func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    public func truncate(_ path: String, to length: Int) throws(StoreError) {
        if Glibc.truncate(path, off_t(length)) != 0 { throw .io("truncate", path: path, errno: Glibc.errno) }
        // The new length must be durable before anything is appended after it.
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        defer { Glibc.close(fd) }
        if fsync(fd) != 0 { throw .io("fsync", path: path, errno: Glibc.errno) }
    }

    public func rename(_ from: String, to: String) throws(StoreError) {
        if Glibc.rename(from, to) != 0 { throw .io("rename", path: "\(from) → \(to)", errno: Glibc.errno) }
    }

    public func remove(_ path: String) throws(StoreError) {
        if unlink(path) != 0 && Glibc.errno != ENOENT { throw .io("unlink", path: path, errno: Glibc.errno) }
    }

    public func syncDirectory(_ path: String) throws(StoreError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        defer { Glibc.close(fd) }
        if fsync(fd) != 0 { throw .io("fsync", path: path, errno: Glibc.errno) }
    }

    public func syncFileSystem(_ path: String) throws(StoreError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        defer { Glibc.close(fd) }
        if flowsyncSyncfs(fd) != 0 { throw .io("syncfs", path: path, errno: Glibc.errno) }
    }

    public func lock(_ path: String) throws(StoreError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("open", path: path, errno: Glibc.errno) }
        // A few short retries before calling the directory taken: a process that forks
        // (a test runner spawning a child) holds every open description, this lock's
        // included, from fork until exec closes it (O_CLOEXEC) — a window of
        // microseconds in which a store just closed still looks locked. Another daemon
        // holds it for good and is still refused, 100 ms later.
        var attempt = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = Glibc.errno
            if code == EWOULDBLOCK && attempt < 50 {
                attempt += 1
                usleep(2_000)
                continue
            }
            Glibc.close(fd)
            if code == EWOULDBLOCK { throw .unusable("\(path) is locked: another flowsyncd uses this data directory") }
            throw .io("flock", path: path, errno: code)
        }
        return fd
    }
}

/// glibc's `syncfs(2)` (since 2.14), which the Glibc module does not export (it is
/// declared only under `_GNU_SOURCE`). Same C signature: `int syncfs(int fd)`.
@_silgen_name("syncfs")
private func flowsyncSyncfs(_ fd: Int32) -> Int32
