import ArgumentParser
import FlowSyncClient
import Foundation

/// `flowsync backup DIR`: the server writes a consistent backup of every list into a new
/// directory on its own machine (a BackupRequest; docs/STORAGE.md, "Backup and restore").
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Have the server write a consistent backup of every list into a new directory on its machine.",
        discussion: """
            DIR is an absolute path on the server's machine (not this one, when they differ): \
            missing, or an empty directory, outside the server's data directory. The server \
            takes every list at a committed version and writes it off its event loop while \
            writes go on; the command returns when the backup is on disk. Restore by starting \
            flowsyncd with --data-dir DIR (or a copy of it). Needs a token that may read \
            every list (read: ["*"]), or a server with auth off.

            Exit codes: 0 the backup is written; 4 the server refused it or it failed (the \
            message says why: forbidden, a backup already running, the directory); 2 no \
            connection within --timeout, or the connection was lost before the answer (the \
            backup may still complete: check for DIR/STOPPED).
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The new backup directory, an absolute path on the server's machine.") var directory: String
    @Option(name: .customLong("max-wait"), help: "Seconds to wait for the backup to be written.") var maxWait: Double =
        3_600
    @Flag(help: "Print JSON.") var json = false

    func run() async {
        await runCommand {
            let client = try connection.makeClient()
            defer { client.close() }
            // The client connects in the background: the connection is what --timeout bounds.
            try await withDeadline(connection.timeout, "no connection to the server within \(connection.timeout) s") {
                for _ in 0..<100_000 {
                    if case .connected = client.status { return }
                    if case .closed(let error) = client.status { throw CLIError.from(error ?? .closed) }
                    try? await Task.sleep(nanoseconds: 10_000_000)
                }
            }
            let target = directory
            let reply = try await withDeadline(
                maxWait,
                "no answer within --max-wait \(maxWait) s (the backup may still complete: check for \(target)/STOPPED)"
            ) {
                do throws(FlowSyncError) { return try await client.backup(to: target) } catch {
                    throw CLIError.from(error)
                }
            }
            if let failure = reply.failure {
                throw CLIError(message: "server refused the backup: error \(failure): \(reply.message)", exitCode: 4)
            }
            if json {
                print(
                    Rendering.line(
                        [
                            "directory": target, "lists": Int(reply.lists), "bytes": Int(reply.bytes),
                            "message": reply.message,
                        ] as [String: Any]))
            } else {
                print("flowsync: \(reply.message) (\(reply.bytes) bytes); restore with: flowsyncd --data-dir \(target)")
            }
        }
    }
}
