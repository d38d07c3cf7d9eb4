import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTLS
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// Hostile input on the TLS port (issue #32): plaintext frames, garbage and truncated
/// ClientHellos, a handshake dripped a byte a second, 1,000 unfinished handshakes,
/// renegotiation, a close in the middle of a record. Each must cost its own connection
/// only — bounded bytes (`tls.max_handshake_bytes`), bounded time (the handshake
/// deadline), one slot of the pre-auth cap — and end with a clear close and a reason,
/// while an authenticated TLS client on the same daemon keeps its ping round trip
/// (measured, printed, and bounded loosely: the figures go to docs/BENCHMARKS.md).
@Suite(.serialized, .timeLimit(.minutes(5))) struct TLSHostileInputTests {
    struct Daemon {
        let server: EmbeddedServer
        let thread: EventLoopThread
        let good: TestClient
        let certificates: TestCertificates

        /// Ping round trips of the authenticated client (µs, sorted), `count` pings
        /// `gap` ms apart.
        func pings(_ count: Int = 50, gap: Int = 5, from first: UInt64) async -> [Double] {
            var latencies: [Double] = []
            for nonce in first..<(first + UInt64(count)) {
                let t0 = MonotonicNanoseconds.now()
                good.send(.ping(Ping(nonce: nonce)))
                let pong = await good.waitFor(timeout: 30) {
                    if case .pong(let p) = $0 { return p.nonce == nonce } else { return false }
                }
                #expect(pong != nil, "ping \(nonce) unanswered")
                latencies.append(Double(MonotonicNanoseconds.now() - t0) / 1_000)
                try? await Task.sleep(for: .milliseconds(gap))
            }
            return latencies.sorted()
        }

        func statistics() async -> TLSStatistics { await server.withServer { $0.tlsStatistics }! }

        func stop() async {
            good.close()
            #expect(await server.stop())
            _ = thread.shutdown()
        }
    }

    static func start(
        handshakeTimeoutMilliseconds: Int = 60_000, maxPending: Int = 1_024,
        _ adjust: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> Daemon {
        let certificates = try await TestCertificates.shared()
        var configuration = ServerConfiguration()
        configuration.tls = certificates.serverTLS()
        configuration.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
        configuration.auth.maxPendingHandshakes = maxPending
        adjust(&configuration)
        let server = try await EmbeddedServer(configuration: configuration)
        let thread = try EventLoopThread()
        let good = try await TestClient.connect(
            port: server.port, on: thread, clientID: "good", tls: certificates.clientContext())
        return Daemon(server: server, thread: thread, good: good, certificates: certificates)
    }

    /// Polls an async condition every 10 ms for at most `timeout` seconds.
    func until(_ timeout: Double = 30, _ condition: () async -> Bool) async -> Bool {
        let deadline = MonotonicNanoseconds.now() + UInt64(timeout * 1e9)
        while MonotonicNanoseconds.now() < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    static func figures(_ l: [Double]) -> String {
        "p50 \(Int(l[l.count / 2])) µs, p99 \(Int(l[min(l.count - 1, l.count * 99 / 100)])) µs, max \(Int(l.last!)) µs"
    }

    @Test func notTLSAndBrokenClientHellosAreClosedAtOnce() async throws {
        let daemon = try await Self.start()
        let quiet = await daemon.pings(from: 1_000)
        var random = SeededRandom(seed: 3_201)
        let hello = FrameEncoder().encode(
            .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "p", clientID: "p", authToken: nil)))
        let clientHello = try TestCertificates.clientHello(daemon.certificates.clientContext())
        var brokenHello = clientHello
        // The record header intact, the body damaged.
        for index in 9..<brokenHello.count where index % 7 == 0 { brokenHello[index] ^= 0x5a }
        let inputs: [(String, [UInt8])] = [
            ("plaintext Hello frame", hello),
            ("random bytes (seed 3201)", (0..<600).map { _ in UInt8.random(in: 0...255, using: &random) }),
            ("HTTP request", Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("damaged ClientHello", brokenHello),
            ("a record promising 16 MiB", [0x16, 0x03, 0x01, 0xff, 0xff] + [UInt8](repeating: 1, count: 64)),
        ]
        let started = MonotonicNanoseconds.now()
        var peers: [(String, RawPeer)] = []
        for (name, bytes) in inputs {
            peers.append(
                (
                    name,
                    try #require(
                        try await RawPeer.connect(port: daemon.server.port, on: daemon.thread, firstBytes: bytes).first)
                ))
        }
        let during = await daemon.pings(from: 1)
        for (name, peer) in peers {
            // Closed at once (the deadline is 60 s), answered by an alert or nothing.
            #expect(await eventually(timeout: 10) { peer.isClosed }, "\(name) still open")
            #expect(peer.received.isEmpty || peer.received.first == 21, "\(name): \(peer.received.prefix(8))")
            if let at = peer.closedAt {
                print(
                    "tls-hostile: \(name): closed after \((at - started) / 1_000_000) ms, \(peer.received.count) bytes answered"
                )
            }
        }
        let stats = await daemon.statistics()
        let failures = stats.failuresByReason.values.reduce(0, +)
        #expect(failures == inputs.count, "\(stats.failuresByReason)")
        print(
            "tls-hostile: reasons \(stats.failuresByReason); authenticated ping before \(Self.figures(quiet)), during \(Self.figures(during))"
        )
        // A stall behind a hostile peer would last until its handshake deadline (60 s);
        // 5 s tells that apart from a loaded machine's scheduling (one ping took 1.74 s
        // in a full suite at load 4 beside a build, 2026-11-28; 1 s was the bound then).
        // docs/BENCHMARKS.md's TLS section holds the measured figures.
        #expect(during.last! < 5_000_000, "authenticated ping during: \(Self.figures(during))")
        await daemon.stop()
    }

    @Test func aTruncatedClientHelloEndsAtTheDeadlineOrAtEOF() async throws {
        let daemon = try await Self.start(handshakeTimeoutMilliseconds: 1_000)
        let clientHello = try TestCertificates.clientHello(daemon.certificates.clientContext())
        let half = Array(clientHello.prefix(clientHello.count / 2))
        let silent = try #require(
            try await RawPeer.connect(port: daemon.server.port, on: daemon.thread, firstBytes: half).first)
        let finishing = try #require(
            try await RawPeer.connect(port: daemon.server.port, on: daemon.thread, firstBytes: half).first)
        finishing.finish()
        #expect(await eventually(timeout: 10) { silent.isClosed })
        #expect(silent.received.isEmpty)
        // Both ends are counted: one by its EOF, one by the deadline.
        #expect(
            await until {
                let reasons = await daemon.statistics().failuresByReason
                return reasons["eof_in_handshake"] == 1 && reasons["timeout"] == 1
            })
        await daemon.stop()
    }

    @Test func aHandshakeDrippedAByteASecondIsClosedByTheDeadline() async throws {
        let daemon = try await Self.start(handshakeTimeoutMilliseconds: 2_500)
        let clientHello = try TestCertificates.clientHello(daemon.certificates.clientContext())
        let peer = try #require(try await RawPeer.connect(port: daemon.server.port, on: daemon.thread).first)
        let started = MonotonicNanoseconds.now()
        var sent = 0
        var latencies: [Double] = []
        // One byte a second, and the good client's pings in between.
        while !peer.isClosed && sent < clientHello.count && MonotonicNanoseconds.now() - started < 10_000_000_000 {
            peer.send([clientHello[sent]])
            sent += 1
            latencies += await daemon.pings(10, gap: 100, from: UInt64(sent) * 100)
        }
        #expect(await eventually(timeout: 10) { peer.isClosed })
        let elapsed = Double((peer.closedAt ?? MonotonicNanoseconds.now()) - started) / 1e9
        #expect(elapsed >= 2.0 && elapsed < 6.0, "closed after \(elapsed) s")
        #expect(await daemon.statistics().failuresByReason["timeout"] == 1)
        print(
            "tls-hostile: a ClientHello dripped 1 byte/s: closed after \(String(format: "%.1f", elapsed)) s (\(sent) bytes sent, deadline 2.5 s); authenticated ping meanwhile \(Self.figures(latencies.sorted()))"
        )
        await daemon.stop()
    }

    @Test func aThousandUnfinishedHandshakesCostOnlyThemselves() async throws {
        // A 5 s deadline: answering 1,000 ClientHellos takes the paced loop about 0.5 s
        // of CPU, which a loaded CI machine stretched past a 1.5 s deadline for 55 of them
        // (closed by the deadline before their answer). Every one must be answered first.
        let daemon = try await Self.start(handshakeTimeoutMilliseconds: 5_000, maxPending: 2_000)
        let quiet = await daemon.pings(from: 100_000)
        let clientHello = try TestCertificates.clientHello(daemon.certificates.clientContext())
        let started = MonotonicNanoseconds.now()
        // A full ClientHello each: the daemon answers every one (its key share, its
        // certificate, its signature), then the client never finishes.
        let peers = try await RawPeer.connect(
            count: 1_000, port: daemon.server.port, on: daemon.thread, firstBytes: clientHello)
        let during = await daemon.pings(from: 1)
        #expect(
            await eventually(timeout: 30) { peers.allSatisfy(\.isClosed) },
            "\(peers.filter { !$0.isClosed }.count) still open")
        let last = peers.compactMap(\.closedAt).max() ?? started
        let answered = peers.filter { !$0.received.isEmpty }.count
        let stats = await daemon.statistics()
        #expect(stats.failuresByReason["timeout"] == 1_000, "\(stats.failuresByReason)")
        #expect(answered == 1_000)
        print(
            "tls-hostile: 1,000 unfinished handshakes (each answered: \(answered)) all closed \(Double(last - started) / 1e9) s after the first connect (deadline 5 s); authenticated ping before \(Self.figures(quiet)), during \(Self.figures(during))"
        )
        #expect(during[during.count * 99 / 100] < 1_000_000, "p99 \(during[during.count * 99 / 100]) µs")
        // Served afterwards as before.
        let after = try await TestClient.connect(
            port: daemon.server.port, on: daemon.thread, tls: daemon.certificates.clientContext())
        #expect(after.tlsInfo != nil)
        after.close()
        await daemon.stop()
    }

    @Test func renegotiationIsRefusedWithAClose() async throws {
        let daemon = try await Self.start { $0.tls.minimumVersion = .tls12 }
        let hostile = try await TestClient.connect(
            port: daemon.server.port, on: daemon.thread, clientID: "renegotiator",
            tls: daemon.certificates.clientContext(maximumVersion: .tls12, allowsRenegotiation: true))
        #expect(hostile.tlsInfo?.protocolVersion == "TLSv1.2")
        hostile.requestRenegotiation()
        #expect(await eventually(timeout: 10) { hostile.isClosed })
        #expect(await until { await daemon.statistics().failuresByReason["renegotiation"] == 1 })
        let pings = await daemon.pings(from: 1)
        #expect(pings.count == 50)
        await daemon.stop()
    }

    @Test func aCloseInTheMiddleOfARecord() async throws {
        let daemon = try await Self.start()
        let cut = try await TestClient.connect(
            port: daemon.server.port, on: daemon.thread, clientID: "cut", tls: daemon.certificates.clientContext())
        // An application-data record header promising 256 bytes, 40 of them, then FIN.
        cut.sendRaw([0x17, 0x03, 0x03, 0x01, 0x00] + [UInt8](repeating: 0xab, count: 40))
        try await Task.sleep(for: .milliseconds(50))
        cut.closeWithoutNotify()
        #expect(await until { await daemon.statistics().failuresByReason["truncated"] == 1 })
        #expect(await until { await daemon.server.withServer { $0.statistics.connectionsCurrent } == 1 })
        let pings = await daemon.pings(from: 1)
        #expect(pings.count == 50)
        await daemon.stop()
    }
}
