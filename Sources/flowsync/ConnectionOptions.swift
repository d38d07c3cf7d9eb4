import ArgumentParser
import Dispatch
import FlowSyncClient
import Foundation
import Logging

/// `--host`, `--port`, `--token`, `--timeout`, shared by every command; each falls back
/// to an environment variable (FLOWSYNC_HOST, FLOWSYNC_PORT, FLOWSYNC_TOKEN).
///
/// Several servers (the nodes of a cluster): repeat `--host`, each `H` or `H:P`
/// (`[v6]:P` for IPv6), or give FLOWSYNC_HOST as `h1:p1,h2:p2`. They are tried in the
/// order given until one answers; `--port` is the port of every host written without one.
/// Why repeated `--host` rather than a new `--endpoints`: `redis-cli -h H -p P` users
/// already write `--host`, one server stays `--host H --port P` exactly as before, and
/// nothing new must be learnt for a second one.
struct ConnectionOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Server host, or host:port; repeat it for several servers (cluster nodes), tried in order until one answers (env FLOWSYNC_HOST, comma-separated; default 127.0.0.1).",
            valueName: "host[:port]"))
    var host: [String] = []

    @Option(help: "Server port (env FLOWSYNC_PORT; default 7400).")
    var port: Int?

    @Option(help: "Auth token sent in the handshake (env FLOWSYNC_TOKEN).")
    var token: String?

    @Option(help: "Seconds to wait for the server before giving up (exit 2).")
    var timeout: Double = 10

    @Flag(
        help:
            "Plain TCP even to a host that is not loopback (the token travels in clear text). Without it, every host but loopback gets TLS."
    )
    var plaintext = false

    @Flag(help: "TLS even to a loopback host (by default loopback is plain TCP; every other host gets TLS).")
    var tls = false

    @Option(
        help: ArgumentHelp(
            "PEM file of CA certificates to trust besides the system's (a private CA).", valueName: "file"))
    var cacert: String?

    @Flag(
        name: .customLong("no-system-trust"),
        help: "Accept the server on its --pin alone, whoever signed its certificate (a self-signed server).")
    var noSystemTrust = false

    @Option(
        help: ArgumentHelp(
            "SHA-256 of a certificate of the server's chain to accept, as `openssl x509 -noout -fingerprint -sha256` prints it; repeat it for several (the next key too).",
            valueName: "sha256"))
    var pin: [String] = []

    @Option(
        name: .customLong("server-name"),
        help: ArgumentHelp(
            "Name checked against the server's certificate (and sent as SNI) instead of the host.", valueName: "name"))
    var serverName: String?

    @Option(
        help: ArgumentHelp("Client certificate (PEM chain) for a daemon that requires one (mTLS).", valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("Private key (PEM) of --cert.", valueName: "file"))
    var key: String?

    var resolvedPort: Int { port ?? ProcessInfo.processInfo.environment["FLOWSYNC_PORT"].flatMap(Int.init) ?? 7400 }
    var resolvedToken: String? { token ?? ProcessInfo.processInfo.environment["FLOWSYNC_TOKEN"] }

    /// The `--host` values as written, or FLOWSYNC_HOST split at commas, or 127.0.0.1.
    var hostArguments: [String] {
        if !host.isEmpty { return host }
        if let environment = ProcessInfo.processInfo.environment["FLOWSYNC_HOST"], !environment.isEmpty {
            return environment.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        return ["127.0.0.1"]
    }

    /// Every server to try, in order; `nil` when one is malformed (``validate()`` says so).
    var resolvedEndpoints: [Endpoint]? {
        let endpoints = hostArguments.map { Endpoint(parsing: $0, defaultPort: resolvedPort) }
        return endpoints.contains(nil) ? nil : endpoints.compactMap { $0 }
    }

    /// The servers for messages: `h1:p1` or `h1:p1, h2:p2`.
    var endpointsDescription: String {
        (resolvedEndpoints ?? []).map(\.description).joined(separator: ", ")
    }

    func validate() throws {
        for text in hostArguments where Endpoint(parsing: text, defaultPort: resolvedPort) == nil {
            throw ValidationError("not a host or host:port with a port in 1...65535: '\(text)'")
        }
        if tls && plaintext { throw ValidationError("--tls and --plaintext contradict each other") }
        for text in pin where TLSPolicy.sha256Pin(hex: text) == nil {
            throw ValidationError("not a SHA-256 pin (64 hex digits, ':' allowed): '\(text)'")
        }
        if (cert == nil) != (key == nil) { throw ValidationError("--cert and --key go together") }
        if noSystemTrust && pin.isEmpty {
            throw ValidationError("--no-system-trust needs --pin: otherwise no server is trusted")
        }
    }

    /// The TLS policy of the flags: TLS unless the host is loopback (``TLSPolicy/automatic``),
    /// `--tls` everywhere, `--plaintext` nowhere; trust from the system, `--cacert`, `--pin`.
    func tlsPolicy() throws -> TLSPolicy {
        var policy = TLSPolicy(mode: plaintext ? .disabled : tls ? .required : .automatic)
        if let cacert {
            let text: String
            do {
                text = try String(contentsOfFile: cacert, encoding: .utf8)
            } catch {
                throw CLIError.input("--cacert \(cacert): \(error.localizedDescription)")
            }
            policy.additionalTrustedRoots = TLSPolicy.certificates(pem: text)
            if policy.additionalTrustedRoots.isEmpty {
                throw CLIError.input("--cacert \(cacert): no certificate in it")
            }
        }
        policy.pinnedCertificateSHA256 = Set(pin.compactMap(TLSPolicy.sha256Pin(hex:)))
        policy.requiresSystemTrust = !noSystemTrust
        policy.serverName = serverName
        if let cert, let key { policy.clientIdentity = .init(certificateChainFile: cert, privateKeyFile: key) }
        return policy
    }

    /// A client that gives up (instead of retrying forever) when the server is not there,
    /// trying the servers in the order given (a refused connection moves to the next at once).
    func makeClient() throws -> FlowSyncClient {
        var logger = Logger(label: "flowsync")
        logger.logLevel = .critical
        guard let endpoints = resolvedEndpoints else { throw CLIError.input("bad --host: \(hostArguments)") }
        return try FlowSyncClient(
            configuration: .init(
                endpoints: endpoints, endpointOrder: .listed, token: resolvedToken,
                clientName: "flowsync-cli/1",
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 100, maxDelayMilliseconds: 1_000),
                callbackQueue: DispatchQueue(label: "flowsync.callbacks"), logger: logger,
                tls: try tlsPolicy()))
    }

    /// Opens `list` and waits for its first snapshot, within the timeout.
    func open(_ list: String, on client: FlowSyncClient) async throws -> ListDirector {
        let director = client.director(list)
        try await withDeadline(
            timeout, "no snapshot of \(list) from \(endpointsDescription) within \(timeout) s (\(client.status))"
        ) {
            do throws(FlowSyncError) { try await director.waitUntilLoaded() } catch { throw CLIError.from(error) }
        }
        return director
    }
}

/// Runs `body`, failing with exit code 2 when it takes longer than `seconds`.
///
/// A race rather than a task group: the SDK's waits do not end on cancellation, and a
/// group would wait for them before returning. The loser keeps running; the CLI exits.
func withDeadline<T: Sendable>(
    _ seconds: Double, _ message: @autoclosure @escaping @Sendable () -> String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.continuation = continuation
        Task { race.finish(await Result(catching: body)) }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            race.finish(.failure(CLIError.timeout(message())))
        }
    }
}

/// The first of a body and a timer to finish resumes the waiter; the other is ignored.
final class DeadlineRace<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    var continuation: CheckedContinuation<T, any Error>?

    func finish(_ result: Result<T, any Error>) {
        lock.lock()
        let waiter = continuation
        continuation = nil
        lock.unlock()
        waiter?.resume(with: result)
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// Runs a command body, turning every error into the documented exit code.
func runCommand(_ body: () async throws -> Void) async {
    do {
        try await body()
    } catch let error as CLIError {
        error.exit()
    } catch let error as FlowSyncError {
        CLIError.from(error).exit()
    } catch {
        CLIError.input("\(error)").exit()
    }
}
