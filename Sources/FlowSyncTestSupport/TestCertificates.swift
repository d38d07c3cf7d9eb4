import FlowSyncProcess
import Foundation

/// Throw-away certificates for the TLS tests, made at test time with the `openssl` CLI
/// (no private key is ever committed). ECDSA P-256 throughout, like the figures in
/// docs/BENCHMARKS.md. One set per test process (``shared``), in a fresh directory
/// under the system's temporary directory.
///
/// | files | what |
/// | --- | --- |
/// | `ca.pem` | the test CA (trusted by the tests that want it) |
/// | `server.pem`, `server.key` | `localhost` and `127.0.0.1`, signed by the CA, valid 2 days |
/// | `server2.pem`, `server2.key` | the same names, another key (the reload tests) |
/// | `expired.pem`, `expired.key` | the same names, expired in 2020 |
/// | `wronghost.pem`, `wronghost.key` | `other.example` and `10.9.9.9` only |
/// | `selfsigned.pem`, `selfsigned.key` | `localhost`, signed by itself (an untrusted CA) |
/// | `client.pem`, `client.key` | a client certificate, subject `CN=reporting,O=FlowSync Tests` |
/// | `rogue-client.pem`, `rogue-client.key` | a client certificate from another CA |
public struct TestCertificates: Sendable {
    public let directory: String

    /// The path of a file of the set.
    public func path(_ name: String) -> String { "\(directory)/\(name)" }

    public var caFile: String { path("ca.pem") }
    public var serverCertificate: String { path("server.pem") }
    public var serverKey: String { path("server.key") }

    /// The subject of `client.pem` as the daemon prints it (RFC 2253).
    public static let clientSubject = "CN=reporting,O=FlowSync Tests"

    /// The DER bytes of the first certificate in a PEM file.
    public func der(_ name: String) throws -> [UInt8] {
        let text = try String(contentsOfFile: path(name), encoding: .utf8)
        guard let begin = text.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = text.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<text.endIndex),
            let data = Data(base64Encoded: text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace })
        else { throw ChildProcessError("no certificate in \(name)") }
        return [UInt8](data)
    }

    /// The set of this test process, made once.
    public static func shared() async throws -> TestCertificates {
        try await cache.value
    }

    private static let cache = Task { try await make() }

    /// Makes a new set in a new directory.
    public static func make() async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("flowsync-certs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let result = try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", script], environment: ["DIR": directory],
            timeout: .seconds(120))
        guard result.status == 0 else { throw ChildProcessError("making test certificates failed: \(result)") }
        return TestCertificates(directory: directory)
    }

    /// One shell script: a process per certificate would cost more than the keys.
    private static let script = #"""
        set -e
        cd "$DIR"
        key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
        printf 'subjectAltName=DNS:other.example,IP:10.9.9.9\nextendedKeyUsage=serverAuth\n' > wronghost.ext
        printf 'extendedKeyUsage=clientAuth\n' > client.ext
        for ca in ca otherca; do
          key $ca.key
          openssl req -x509 -new -key $ca.key -subj "/CN=FlowSync Test $ca" -days 3 -out $ca.pem \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
        done
        sign() {  # name subject ca extfile
          key $1.key
          openssl req -new -key $1.key -subj "$2" -out $1.csr
          openssl x509 -req -in $1.csr -CA $3.pem -CAkey $3.key -CAcreateserial -days 2 -out $1.pem -extfile $4 2>/dev/null
        }
        sign server /CN=localhost ca server.ext
        sign server2 /CN=localhost ca server.ext
        sign wronghost /CN=other.example ca wronghost.ext
        sign client "/O=FlowSync Tests/CN=reporting" ca client.ext
        sign rogue-client "/O=FlowSync Tests/CN=reporting" otherca client.ext
        key selfsigned.key
        openssl req -x509 -new -key selfsigned.key -subj /CN=localhost -days 2 -out selfsigned.pem \
          -addext subjectAltName=DNS:localhost,IP:127.0.0.1
        # Expired: `openssl ca` is the CLI's only way to set dates in the past.
        key expired.key
        openssl req -new -key expired.key -subj /CN=localhost -out expired.csr
        : > index.txt
        echo 1000 > serial
        cat > ca.cnf <<EOF
        [ca]
        default_ca = test
        [test]
        database = $DIR/index.txt
        new_certs_dir = $DIR
        serial = $DIR/serial
        default_md = sha256
        policy = any
        unique_subject = no
        [any]
        commonName = supplied
        EOF
        openssl ca -config ca.cnf -batch -notext -keyfile ca.key -cert ca.pem -in expired.csr -out expired.pem \
          -startdate 20200101000000Z -enddate 20200201000000Z -extfile server.ext 2>/dev/null
        rm -f *.csr
        """#
}
