import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The cluster's PostgreSQL connections over TLS (issue #32): a PostgreSQL serving the
/// test certificate, reached with `sslmode=verify-full`: the daemon in cluster mode
/// commits through it; a wrong root or a wrong name is refused; and the default
/// `sslmode` beyond loopback is verify-full (``PostgresTLS``).
extension ClusterLogTests {
    /// A PostgreSQL with `ssl=on`, serving `certificate` of the test set (copied where
    /// the `postgres` user may read it, the key with mode 0600 as PostgreSQL demands).
    static func tlsPostgres(_ certificate: String) async throws -> PostgresServer {
        let certificates = try await TestCertificates.shared()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flowsync-pgtls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: certificates.path("\(certificate).pem"), toPath: "\(directory)/server.crt")
        try FileManager.default.copyItem(
            atPath: certificates.path("\(certificate).key"), toPath: "\(directory)/server.key")
        chmod("\(directory)/server.key", 0o600)
        if geteuid() == 0 {
            _ = try await ChildProcess.run(
                "/bin/chown", arguments: ["-R", "postgres:postgres", directory], timeout: .seconds(10))
        }
        return try await PostgresServer.start(settings: [
            "-c", "ssl=on", "-c", "ssl_cert_file=\(directory)/server.crt", "-c", "ssl_key_file=\(directory)/server.key",
            "-c", "ssl_min_protocol_version=TLSv1.2",
        ])
    }

    /// Runs `body` against a TLS PostgreSQL, which is stopped afterwards.
    static func withTLSPostgres(_ certificate: String, _ body: (PostgresServer) async throws -> Void) async throws {
        let pg = try await tlsPostgres(certificate)
        do {
            try await body(pg)
            await pg.stop()
        } catch {
            await pg.stop()
            throw error
        }
    }

    @Test func clusterModeReachesPostgreSQLOverTLSWithVerifyFull() async throws {
        let certificates = try await TestCertificates.shared()
        try await Self.withTLSPostgres("server") { pg in
            let verifyFull = pg.conninfo + " sslmode=verify-full sslrootcert=\(certificates.caFile)"
            // The connection is TLS, checked: pg_stat_ssl says so from the server's side.
            let sql = try await SQLSession.open(verifyFull)
            let row = try await sql.query("SELECT ssl::text, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            #expect(row.rows.first?[0] == "true" && row.rows.first?[1]?.hasPrefix("TLSv1.") == true, "\(row.rows)")
            // The daemon in cluster mode through it: writes commit to PostgreSQL.
            var configuration = Self.clusterConfiguration(pg, node: "a")
            configuration.cluster.postgres = verifyFull
            let server = try await EmbeddedServer(configuration: configuration, storage: .configured)
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "tls-writer")
            writer.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writer.waitFor(Self.isSnapshot) != nil)
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            #expect(await Self.write(writer, "tasks", seq: 2, Self.row("r2"))?.version == 2)
            #expect(try await sql.query("SELECT head FROM fs_lists WHERE list = 'tasks'").int(0, 0) == 2)
            // Every backend of the daemon speaks TLS.
            let plain = try await sql.query(
                "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = 'postgres' AND NOT s.ssl"
            )
            #expect(plain.int(0, 0) == 0)
            writer.close()
            #expect(await server.stop())
            // An untrusted root is refused, by the test's session and by a daemon's start.
            do {
                _ = try await SQLSession.open(
                    pg.conninfo + " sslmode=verify-full sslrootcert=\(certificates.path("otherca.pem"))")
                Issue.record("connected with an untrusted root")
            } catch {
                #expect("\(error)".contains("certificate verify failed"), "\(error)")
            }
            await sql.close()
        }
    }

    @Test func verifyFullChecksTheNameWhereVerifyCADoesNot() async throws {
        let certificates = try await TestCertificates.shared()
        try await Self.withTLSPostgres("wronghost") { pg in
            do {
                _ = try await SQLSession.open(pg.conninfo + " sslmode=verify-full sslrootcert=\(certificates.caFile)")
                Issue.record("verify-full accepted a certificate for other.example at 127.0.0.1")
            } catch {
                #expect("\(error)".contains("does not match host name") || "\(error)".contains("127.0.0.1"), "\(error)")
            }
            let session = try await SQLSession.open(
                pg.conninfo + " sslmode=verify-ca sslrootcert=\(certificates.caFile)")
            await session.close()
        }
    }

    @Test func theDefaultSSLModeBeyondLoopbackIsVerifyFull() {
        #expect(
            PostgresTLS.defaultingToVerifyFull("host=127.0.0.1 port=5432 dbname=x").conninfo
                == "host=127.0.0.1 port=5432 dbname=x")
        #expect(
            PostgresTLS.defaultingToVerifyFull("host=/var/run/postgresql dbname=x").conninfo
                == "host=/var/run/postgresql dbname=x")
        #expect(
            PostgresTLS.defaultingToVerifyFull("host=db.example.com dbname=x").conninfo
                == "host=db.example.com dbname=x sslmode=verify-full")
        #expect(
            PostgresTLS.defaultingToVerifyFull("host=127.0.0.1,db2.example.com dbname=x").conninfo.hasSuffix(
                " sslmode=verify-full"))
        #expect(
            PostgresTLS.defaultingToVerifyFull("postgresql://db.example.com/x").conninfo
                == "postgresql://db.example.com/x?sslmode=verify-full")
        #expect(
            PostgresTLS.defaultingToVerifyFull("postgresql://db.example.com/x?connect_timeout=5").conninfo
                == "postgresql://db.example.com/x?connect_timeout=5&sslmode=verify-full")
        let explicit = PostgresTLS.defaultingToVerifyFull("host=db.example.com sslmode=require")
        #expect(
            explicit.conninfo == "host=db.example.com sslmode=require"
                && explicit.warning?.contains("verify-full") == true)
        #expect(PostgresTLS.defaultingToVerifyFull("host=db.example.com sslmode=verify-full").warning == nil)
        #expect(PostgresTLS.defaultingToVerifyFull("not a = = conninfo").warning == nil)
    }
}
