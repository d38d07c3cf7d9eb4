// `flowsync-server-bench --tls [--quick] [--rounds N]`: issue #32's figures, each against
// plaintext in the same run (docs/BENCHMARKS.md, "TLS"):
// 1. fan-out to 1,000 subscribers, TLS against plaintext, rounds interleaved (a fresh
//    release flowsyncd per run): deliveries per daemon CPU-second and row changes/s;
// 2. full handshakes (TLS 1.3, ECDSA P-256, X25519) per CPU-second: the engine alone in
//    memory (the server side's thread CPU time), and through the daemon (its process
//    CPU time per connection set up: TCP, handshake, Hello, Welcome) against plaintext
//    set-ups (TCP, Hello, Welcome);
// 3. daemon RSS per idle subscribed connection, TLS against plaintext; and what one
//    idle server session itself keeps in memory (malloc's bytes in use).
// The certificate is a throw-away self-signed P-256 one made with `openssl` for the run.
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTLS
import FlowSyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// TLS for the bench's light subscribers: a channel per connection on `thread`, whose
/// plaintext goes to the frame counter.
enum BenchTLS {
    /// One scratch for the bench's loop thread (every channel runs on it).
    nonisolated(unsafe) static let scratch = TLSScratch()

    struct IO: TLSChannelIO {
        let counter: FrameCounter
        let tcp: TCPConnection
        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { _ = try? tcp.write(bytes: bytes) }
        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) { counter.consume(bytes) }
        mutating func handshakeCompleted(_ info: TLSConnectionInfo) { counter.handshakes += 1 }
        mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? {
            if case .failed(let reason, let text) = info.peerVerification { return .connection(reason, text) }
            return nil
        }
        mutating func channelEnded(_ failure: TLSError?) { tcp.close() }
    }

    /// Loop thread only: wraps `tcp` in TLS and queues `first` until the handshake is done.
    static func start(_ context: TLSContext, on tcp: TCPConnection, counter: FrameCounter, first: [[UInt8]]) {
        guard let channel = try? TLSChannel(context: context, serverName: "localhost", scratch: scratch) else { return }
        tcp.onRead = { bytes in
            var io = IO(counter: counter, tcp: tcp)
            channel.received(bytes, &io)
        }
        try? tcp.startReading()
        var io = IO(counter: counter, tcp: tcp)
        channel.start(&io)
        channel.send(first, &io)
    }
}

enum TLSBench {
    static func run(quick: Bool) async throws -> Int32 {
        let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 3
        let directory = NSTemporaryDirectory() + "flowsync-tls-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = directory + "/cert.pem", key = directory + "/key.pem"
        let made = try await ChildProcess.run(
            "/usr/bin/openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key,
                "-out", certificate,
            ])
        guard made.status == 0 else { fatalError("openssl: \(made)") }
        var clientOptions = TLSContext.ClientOptions()
        clientOptions.additionalTrustedRootsFile = certificate
        let client = try TLSContext.client(clientOptions)
        // `--record-layer openssl|flowsync`: the daemon's `tls.record_layer` (and the
        // in-memory sessions'), so both record layers can be measured by one build.
        let recordLayer = arguments.firstIndex(of: "--record-layer").flatMap {
            TLSContext.RecordLayer(rawValue: arguments[$0 + 1])
        }
        var serverOptions = TLSContext.ServerOptions(certificateChainFile: certificate, privateKeyFile: key)
        if let recordLayer { serverOptions.recordLayer = recordLayer }
        let server = try TLSContext.server(serverOptions)
        var tlsConfig = "[tls]\nmode = \"required\"\ncertificate_file = \"\(certificate)\"\nkey_file = \"\(key)\"\n"
        if let recordLayer { tlsConfig += "record_layer = \"\(recordLayer.rawValue)\"\n" }
        let variants: [(label: String, config: String, tls: TLSContext?)] = [
            ("plaintext", "", nil), ("tls", tlsConfig, client),
        ]

        say("# flowsync-server-bench --tls\(quick ? " (quick)" : "")\n")
        say("Started \(Date()) UTC; load average \(loadAverage()); \(TLSContext.libraryVersion)\n")
        say("TLS record layer: \(recordLayer?.rawValue ?? "the daemon's default")\n")

        if arguments.contains("--send-only") {
            for sessions in [1, 1_000] {
                for size in [120, 600, 1_500, 16_000] {
                    let perSend = try sendCost(
                        server: server, client: client, frameBytes: size, count: 200_000, sessions: sessions)
                    say("\(sessions) sessions, one \(size)-byte frame: \(String(format: "%.2f", perSend)) µs")
                }
            }
            return 0
        }

        // 1. Fan-out.
        let subscribersPerRun = quick ? 50 : 1_000
        say("## Fan-out to \(subscribersPerRun) subscribers, TLS against plaintext\n")
        say(
            "| round | wire | subscribers | batches | batches/s | frame deliveries/s | row changes delivered/s | p50 write→ack | daemon CPU | deliveries per daemon CPU-s | CPU per delivery | of which user | checked replica |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        var perCPU: [String: [Double]] = [:], rows: [String: [Double]] = [:]
        var allOK = true
        for round in 1...rounds {
            for variant in round % 2 == 1 ? variants : variants.reversed() {
                let daemon = try await startDaemon(configText: variant.config)
                do {
                    let writer = try await TestClient.connect(
                        port: daemon.port, on: thread, clientID: "writer-\(variant.label)-\(round)", tls: variant.tls)
                    let row = try await fanOutRow(
                        daemon: daemon, writer: writer, count: subscribersPerRun, list: "fan-\(variant.label)-\(round)",
                        duration: quick ? 1.0 : 5.0, tls: variant.tls)
                    say("| \(round) | \(variant.label) " + row.line)
                    perCPU[variant.label, default: []].append(row.perCPUSecond)
                    rows[variant.label, default: []].append(row.rowChangesPerSecond)
                    allOK = allOK && row.ok
                    writer.close()
                } catch {
                    await daemon.terminate()
                    throw error
                }
                await daemon.terminate()
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        for (name, figures) in [("deliveries per daemon CPU-second", perCPU), ("row changes delivered/s", rows)] {
            let plain = figures["plaintext"] ?? [], tls = figures["tls"] ?? []
            if let p = plain.min(), let P = plain.max(), let t = tls.min(), let T = tls.max(), p > 0 {
                say(
                    "\nTLS ÷ plaintext, \(name): \(String(format: "%.2f", t / P))–\(String(format: "%.2f", T / p))× (worst pairing to best); medians \(format(median(plain))) vs \(format(median(tls))): \(String(format: "%.2f", median(tls) / median(plain)))×"
                )
            }
        }

        // Encrypting one frame for one subscriber, in memory (what TLS adds per delivery).
        say(
            "\nIn memory, one frame encrypted for one peer (`TLSChannel.send`, buffers released after it, the ciphertext handed over), µs of CPU per send:\n"
        )
        say("| frame | 1 session | 1,000 sessions, round robin |")
        say("| --- | --- | --- |")
        for size in [120, 600, 1_500, 16_000] {
            let one = try sendCost(server: server, client: client, frameBytes: size, count: quick ? 2_000 : 50_000)
            let many = try sendCost(
                server: server, client: client, frameBytes: size, count: quick ? 2_000 : 50_000,
                sessions: quick ? 50 : 1_000)
            say("| \(size) bytes | \(String(format: "%.2f", one)) | \(String(format: "%.2f", many)) |")
        }

        // 2. Handshakes.
        say("\n## Full handshakes per CPU-second (TLS 1.3, ECDSA P-256 certificate)\n")
        let engineCount = quick ? 200 : 4_000
        let engine = try engineHandshakes(server: server, client: client, count: engineCount)
        say(
            "In memory, the engine alone (the server side's thread CPU time, its channel's release included; client work not counted): \(engineCount) handshakes, \(String(format: "%.1f", engine.serverMicroseconds)) µs of server CPU each: **\(format(1e6 / engine.serverMicroseconds)) handshakes per CPU-second**; \(engine.version), \(engine.cipher).\n"
        )
        let setupCount = quick ? 200 : 3_000
        say(
            "Through the daemon: \(setupCount) connections set up one after another, 32 at a time (connect, then TLS or not, Hello, Welcome, close); the daemon's process CPU time per set-up:\n"
        )
        say("| round | wire | connections | wall | set-ups/s (wall) | daemon CPU | set-ups per daemon CPU-s |")
        say("| --- | --- | --- | --- | --- | --- | --- |")
        var setups: [String: [Double]] = [:]
        for round in 1...rounds {
            for variant in round % 2 == 1 ? variants : variants.reversed() {
                let daemon = try await startDaemon(configText: variant.config)
                let before = daemon.sample()?.cpuSeconds ?? 0
                let start = now()
                let done = await connectionSetups(setupCount, port: daemon.port, tls: variant.tls)
                let wall = now() - start
                let cpu = (daemon.sample()?.cpuSeconds ?? 0) - before
                say(
                    "| \(round) | \(variant.label) | \(done) | \(String(format: "%.2f", wall)) s | \(format(Double(done) / wall)) | \(String(format: "%.2f", cpu)) s | \(cpu > 0 ? format(Double(done) / cpu) : "-") |"
                )
                if cpu > 0 { setups[variant.label, default: []].append(Double(done) / cpu) }
                allOK = allOK && done == setupCount
                await daemon.terminate()
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        say(
            "\nMedians: plaintext \(format(median(setups["plaintext"] ?? []))), TLS \(format(median(setups["tls"] ?? []))) set-ups per daemon CPU-second."
        )

        // 3. Memory per idle connection.
        let idle = quick ? 200 : 5_000
        say("\n## Daemon RSS per idle subscribed connection, TLS against plaintext (\(idle) connections)\n")
        say("| wire | connections | daemon RSS before | after | per connection |")
        say("| --- | --- | --- | --- | --- |")
        for variant in variants {
            // Every connection is opened at once: the pre-auth cap (1,024 by default) and
            // deadline would refuse most TLS ones while their handshakes queue.
            // Info: the allocator trims are logged with their duration (printed below).
            let daemon = try await startDaemon(
                configText:
                    "[limits]\nmax_connections = 30000\nhandshake_timeout_ms = 60000\n[auth]\nmax_pending_handshakes = 30000\n"
                    + variant.config,
                logLevel: "info")
            try await Task.sleep(for: .milliseconds(500))
            let before = daemon.rssKiB
            let counters = await subscribers(idle, port: daemon.port, list: "idle", tls: variant.tls)
            // 2 s: the daemon trims the allocator at most once a second after a burst of
            // handshakes (AllocatorTrimPolicy), so the last trim is in.
            try await Task.sleep(for: .milliseconds(2_000))
            let after = daemon.rssKiB
            let established = counters.filter { $0.frames >= 2 }.count
            say(
                "| \(variant.label) | \(established) | \(before) KiB | \(after) KiB | \(format(Double(after - before) * 1024 / Double(max(established, 1)))) bytes |"
            )
            allOK = allOK && established == idle
            for line in daemon.output.split(separator: "\n") where line.contains("allocator trimmed") {
                say("\n    daemon (\(variant.label)): \(line)")
            }
            await daemon.terminate()
            try await Task.sleep(for: .milliseconds(500))
        }
        // What one idle server session itself keeps (malloc's bytes in use, exact; RSS
        // above also holds the allocator's free holes and the handshake's peak).
        let retainedCount = quick ? 200 : 2_000
        let retained = try retainedSessionBytes(server: server, client: client, count: retainedCount)
        say(
            "\nIn memory, \(retainedCount) idle server sessions after a full handshake (malloc's bytes in use from glibc's `malloc_info`, this process): **\(format(retained.perSession)) bytes per session** (OpenSSL's `SSL` with its two memory BIOs, and the channel's Swift objects); a session freed: \(format(retained.freedPerSession)) bytes back each; a fresh server channel before any handshake (`SSL_new` and two memory BIOs): \(format(retained.freshPerSession)) bytes."
        )
        say("\nLoad average at the end: \(loadAverage()).")
        _ = thread.shutdown()
        return allOK ? 0 : 1
    }

    /// `count` full handshakes between two in-memory channels; the server side's CPU
    /// time per handshake (CLOCK_THREAD_CPUTIME_ID around its calls only).
    static func engineHandshakes(
        server: TLSContext, client: TLSContext, count: Int
    ) throws -> (serverMicroseconds: Double, version: String, cipher: String) {
        final class End {
            var out: [UInt8] = []
            var info: TLSConnectionInfo?
        }
        struct IO: TLSChannelIO {
            let end: End
            mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { end.out += bytes }
            mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {}
            mutating func handshakeCompleted(_ info: TLSConnectionInfo) { end.info = info }
            mutating func channelEnded(_ failure: TLSError?) {}
        }
        func threadCPU() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        let scratch = TLSScratch()
        var serverSeconds = 0.0
        var last: TLSConnectionInfo?
        for _ in 0..<count {
            let s = End(), c = End()
            let serverStart = threadCPU()
            var serverChannel: TLSChannel? = try TLSChannel(context: server, scratch: scratch)
            serverSeconds += threadCPU() - serverStart
            let clientChannel = try TLSChannel(context: client, serverName: "localhost", scratch: scratch)
            var cio = IO(end: c), sio = IO(end: s)
            clientChannel.start(&cio)
            for _ in 0..<10 where !(c.out.isEmpty && s.out.isEmpty) {
                let toServer = c.out
                c.out = []
                let t0 = threadCPU()
                toServer.withUnsafeBytes { serverChannel!.received($0, &sio) }
                serverSeconds += threadCPU() - t0
                let toClient = s.out
                s.out = []
                toClient.withUnsafeBytes { clientChannel.received($0, &cio) }
            }
            guard s.info != nil, c.info != nil else { fatalError("an in-memory handshake did not complete") }
            last = s.info
            // The session's release is counted too: the own record layer frees the `SSL`
            // inside the handshake's last step, OpenSSL's record layer only here, so
            // without it the two would not be compared on the same work.
            let freeStart = threadCPU()
            serverChannel = nil
            serverSeconds += threadCPU() - freeStart
        }
        return (serverSeconds / Double(count) * 1e6, last?.protocolVersion ?? "?", last?.cipher ?? "?")
    }

    /// CPU time (this thread) per `send` of one `frameBytes` frame on an established
    /// server channel whose ciphertext is handed to a sink, as the daemon's flush does.
    static func sendCost(
        server: TLSContext, client: TLSContext, frameBytes: Int, count: Int, sessions: Int = 1
    ) throws -> Double {
        final class End {
            var out: [UInt8] = []
            var done = false
            var sink = 0
        }
        struct IO: TLSChannelIO {
            let end: End
            mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) {
                if end.done { end.sink &+= bytes.count } else { end.out += bytes }
            }
            mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {}
            mutating func handshakeCompleted(_ info: TLSConnectionInfo) { end.done = true }
            mutating func channelEnded(_ failure: TLSError?) {}
        }
        let scratch = TLSScratch()
        var servers: [(TLSChannel, IO)] = []
        var clients: [TLSChannel] = []
        for _ in 0..<sessions {
            let s = End(), c = End()
            let serverChannel = try TLSChannel(context: server, scratch: scratch)
            let clientChannel = try TLSChannel(context: client, serverName: "localhost", scratch: scratch)
            var sio = IO(end: s), cio = IO(end: c)
            clientChannel.start(&cio)
            for _ in 0..<10 where !(c.out.isEmpty && s.out.isEmpty) {
                let toServer = c.out
                c.out = []
                toServer.withUnsafeBytes { serverChannel.received($0, &sio) }
                let toClient = s.out
                s.out = []
                toClient.withUnsafeBytes { clientChannel.received($0, &cio) }
            }
            guard s.done else { fatalError("an in-memory handshake did not complete") }
            servers.append((serverChannel, sio))
            clients.append(clientChannel)
        }
        let frame = [[UInt8]](repeating: (0..<frameBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }, count: 1)
        func threadCPU() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        let start = threadCPU()
        // Round robin, as a fan-out visits its subscribers: with many sessions each
        // send finds its session's state cold in the caches.
        for k in 0..<count {
            let index = k % sessions
            servers[index].0.send(frame, &servers[index].1)
            servers[index].0.releaseIdleBuffers()
        }
        return (threadCPU() - start) / Double(count) * 1e6
    }

    /// `count` server channels kept after a full in-memory handshake each (buffers
    /// released as the daemon does after a read): malloc's bytes in use per channel
    /// (`mallocBytesInUse()`, exact whatever the fragmentation), and what freeing them
    /// gave back. The client side of each handshake is freed before the next one.
    static func retainedSessionBytes(
        server: TLSContext, client: TLSContext, count: Int
    ) throws -> (perSession: Double, freedPerSession: Double, freshPerSession: Double) {
        final class End {
            var out: [UInt8] = []
            var done = false
        }
        struct IO: TLSChannelIO {
            let end: End
            mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { end.out += bytes }
            mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {}
            mutating func handshakeCompleted(_ info: TLSConnectionInfo) { end.done = true }
            mutating func channelEnded(_ failure: TLSError?) {}
        }
        let scratch = TLSScratch()
        // One handshake first, so that OpenSSL's one-time allocations (error strings,
        // method tables, the context's caches) are not counted per session.
        var kept: [TLSChannel] = []
        kept.reserveCapacity(count + 1)
        func handshake() throws -> TLSChannel {
            let s = End(), c = End()
            let serverChannel = try TLSChannel(context: server, scratch: scratch)
            var sio = IO(end: s)
            do {
                let clientChannel = try TLSChannel(context: client, serverName: "localhost", scratch: scratch)
                var cio = IO(end: c)
                clientChannel.start(&cio)
                for _ in 0..<10 where !(c.out.isEmpty && s.out.isEmpty) {
                    let toServer = c.out
                    c.out = []
                    toServer.withUnsafeBytes { serverChannel.received($0, &sio) }
                    let toClient = s.out
                    s.out = []
                    toClient.withUnsafeBytes { clientChannel.received($0, &cio) }
                }
            }
            guard s.done, c.done else { fatalError("an in-memory handshake did not complete") }
            serverChannel.releaseIdleBuffers()
            return serverChannel
        }
        kept.append(try handshake())
        // The same number of fresh server channels, no handshake yet: what SSL_new and
        // the two BIOs cost before a byte was read.
        let fresh0 = mallocBytesInUse()
        var fresh: [TLSChannel] = []
        fresh.reserveCapacity(count)
        for _ in 0..<count { fresh.append(try TLSChannel(context: server, scratch: scratch)) }
        let fresh1 = mallocBytesInUse()
        fresh.removeAll()
        let before = mallocBytesInUse()
        for _ in 0..<count { kept.append(try handshake()) }
        let after = mallocBytesInUse()
        kept.removeLast(count)
        let freed = mallocBytesInUse()
        return (
            Double(after - before) / Double(count), Double(after - freed) / Double(count),
            Double(fresh1 - fresh0) / Double(count)
        )
    }

    /// malloc's bytes in use in this process: every arena's size less its free chunks
    /// (the top chunk included), plus the mmapped chunks, from glibc's `malloc_info`
    /// (Swift's Glibc module exports neither it nor `mallinfo2`, hence `dlsym`).
    static func mallocBytesInUse() -> Int {
        typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        guard let symbol = dlsym(nil, "malloc_info") else { fatalError("no malloc_info in this libc") }
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { fatalError("open_memstream failed") }
        _ = unsafeBitCast(symbol, to: MallocInfo.self)(0, stream)
        fclose(stream)
        defer { free(buffer) }
        // The totals follow the last </heap>: fast and rest (free), mmap, system current.
        let text = buffer.map { String(cString: $0) } ?? ""
        let totals = text.components(separatedBy: "</heap>").last ?? ""
        func total(_ tag: String) -> Int {
            // e.g. <total type="rest" count="1" size="50224"/>: the size attribute.
            guard let line = totals.split(separator: "\n").first(where: { $0.contains(tag) }),
                let start = line.range(of: " size=\"")?.upperBound,
                let value = Int(line[start...].prefix(while: \.isNumber))
            else { fatalError("malloc_info: no \(tag)") }
            return value
        }
        return total("<system type=\"current\"") - total("<total type=\"fast\"") - total("<total type=\"rest\"")
            + total("<total type=\"mmap\"")
    }

    /// Sets up `count` connections, 32 at a time: connect, (TLS), Hello, wait for the
    /// Welcome, close. Returns how many got their Welcome.
    static func connectionSetups(_ count: Int, port: Int, tls: TLSContext?) async -> Int {
        let done = Shared(0)
        let hello = FrameEncoder(configuration: .disabled).encode(
            .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "bench", clientID: "setup", authToken: nil)))
        final class Pump: @unchecked Sendable {
            var started = 0
        }
        let pump = Pump()
        @Sendable func next() {
            guard pump.started < count else { return }
            pump.started += 1
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { result in
                guard case .success(let tcp) = result else {
                    next()
                    return
                }
                let counter = FrameCounter()
                counter.onFrame = { [weak tcp] in
                    // The Welcome: this set-up is done.
                    tcp?.close()
                    done.update { $0 += 1 }
                    next()
                }
                if let tls {
                    BenchTLS.start(tls, on: tcp, counter: counter, first: [hello])
                } else {
                    tcp.onRead = { counter.consume($0) }
                    try? tcp.startReading()
                    _ = try? tcp.write([hello])
                }
            }
        }
        thread.loop.execute { for _ in 0..<32 { next() } }
        _ = await eventually(timeout: 300) { done.get() >= count }
        return done.get()
    }
}
