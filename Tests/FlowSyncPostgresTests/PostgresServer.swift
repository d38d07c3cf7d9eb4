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
struct PostgresServer {
    static let bin = "/usr/lib/postgresql/15/bin"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "\(bin)/postgres") }

    let directory: String
    let port: Int
    let process: ChildProcess

    /// The libpq connection string for the test database.
    var conninfo: String { "host=127.0.0.1 port=\(port) dbname=postgres user=flowsync connect_timeout=5" }

    /// Runs `body` against a fresh server, which is stopped afterwards.
    static func with<T>(_ body: (PostgresServer) async throws -> T) async throws -> T {
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

    static func start() async throws -> PostgresServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flowsync-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let asRoot = geteuid() == 0
        if asRoot { _ = try await ChildProcess.run("/bin/chown", arguments: ["postgres:postgres", directory], timeout: .seconds(10)) }
        let (tool, prefix) = asRoot
            ? ("/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--pdeathsig", "KILL"])
            : ("/usr/bin/setpriv", ["--pdeathsig", "KILL"])
        let initdb = try await ChildProcess.run(tool, arguments: prefix + ["\(bin)/initdb", "-D", "\(directory)/data", "-A", "trust", "-U", "flowsync", "--no-sync", "-E", "UTF8"],
                                                timeout: .seconds(60))
        guard initdb.status == 0 else { throw PostgresServerError("initdb failed: \(initdb)") }
        for attempt in 0..<5 {
            let port = try freePort()
            let postgres = try await ChildProcess.start(tool, arguments: prefix + [
                "\(bin)/postgres", "-D", "\(directory)/data", "-p", "\(port)",
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=\(directory)",
                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                "-c", "max_connections=50", "-c", "shared_buffers=16MB",
            ])
            let ready = await postgres.waitForLine(timeout: .seconds(30)) { line -> Bool? in
                if line.contains("ready to accept connections") { return true }
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
    func stop() async {
        _ = await process.stop(gracePeriod: .seconds(10), signal: SIGINT)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A port that was free a moment ago (bound to 0, then released); the start retries
    /// on the rare race.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PostgresServerError("socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0 else { throw PostgresServerError("bind") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct PostgresServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
