import FlowSyncProcess
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL 15 for one test: `initdb` into a temporary directory, then
/// `postgres` as a child process on 127.0.0.1 and a free port, stopped (fast shutdown)
/// and deleted at the end. Run as the `postgres` user when this process is root
/// (PostgreSQL refuses root), under `setpriv --pdeathsig KILL` so it dies with the test
/// process whatever happens. `make deps` installs `postgresql` (Debian's 15).
///
/// In the test support target (not FlowSyncPostgresTests) so that every suite that needs a
/// cluster — the cluster log's, the gateway's webhooks across a node failover — starts
/// PostgreSQL the same way.
public struct PostgresServer: Sendable {
    public static let bin = "/usr/lib/postgresql/15/bin"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "\(bin)/postgres") }

    public let directory: String
    public let port: Int
    public let process: ChildProcess

    /// The libpq connection string for the test database.
    public var conninfo: String { "host=127.0.0.1 port=\(port) dbname=postgres user=flowsync connect_timeout=5" }

    /// Runs `body` against a fresh server, which is stopped afterwards.
    public static func with<T>(_ body: (PostgresServer) async throws -> T) async throws -> T {
        let server = try await start()
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// A fresh server; `settings` are added to the command line (`-c name=value`, later
    /// ones win). With `standbyOf`, no `initdb`: a streaming standby of that server is
    /// made with `pg_basebackup -R`, named `standbyName` (what the primary's
    /// `synchronous_standby_names` waits for).
    public static func start(
        settings: [String] = [], standbyOf primary: PostgresServer? = nil, standbyName: String = "standby1"
    ) async throws -> PostgresServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flowsync-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let asRoot = geteuid() == 0
        if asRoot {
            _ = try await ChildProcess.run(
                "/bin/chown", arguments: ["postgres:postgres", directory], timeout: .seconds(10))
        }
        let (tool, prefix) =
            asRoot
            ? ("/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--pdeathsig", "KILL"])
            : ("/usr/bin/setpriv", ["--pdeathsig", "KILL"])
        var extra = settings
        if let primary {
            let copy = try await ChildProcess.run(
                tool,
                arguments: prefix + [
                    "\(bin)/pg_basebackup", "-h", "127.0.0.1", "-p", "\(primary.port)", "-U", "flowsync",
                    "-D", "\(directory)/data", "-R", "-X", "stream", "--no-sync",
                ],
                timeout: .seconds(60))
            guard copy.status == 0 else { throw PostgresServerError("pg_basebackup failed: \(copy)") }
            extra += [
                "-c",
                "primary_conninfo=host=127.0.0.1 port=\(primary.port) user=flowsync application_name=\(standbyName)",
                "-c", "hot_standby=on",
            ]
        } else {
            let initdb = try await ChildProcess.run(
                tool,
                arguments: prefix + [
                    "\(bin)/initdb", "-D", "\(directory)/data", "-A", "trust", "-U", "flowsync", "--no-sync", "-E",
                    "UTF8",
                ],
                timeout: .seconds(60))
            guard initdb.status == 0 else { throw PostgresServerError("initdb failed: \(initdb)") }
        }
        for attempt in 0..<5 {
            let port = try freeLoopbackPort()
            let postgres = try await ChildProcess.start(
                tool,
                arguments: prefix + [
                    "\(bin)/postgres", "-D", "\(directory)/data", "-p", "\(port)",
                    "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=\(directory)",
                    "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                    "-c", "max_connections=50", "-c", "shared_buffers=16MB",
                ] + extra)
            let ready = await postgres.waitForLine(timeout: .seconds(30)) { line -> Bool? in
                // "ready to accept connections", or "… read-only connections" (standby).
                if line.contains("ready to accept") { return true }
                if line.contains("could not bind") || line.contains("FATAL") { return false }
                return nil
            }
            if ready == true { return PostgresServer(directory: directory, port: port, process: postgres) }
            _ = await postgres.stop(gracePeriod: .seconds(5), signal: SIGINT)
            if attempt == 4 { throw PostgresServerError("postgres did not start: \(postgres.output.suffix(2000))") }
        }
        throw PostgresServerError("unreachable")
    }

    /// Fast shutdown (SIGINT), then the directory is removed.
    public func stop() async {
        _ = await process.stop(gracePeriod: .seconds(10), signal: SIGINT)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

public struct PostgresServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
