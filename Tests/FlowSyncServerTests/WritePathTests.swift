import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport
import Logging
import Testing

@testable import FlowSyncServer

/// Keeps every log message, for the fallback's log line.
struct CapturingLogHandler: LogHandler {
    let messages: Shared<[(Logger.Level, String)]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        messages.update { $0.append((level, "\(message)")) }
    }
}

/// `[server] write_path`: the key, its reload rule, and end to end on 127.0.0.1 port 0 —
/// every subscriber gets every frame, in order, through libuv and through io_uring,
/// including frames that fill the sockets (short sends and `EAGAIN` handed to libuv).
@Suite(.serialized, .timeLimit(.minutes(3))) struct WritePathTests {
    /// Whether this kernel lets the test process create a ring (a sandbox may not).
    static let ringAvailable: Bool = (try? SendRing(sends: 1, buffers: 1)) != nil

    @Test func theFlushSliceKeyIsReadCheckedAndReloadable() throws {
        #expect(ServerConfiguration().flushSliceMicroseconds == 1_000)
        #expect(try ServerConfiguration(toml: "[server]\nflush_slice_us = 0\n").flushSliceMicroseconds == 0)
        #expect(try ServerConfiguration(toml: "[server]\nflush_slice_us = 2500\n").flushSliceMicroseconds == 2_500)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(toml: "[server]\nflush_slice_us = -1\n") }
        var new = ServerConfiguration()
        new.flushSliceMicroseconds = 0
        new.sealWaitMicroseconds = 5_000
        let (applied, ignored) = ServerConfiguration().reloaded(to: new)
        #expect(
            applied.flushSliceMicroseconds == 0 && applied.sealWaitMicroseconds == 5_000 && ignored.isEmpty,
            "both are read at every turn: a reload applies them")
    }

    @Test func theKeyIsReadAndCheckedAndDefaultsToLibuv() throws {
        #expect(ServerConfiguration().writePath == .libuv)
        #expect(try ServerConfiguration(toml: "[server]\nwrite_path = \"io_uring\"\n").writePath == .ioUring)
        #expect(try ServerConfiguration(toml: "[server]\nwrite_path = \"auto\"\n").writePath == .auto)
        #expect(try ServerConfiguration(toml: "[server]\nwrite_path = \"libuv\"\n").writePath == .libuv)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(toml: "[server]\nwrite_path = \"uring\"\n") }
        do {
            _ = try ServerConfiguration(toml: "[server]\nwrite_path = \"uring\"\n")
        } catch {
            #expect(error.key == "server.write_path" && error.problem.contains("\"io_uring\""))
        }
    }

    @Test func aReloadKeepsTheRunningWritePath() {
        var running = ServerConfiguration()
        running.writePath = .ioUring
        var new = running
        new.writePath = .libuv
        let (applied, ignored) = running.reloaded(to: new)
        #expect(applied.writePath == .ioUring)
        #expect(ignored.contains("server.write_path"))
    }

    @Test(arguments: [WritePath.libuv, .ioUring, .auto])
    func theServerUsesTheRingOnlyWhenAskedAndAvailable(path: WritePath) async throws {
        var configuration = ServerConfiguration()
        configuration.writePath = path
        let server = try await EmbeddedServer(configuration: configuration)
        let active = await server.withServer { $0.activeWritePath }
        #expect(active == (path == .libuv || !Self.ringAvailable ? .libuv : .ioUring))
        #expect(await server.stop())
    }

    /// A ring the kernel refuses (here: more entries than io_uring allows, `EINVAL`; on
    /// a kernel without io_uring, `ENOSYS`) leaves the flush on libuv, with a log line:
    /// a warning when `io_uring` was asked for, info under `auto`.
    @Test(arguments: [WritePath.ioUring, .auto])
    func aRefusedRingFallsBackToLibuvWithALogLine(path: WritePath) async throws {
        var configuration = ServerConfiguration()
        configuration.writePath = path
        let messages = Shared<[(Logger.Level, String)]>([])
        let logger = Logger(label: "write-path-test") { _ in CapturingLogHandler(messages: messages) }
        let thread = try EventLoopThread()
        let server = LoopConfined<Server?>(nil)
        let active = Shared<WritePath?>(nil)
        thread.loop.execute { [configuration] in
            let s = Server(configuration: configuration, loop: thread.loop, logger: logger, store: InMemoryStore())
            s.ringSize = (sends: 65_536, buffers: 65_536)  // past IORING_MAX_ENTRIES (32,768)
            s.startWritePath()
            active.set(s.activeWritePath)
            server.value = s
        }
        #expect(await eventually { active.get() != nil })
        #expect(active.get() == .libuv)
        let fallback = messages.get().filter { $0.1.contains("io_uring unavailable, writing with libuv") }
        #expect(fallback.count == 1)
        #expect(fallback.first?.0 == (path == .ioUring ? .warning : .info))
        thread.loop.execute { server.value = nil }
        #expect(thread.shutdown())
    }

    /// 100 subscribers of three lists; the writer writes all three in one turn, so each
    /// subscriber gets several frames per turn (one gathered send of three iovecs).
    /// With a 1 µs flush slice every flush stops after a few connections and the rest
    /// follow in the next turns, while new batches join their queues: still every frame,
    /// once, in order; and the loop goes back to sleeping once everything is written.
    @Test(arguments: [WritePath.libuv, .ioUring], [0, 1])
    func everySubscriberGetsEveryFrameInOrder(path: WritePath, slice: Int) async throws {
        var configuration = ServerConfiguration()
        configuration.writePath = path
        configuration.flushSliceMicroseconds = slice
        let server = try await EmbeddedServer(configuration: configuration)
        let clients = try EventLoopThread()
        let lists = ["a", "b", "c"]
        var subscribers: [TestClient] = []
        for k in 0..<100 {
            let c = try await TestClient.connect(port: server.port, on: clients, clientID: "s\(k)")
            for list in lists { c.send(.subscribe(Subscribe(listName: list, resumeFrom: nil, digest: nil))) }
            subscribers.append(c)
        }
        for c in subscribers {
            for list in lists {
                #expect(
                    await c.waitFor {
                        if case .snapshot(let s) = $0 { return s.listName == list } else { return false }
                    } != nil)
            }
        }
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "w")
        var bases: [String: ListVersion] = [:]
        for (k, list) in lists.enumerated() {
            // Seqs are unique over the three lists: the writer's inbox holds every ack.
            let base = try #require(await position(of: server, list))
            bases[list] = try await commit(
                writer, list, seq: UInt64(k), base: base, [.insertSections([Section(id: "s")], at: 0)])
        }
        let rounds = 30
        for round in 1...rounds {
            // Three mutations sent back to back: they are read and sealed in one turn.
            for (k, list) in lists.enumerated() {
                let seq = UInt64(round * 10 + k)
                writer.send(
                    .mutate(
                        Mutate(
                            listName: list, clientID: writer.clientID, seq: seq, base: bases[list]!,
                            operations: [
                                .insertRows([Row(id: "r\(round)", text: "{\"round\":\(round)}")], in: .id("s"), at: 0)
                            ])))
            }
            for (k, list) in lists.enumerated() {
                let seq = UInt64(round * 10 + k)
                let reply = await writer.waitFor({ ack($0, seq: seq) != nil || reject($0, seq: seq) != nil })
                guard let reply, let a = ack(reply, seq: seq) else {
                    Issue.record("no ack for \(list) \(seq): \(reply.map { "\($0)" } ?? "nothing")")
                    return
                }
                bases[list] = a.committed
            }
        }
        for list in lists {
            let expected = await server.withServer { $0.state(of: list)!.director }
            for c in subscribers {
                #expect(
                    await c.waitFor {
                        if case .diff(let d) = $0 {
                            return d.listName == list && d.to == bases[list]!
                        } else {
                            return false
                        }
                    } != nil)
                var replica = Replica()
                replica.apply(c.messages, list: list)
                // Every diff, once, in order: a gap, a duplicate or a reordering is a problem.
                #expect(replica.problems.isEmpty, "\(c.clientID) \(list): \(replica.problems.prefix(3))")
                #expect(replica.diffsApplied == rounds + 1 && replica.director == expected)
            }
        }
        let stats = await server.withServer { $0.statistics }
        if path == .ioUring && Self.ringAvailable {
            #expect(stats.ringSends >= 100 * rounds, "the frames went through the ring")
            #expect(stats.ringSubmissions < stats.ringSends, "many sends per submission")
        } else {
            #expect(stats.ringSends == 0)
        }
        if slice == 0 {
            #expect(stats.flushesSliced == 0)
        } else {
            #expect(stats.flushesSliced > 0, "flushes stopped at their slice")
        }
        // Nothing left to write: the idle handle is stopped, the loop sleeps in its poll
        // again (asked on the loop, between turns; bounded).
        var idle = false
        let idleBy = ContinuousClock.now + .seconds(30)
        while !idle, ContinuousClock.now < idleBy {
            idle = await server.withServer { $0.toFlush.isEmpty && $0.flushIdle?.isActive == false }
            if !idle { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(idle, "the flush idle handle stopped once nothing was left")
        for c in subscribers + [writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    /// Subscribers that stop reading while large frames keep coming fill their sockets:
    /// the ring's sends come back short or with `EAGAIN`, libuv takes the rest and
    /// queues it, later turns stay on libuv while it holds bytes, and once they read
    /// again every frame arrives exactly once, in order.
    @Test(arguments: [WritePath.libuv, .ioUring], [0, 1])
    func fullSocketsHandTheRestToLibuvInOrder(path: WritePath, slice: Int) async throws {
        var configuration = ServerConfiguration()
        configuration.writePath = path
        configuration.flushSliceMicroseconds = slice
        configuration.compressionLevel = 0  // frames keep their size
        // Far above what is sent: nobody is paused or closed, every frame is queued.
        configuration.lowWatermarkBytes = 64 << 20
        configuration.highWatermarkBytes = 128 << 20
        configuration.hardLimitBytes = 256 << 20
        let server = try await EmbeddedServer(configuration: configuration)
        let clients = try EventLoopThread()
        var readers: [TestClient] = []
        for k in 0..<4 {
            let c = try await TestClient.connect(port: server.port, on: clients, clientID: "r\(k)")
            #expect(await subscribe(c, "big") != nil)
            readers.append(c)
        }
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "w")
        var base = try #require(await position(of: server, "big"))
        base = try await commit(writer, "big", seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])
        readers[0].pauseReading()
        readers[1].pauseReading()
        // 200 frames of ~48 KiB: ~10 MiB per subscriber, past any loopback buffer.
        let payload = [UInt8](repeating: 0x42, count: 48 << 10)
        let batches = 200
        for seq in 1...batches {
            var ops: [Operation] = [.insertRows([Row(id: "r\(seq)", payload: payload)], in: .id("s"), at: 0)]
            if seq > 1 { ops.append(.removeRows([.id("r\(seq - 1)")])) }
            base = try await commit(writer, "big", seq: UInt64(seq), base: base, ops)
            // Resume the second reader halfway: its libuv queue drains while frames keep
            // coming, so the route moves back from libuv to the ring under load.
            if seq == batches / 2 { readers[1].resumeReading() }
        }
        let queued = await server.withServer { $0.largestQueue }
        #expect(queued > 1 << 20, "the paused subscriber's socket is full and libuv holds the rest (\(queued) bytes)")
        readers[0].resumeReading()
        let expected = await server.withServer { $0.state(of: "big")!.director }
        for c in readers {
            #expect(
                await c.waitFor(timeout: 60) { if case .diff(let d) = $0 { return d.to == base } else { return false } }
                    != nil, "\(c.clientID) got the last batch")
            var replica = Replica()
            replica.apply(c.messages, list: "big")
            #expect(replica.problems.isEmpty, "\(c.clientID): \(replica.problems.prefix(3))")
            #expect(
                replica.diffsApplied == batches + 1 && replica.director == expected, "\(c.clientID): every batch once")
        }
        let stats = await server.withServer { $0.statistics }
        #expect(stats.slowConsumerEvents == 0)
        if path == .ioUring && Self.ringAvailable {
            #expect(stats.ringRemaindersToLibuv > 0, "some sends came back short or with EAGAIN")
        }
        for c in readers + [writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    /// Half the subscribers close their connections while batches keep coming: their
    /// sends end with the peer gone (EPIPE / ECONNRESET through the ring, or EOF on
    /// read first, whichever the kernel shows first), the server forgets them, and the
    /// other half still gets every batch, once, in order.
    @Test(arguments: [WritePath.libuv, .ioUring], [0, 1])
    func subscribersLeavingMidStreamDoNotDisturbTheOthers(path: WritePath, slice: Int) async throws {
        var configuration = ServerConfiguration()
        configuration.writePath = path
        configuration.flushSliceMicroseconds = slice
        let server = try await EmbeddedServer(configuration: configuration)
        let clients = try EventLoopThread()
        var subscribers: [TestClient] = []
        for k in 0..<40 {
            let c = try await TestClient.connect(port: server.port, on: clients, clientID: "s\(k)")
            #expect(await subscribe(c, "feed") != nil)
            subscribers.append(c)
        }
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "w")
        var base = try #require(await position(of: server, "feed"))
        base = try await commit(writer, "feed", seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])
        let batches = 60
        for seq in 1...batches {
            // Leaving one by one, between commits, while frames are on their way.
            if seq % 3 == 0, seq / 3 <= 20 { subscribers[(seq / 3 - 1) * 2].close() }
            base = try await commit(
                writer, "feed", seq: UInt64(seq), base: base,
                [.insertRows([Row(id: "r\(seq)", text: "{\"n\":\(seq)}")], in: .id("s"), at: 0)])
        }
        let stayed = subscribers.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        // The server's table is loop-confined: asked on its loop until it shows the
        // leavers gone (bounded at 30 s; a passing run returns at the event).
        var current = -1
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            current = await server.withServer { $0.statistics.connectionsCurrent }
            if current == stayed.count + 1 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(current == stayed.count + 1, "the server forgot every leaver")
        let expected = await server.withServer { $0.state(of: "feed")!.director }
        for c in stayed {
            #expect(await c.waitFor { diff($0, to: base.version) != nil } != nil)
            var replica = Replica()
            replica.apply(c.messages, list: "feed")
            #expect(replica.problems.isEmpty, "\(c.clientID): \(replica.problems.prefix(3))")
            #expect(replica.diffsApplied == batches + 1 && replica.director == expected)
        }
        for c in subscribers + [writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }
}
