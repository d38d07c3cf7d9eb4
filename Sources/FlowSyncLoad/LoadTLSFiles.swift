import FlowSyncProcess
import FlowSyncTLS
import Foundation

/// The files of a TLS load run: the daemon's pair for `--spawn` (given, or a throw-away
/// self-signed ECDSA P-256 certificate for `localhost` and `127.0.0.1` made with the
/// `openssl` CLI into a temporary directory), and the CA file the clients trust.
struct LoadTLSFiles {
    var daemonPair: (certificate: String, key: String)?
    var caFile: String?
    /// A directory this run made (removed at its end).
    var temporaryDirectory: String?

    /// Runs on the load run's own thread (never a cooperative one): `openssl` is awaited
    /// by blocking it, as the spawned daemon is.
    static func prepare(_ tls: LoadTLS, spawn: Bool) throws -> LoadTLSFiles {
        var files = LoadTLSFiles(daemonPair: nil, caFile: tls.caFile, temporaryDirectory: nil)
        guard spawn else { return files }
        if let certificate = tls.daemonCertificate, let key = tls.daemonKey {
            files.daemonPair = (certificate, key)
            return files
        }
        let directory = NSTemporaryDirectory() + "flowsync-load-tls-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        files.temporaryDirectory = directory
        let certificate = directory + "/cert.pem"
        let key = directory + "/key.pem"
        let result = try ChildProcess.runBlocking(
            "/usr/bin/openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-keyout", key, "-out", certificate,
            ])
        guard result.status == 0 else {
            files.removeTemporary()
            throw LoadError("openssl could not make the daemon's certificate: \(result)")
        }
        files.daemonPair = (certificate, key)
        if files.caFile == nil { files.caFile = certificate }
        return files
    }

    /// The clients' context: the system's trust store plus ``caFile``, TLS 1.2 or
    /// later, ALPN `flowsync` (the SDK's defaults).
    func clientContext() throws -> TLSContext {
        var options = TLSContext.ClientOptions()
        options.additionalTrustedRootsFile = caFile
        return try TLSContext.client(options)
    }

    func removeTemporary() {
        if let temporaryDirectory { try? FileManager.default.removeItem(atPath: temporaryDirectory) }
    }
}
