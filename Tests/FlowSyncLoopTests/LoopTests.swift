import FlowSyncLoop
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A value shared between the test and the loop thread.
final class Shared<T: Sendable>: Sendable {
    private let value: Mutex<T>
    init(_ v: T) { value = Mutex(v) }
    func get() -> T { value.withLock { $0 } }
    func update(_ f: (inout T) -> Void) { value.withLock { f(&$0) } }
}

/// Polls `condition` every 5 ms for at most `timeout` seconds.
func eventually(_ timeout: Double = 30, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<Int(timeout * 200) {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// Shuts the loop down and checks the libuv contract: nothing left open, and
/// `uv_loop_close` succeeded.
func expectCleanShutdown(_ thread: EventLoopThread, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(thread.shutdown(timeout: 10), "loop thread did not finish", sourceLocation: sourceLocation)
    #expect(thread.loop.handlesOpenAtStop == 0, "handles left open", sourceLocation: sourceLocation)
    #expect(thread.loop.closeResult == 0, "uv_loop_close failed", sourceLocation: sourceLocation)
}

/// Loop-confined objects a test keeps between jobs (only touched on the loop thread).
final class LoopLocal<T>: @unchecked Sendable {
    var value: T
    init(_ v: T) { value = v }
}

@Suite(.timeLimit(.minutes(2))) struct EventLoopTests {
    @Test func startsAndStopsCleanly() throws {
        let thread = try EventLoopThread()
        expectCleanShutdown(thread)
    }

    @Test func executeFromManyThreadsRunsEveryJobOnTheLoop() async throws {
        let thread = try EventLoopThread()
        let count = Shared(0)
        let offLoop = Shared(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<500 {
                        thread.loop.execute {
                            count.update { $0 += 1 }
                            if !thread.loop.inLoopThread { offLoop.update { $0 += 1 } }
                        }
                    }
                }
            }
        }
        #expect(await eventually { count.get() == 2_000 })
        #expect(offLoop.get() == 0)
        expectCleanShutdown(thread)
        #expect(thread.loop.execute {} == false, "a stopped loop refuses jobs")
    }

    @Test func timerRepeatsAndStops() async throws {
        let thread = try EventLoopThread()
        let fired = Shared(0)
        thread.loop.execute {
            let timer = LoopTimer(loop: thread.loop)
            timer.start(after: 1, repeat: 1) {
                fired.update { $0 += 1 }
                if fired.get() == 5 { timer.close() }
            }
        }
        #expect(await eventually { fired.get() == 5 })
        try await Task.sleep(for: .milliseconds(20))
        #expect(fired.get() == 5, "a closed timer does not fire")
        expectCleanShutdown(thread)
    }

    @Test func stopReportsLeakedHandles() async throws {
        let thread = try EventLoopThread()
        thread.loop.execute { LoopTimer(loop: thread.loop).start(after: 60_000) {} }
        #expect(thread.shutdown())
        #expect(thread.loop.handlesOpenAtStop == 1, "the leak detector must see a forgotten timer")
        #expect(thread.loop.closeResult == 0)
    }

    @Test func signalIsDeliveredOnTheLoopThread() async throws {
        let thread = try EventLoopThread()
        let got = Shared<Int32>(0)
        let ready = Shared(false)
        let watcher = LoopLocal<SignalWatcher?>(nil)
        thread.loop.execute {
            watcher.value = try? SignalWatcher(loop: thread.loop, signal: SIGUSR2) { signum in
                got.update { $0 = signum }
                watcher.value?.close()
            }
            ready.update { $0 = true }
        }
        #expect(await eventually { ready.get() })
        kill(getpid(), SIGUSR2)
        #expect(await eventually { got.get() == SIGUSR2 })
        expectCleanShutdown(thread)
    }
}

@Suite(.timeLimit(.minutes(2))) struct TCPTests {
    /// Starts an echo server on 127.0.0.1:0; returns its port.
    func startEchoServer(_ thread: EventLoopThread, listener: LoopLocal<TCPListener?>) async throws -> Int {
        let port = Shared(0)
        thread.loop.execute {
            let l = try! TCPListener(loop: thread.loop, address: SocketAddress(host: "127.0.0.1", port: 0))
            l.onConnection = { connection in
                connection.onRead = { bytes in _ = try? connection.write([Array(bytes)]) }
                connection.onEnd = { _ in connection.shutdownAndClose() }
                try? connection.startReading()
            }
            listener.value = l
            port.update { $0 = l.port }
        }
        #expect(await eventually { port.get() != 0 })
        return port.get()
    }

    @Test func echoRoundTripOfOneMegabyte() async throws {
        let thread = try EventLoopThread()
        let listener = LoopLocal<TCPListener?>(nil)
        let port = try await startEchoServer(thread, listener: listener)
        let payload = (0..<1_048_576).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let received = Shared<[UInt8]>([])
        let ended = Shared(false)
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed: \(result)")
                    return
                }
                client.onRead = { bytes in
                    received.update { $0.append(contentsOf: bytes) }
                    if received.get().count == payload.count { client.shutdownAndClose() }
                }
                client.onEnd = { _ in ended.update { $0 = true } }
                try! client.startReading()
                // 64 frames of 16 KiB in one call: one write call where possible.
                let chunks = stride(from: 0, to: payload.count, by: 16_384).map {
                    Array(payload[$0..<min($0 + 16_384, payload.count)])
                }
                _ = try! client.write(chunks)
            }
        }
        #expect(await eventually { received.get().count == payload.count })
        #expect(received.get() == payload)
        #expect(await eventually { ended.get() })
        thread.loop.execute { listener.value?.close() }
        expectCleanShutdown(thread)
    }

    /// `write(_:skipping:)` (the rest of a send the daemon's io_uring path began) sends
    /// the slice's bytes after the skipped ones, in order, by each of its routes: the
    /// stack iovec (≤ 64 chunks), the joined buffer (> 64), and a remainder too large for
    /// the socket, copied for `uv_write`. The echo must be exactly the expected bytes.
    @Test func writeSkippingSendsTheRestInOrderByEveryRoute() async throws {
        let thread = try EventLoopThread()
        let listener = LoopLocal<TCPListener?>(nil)
        let port = try await startEchoServer(thread, listener: listener)
        func chunks(_ count: Int, _ size: Int, _ salt: Int) -> [[UInt8]] {
            (0..<count).map { c in (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ c &* 13 &+ salt) } }
        }
        // (chunks, slice start, bytes skipped)
        let writes: [([[UInt8]], Int, Int)] = [
            (chunks(3, 100, 1), 0, 10),  // into the first chunk
            (chunks(5, 100, 2), 1, 100),  // a slice, skipping exactly its first chunk
            (chunks(100, 50, 3), 2, 2_000 - 1),  // > 64 chunks: the joined buffer
            (chunks(4, 1 << 20, 4), 0, (1 << 20) + 7),  // 3 MiB left: most of it through uv_write
        ]
        let expected = writes.flatMap { (all, start, skip) in Array(all[start...].flatMap { $0 }.dropFirst(skip)) }
        let received = Shared<[UInt8]>([])
        let ended = Shared(false)
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed: \(result)")
                    return
                }
                client.onRead = { bytes in
                    received.update { $0.append(contentsOf: bytes) }
                    if received.get().count == expected.count { client.shutdownAndClose() }
                }
                client.onEnd = { _ in ended.update { $0 = true } }
                try! client.startReading()
                for (all, start, skip) in writes { _ = try! client.write(all[start...], skipping: skip) }
            }
        }
        #expect(await eventually { received.get().count >= expected.count })
        #expect(received.get() == expected)
        #expect(await eventually { ended.get() })
        thread.loop.execute { listener.value?.close() }
        expectCleanShutdown(thread)
    }

    /// Every stream on a loop reads into the loop's one buffer: 40 connections stream
    /// 256 KiB each, all at once, each with its own byte pattern, through one echo
    /// server (80 streams on the loop). Every client must get back exactly its own bytes.
    @Test func manyStreamsSharingTheLoopsReadBufferKeepTheirOwnBytes() async throws {
        let thread = try EventLoopThread()
        let listener = LoopLocal<TCPListener?>(nil)
        let port = try await startEchoServer(thread, listener: listener)
        let clients = 40
        let size = 262_144
        @Sendable func pattern(_ c: Int) -> [UInt8] {
            (0..<size).map { UInt8(truncatingIfNeeded: $0 &* (2 * c + 1) &+ c) }
        }
        let received = Shared<[[UInt8]]>(Array(repeating: [], count: clients))
        let closed = Shared(0)
        thread.loop.execute {
            for c in 0..<clients {
                TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) {
                    result in
                    guard case .success(let client) = result else {
                        Issue.record("connect failed: \(result)")
                        return
                    }
                    client.onRead = { bytes in
                        var count = 0
                        received.update { all in
                            all[c].append(contentsOf: bytes)
                            count = all[c].count
                        }
                        if count >= size { client.shutdownAndClose() }
                    }
                    client.onClose = { closed.update { $0 += 1 } }
                    try! client.startReading()
                    let bytes = pattern(c)
                    _ = try! client.write(stride(from: 0, to: size, by: 8_192).map { Array(bytes[$0..<($0 + 8_192)]) })
                }
            }
        }
        #expect(await eventually(60) { closed.get() == clients })
        let all = received.get()
        for c in 0..<clients {
            #expect(all[c] == pattern(c), "client \(c) got \(all[c].count) bytes, not its own \(size)")
        }
        thread.loop.execute { listener.value?.close() }
        expectCleanShutdown(thread)
    }

    @Test func queuedBytesRiseForAStalledReaderAndDrainAfterwards() async throws {
        let thread = try EventLoopThread()
        let serverSide = LoopLocal<TCPConnection?>(nil)
        let clientSide = LoopLocal<TCPConnection?>(nil)
        let listener = LoopLocal<TCPListener?>(nil)
        let queued = Shared(0)
        let drained = Shared(false)
        let port = Shared(0)
        thread.loop.execute {
            let l = try! TCPListener(loop: thread.loop, address: SocketAddress(host: "127.0.0.1", port: 0))
            l.onConnection = { connection in
                serverSide.value = connection
                connection.onDrain = { drained.update { $0 = true } }
                // The client is not reading: the kernel buffers fill, libuv queues.
                let frame = [UInt8](repeating: 7, count: 65_536)
                var last = 0
                for _ in 0..<256 { last = (try? connection.write([frame])) ?? last }
                queued.update { $0 = last }
            }
            listener.value = l
            port.update { $0 = l.port }
        }
        #expect(await eventually { port.get() != 0 })
        let total = Shared(0)
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port.get())) {
                result in
                clientSide.value = try? result.get()
            }
        }
        #expect(await eventually { queued.get() > 0 }, "16 MiB to a non-reading peer must queue")
        #expect(!drained.get())
        thread.loop.execute {
            clientSide.value?.onRead = { bytes in total.update { $0 += bytes.count } }
            try? clientSide.value?.startReading()
        }
        #expect(await eventually { drained.get() })
        #expect(await eventually { total.get() == 256 * 65_536 })
        let after = Shared(-1)
        thread.loop.execute { after.update { $0 = serverSide.value?.queuedBytes ?? -1 } }
        #expect(await eventually { after.get() == 0 })
        thread.loop.execute {
            serverSide.value?.close()
            clientSide.value?.close()
            listener.value?.close()
        }
        expectCleanShutdown(thread)
    }

    @Test func connectToAClosedPortFailsWithECONNREFUSED() async throws {
        let thread = try EventLoopThread()
        let error = Shared<String>("")
        // Bind then close a listener to find a port nobody listens on.
        let port = Shared(0)
        thread.loop.execute {
            let l = try! TCPListener(loop: thread.loop, address: SocketAddress(host: "127.0.0.1", port: 0))
            port.update { $0 = l.port }
            l.close()
        }
        #expect(await eventually { port.get() != 0 })
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port.get())) {
                result in
                if case .failure(let e) = result { error.update { $0 = e.name } }
            }
        }
        #expect(await eventually { !error.get().isEmpty })
        #expect(error.get() == "ECONNREFUSED")
        expectCleanShutdown(thread)
    }

    @Test func badAddressIsATypedError() {
        #expect(throws: UVError.self) { try SocketAddress(host: "not an address", port: 1) }
    }
}
