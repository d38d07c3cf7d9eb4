import FlowSyncCore
import FlowSyncGatewayCore
import Foundation

/// Where a hook's per-list progress lives — its cursor (the last delivered
/// `EPOCH:VERSION`) and the delivery in flight (``WebhookProgress``) — so a gateway restart
/// POSTs an unanswered delivery again and then resumes from the cursor through the
/// daemon's catch-up (docs/GATEWAY.md, "Cursors"). One protocol, an in-memory
/// implementation and a file one, with one conformance test.
public protocol WebhookCursorStore: Sendable {
    /// The saved progress, nil if none.
    func load(hook: String, list: String) throws -> WebhookProgress?
    /// Saves the progress; durable when it returns (the file store: written, fsynced,
    /// renamed over the old one).
    func save(_ progress: WebhookProgress, hook: String, list: String) throws
}

/// Cursors in memory (tests; a gateway without a state directory).
public final class MemoryWebhookCursorStore: WebhookCursorStore {
    private let saved = Locked([String: WebhookProgress]())

    public init() {}

    public func load(hook: String, list: String) throws -> WebhookProgress? {
        saved.withLock { $0[hook + "\u{0}" + list] }
    }

    public func save(_ progress: WebhookProgress, hook: String, list: String) throws {
        saved.withLock { $0[hook + "\u{0}" + list] = progress }
    }
}

/// Progress as files: `DIRECTORY/HOOK/LIST.cursor` holding `EPOCH:VERSION\n` and, while a
/// delivery is out, that delivery (``WebhookProgress/encoded()``), with the hook and list
/// names percent-encoded so any name is one path component. A save writes a temporary
/// file, fsyncs it, renames it over the old one and fsyncs the directory, so a crash
/// leaves the old progress or the new one, never a torn one.
public final class FileWebhookCursorStore: WebhookCursorStore {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    static func component(_ name: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.")
        let encoded = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
        return encoded == "." || encoded == ".." ? encoded.replacingOccurrences(of: ".", with: "%2E") : encoded
    }

    func file(hook: String, list: String) -> URL {
        directory.appendingPathComponent(Self.component(hook)).appendingPathComponent(Self.component(list) + ".cursor")
    }

    public func load(hook: String, list: String) throws -> WebhookProgress? {
        let url = file(hook: hook, list: list)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do {
            return try WebhookProgress(decoding: Array(try Data(contentsOf: url)), list: list)
        } catch let error as WebhookProgressError {
            throw CursorStoreError("\(url.path): \(error)")
        }
    }

    public func save(_ progress: WebhookProgress, hook: String, list: String) throws {
        let url = file(hook: hook, list: list)
        let folder = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).tmp")
        let bytes = progress.encoded()
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw CursorStoreError("open \(temporary.path): errno \(errno)") }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0 else {
            throw CursorStoreError("write \(temporary.path): errno \(errno)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            throw CursorStoreError("rename to \(url.path): errno \(errno)")
        }
        let dirfd = open(folder.path, O_RDONLY | O_DIRECTORY)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }
}

/// A cursor could not be read or written.
public struct CursorStoreError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
