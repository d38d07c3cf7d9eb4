import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// A fresh temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let path: String
    init(_ label: String = "store") {
        path = NSTemporaryDirectory() + "flowsync-\(label)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

extension RecoveryReport {
    func list(_ name: String) -> RecoveredList? { lists.first { $0.name == name } }
}

@Suite(.timeLimit(.minutes(2))) struct StorageConfigurationTests {
    @Test func storageSectionParsesAndRefusesBadValues() throws {
        let parsed = try ServerConfiguration(
            toml: """
                [storage]
                engine = "memory"
                fsync = "interval"
                fsync_interval_ms = 250
                snapshot_every_batches = 0
                snapshot_every_bytes = 1048576
                """)
        #expect(parsed.storageEngine == .memory)
        #expect(parsed.fsyncPolicy == .interval)
        #expect(parsed.fsyncIntervalMilliseconds == 250)
        #expect(parsed.snapshotEveryBatches == 0 && parsed.snapshotEveryBytes == 1 << 20)
        #expect(ServerConfiguration().fsyncPolicy == .always && ServerConfiguration().storageEngine == .file)
        do {
            _ = try ServerConfiguration(toml: "[storage]\nfsync = \"sometimes\"\n")
            Issue.record("a bad policy was accepted")
        } catch {
            #expect(error.key == "storage.fsync" && error.problem.contains("\"always\""), "\(error)")
        }
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(toml: "[storage]\nfsync_every = 3\n") }
    }
}

/// Failures collected by test work that runs off the pool (``offThePool(_:)``), where
/// `#expect` has no current test to record against; the test expects the list empty.
final class Problems: @unchecked Sendable {
    private(set) var list: [String] = []
    func check(
        _ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String = "",
        file: String = #fileID, line: Int = #line
    ) rethrows {
        if try !condition() { list.append("\(file):\(line): \(message())") }
    }
    func fail(_ message: String, file: String = #fileID, line: Int = #line) {
        list.append("\(file):\(line): \(message)")
    }
}

struct Missing: Error {}

/// `#require` for work off the pool.
func required<T>(_ value: T?) throws -> T {
    guard let value else { throw Missing() }
    return value
}
