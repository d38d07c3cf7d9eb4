import FlowSyncServer

#if canImport(Glibc)
import Glibc
#endif

/// A ``FileIO`` that fails on purpose: the Nth `write` or `sync` call (counted from
/// when the fault is armed) fails with an errno, or writes only part of its bytes and
/// then fails — so tests can check that a batch whose record is not durable is never
/// acknowledged, and that the next start recovers the valid prefix.
public final class FaultInjectingFileIO: FileIO, @unchecked Sendable {
    public enum Fault: Sendable, Equatable {
        /// The Nth write fails with `errno`, nothing written.
        case write(nth: Int, errno: Int32)
        /// The Nth write writes half of its bytes, then fails with ENOSPC.
        case shortWrite(nth: Int)
        /// The Nth sync (fdatasync or directory fsync) fails with `errno`.
        case sync(nth: Int, errno: Int32)
    }

    private let base = PosixFileIO()
    private let lock = Shared(0)
    private var fault: Fault?
    private var writes = 0
    private var syncs = 0
    /// True once the fault has fired.
    public private(set) var fired = false

    public init(_ fault: Fault? = nil) {
        self.fault = fault
    }

    /// Arms a fault, counting calls from now.
    public func arm(_ fault: Fault) {
        self.fault = fault
        writes = 0
        syncs = 0
        fired = false
    }

    public func makeDirectory(_ path: String) throws(StoreError) { try base.makeDirectory(path) }
    public func listDirectory(_ path: String) throws(StoreError) -> [String] { try base.listDirectory(path) }
    public func exists(_ path: String) -> Bool { base.exists(path) }
    public func readFile(_ path: String) throws(StoreError) -> [UInt8] { try base.readFile(path) }
    public func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32 {
        try base.openForAppend(path, create: create, truncate: truncate)
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        writes += 1
        switch fault {
        case .write(let nth, let code) where nth == writes:
            fired = true
            throw .io("write", path: path, errno: code)
        case .shortWrite(let nth) where nth == writes:
            fired = true
            try base.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]), path: path)
            throw .io("write", path: path, errno: ENOSPC)
        default:
            try base.write(fd, bytes, path: path)
        }
    }

    public func sync(_ fd: Int32, path: String) throws(StoreError) {
        try countSync(path)
        try base.sync(fd, path: path)
    }

    public func syncDirectory(_ path: String) throws(StoreError) {
        try countSync(path)
        try base.syncDirectory(path)
    }

    public func syncFileSystem(_ path: String) throws(StoreError) {
        try countSync(path)
        try base.syncFileSystem(path)
    }

    private func countSync(_ path: String) throws(StoreError) {
        // Syncs of several lists may run concurrently: count under the lock.
        let fail = lock.update { _ -> Bool in
            syncs += 1
            if case .sync(let nth, _) = fault, nth == syncs { return true }
            return false
        }
        if fail, case .sync(_, let code) = fault {
            fired = true
            throw .io("fdatasync", path: path, errno: code)
        }
    }

    public func close(_ fd: Int32) { base.close(fd) }
    public func truncate(_ path: String, to length: Int) throws(StoreError) { try base.truncate(path, to: length) }
    public func rename(_ from: String, to: String) throws(StoreError) { try base.rename(from, to: to) }
    public func remove(_ path: String) throws(StoreError) { try base.remove(path) }
    public func lock(_ path: String) throws(StoreError) -> Int32 { try base.lock(path) }
}
