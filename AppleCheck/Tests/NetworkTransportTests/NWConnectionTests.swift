import Dispatch
import Foundation
@preconcurrency import Network
import Security
import Testing

/// The NWConnection stand-in over a real TCP socket to a local listening socket: the states
/// Apple documents, receive and send completion semantics, end of stream, refusal, reset,
/// cancel, and every callback on the connection's queue.
@Suite(.timeLimit(.minutes(1))) struct NWConnectionTests {
    private func connect(to port: UInt16, tls: Bool = false, queue: TaggedQueue, log: EventLog) -> NWConnection {
        let parameters = tls ? NWParameters(tls: NWProtocolTLS.Options()) : NWParameters.tcp
        let connection = NWConnection(
            host: NWEndpoint.Host("127.0.0.1"), port: NWEndpoint.Port(rawValue: port)!, using: parameters)
        logStates(of: connection, on: queue, into: log)
        connection.start(queue: queue.queue)
        return connection
    }

    @Test func statesArriveInDocumentedOrderOnTheConnectionsQueue() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("states")
        let log = EventLog()
        let connection = connect(to: server.port, queue: queue, log: log)
        #expect(describe(connection.state) != "cancelled")
        let peer = try await server.accept()
        defer { peer.close() }
        #expect(await log.wait(count: 2) == ["preparing", "ready"])
        #expect(describe(connection.state) == "ready")
        connection.cancel()
        #expect(await log.wait(count: 3) == ["preparing", "ready", "cancelled"])
        // The socket is closed: the server sees EOF.
        #expect(await peer.readToEnd().eof)
    }

    @Test func receiveHonoursMinimumAndMaximumAndReportsEndOfStream() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("receive")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        defer { connection.cancel() }
        let peer = try await server.accept()
        await states.wait(count: 2)

        let received = EventLog()
        func receive(_ minimum: Int, _ maximum: Int) {
            connection.receive(minimumIncompleteLength: minimum, maximumLength: maximum) {
                data, context, isComplete, error in
                let text = data.map { String(decoding: $0, as: UTF8.self) } ?? "nil"
                received.append(
                    "\(queue.isCurrent ? "" : "OFF-QUEUE ")\(text)|\(isComplete)|\(error.map(describe) ?? "-")|\(context == nil ? "nocontext" : "context")"
                )
            }
        }
        receive(6, 100)
        receive(1, 2)
        await peer.write("abc")
        // Nothing yet: 3 bytes are below the first receive's minimum, and receives complete in order.
        #expect(await received.wait(count: 1, timeout: .milliseconds(200)).isEmpty)
        await peer.write("def")
        #expect(await received.wait(count: 1) == ["abcdef|false|-|context"])
        await peer.write("ghij")
        // At most the maximum: 2 of the 4 bytes.
        #expect(await received.wait(count: 2).last == "gh|false|-|context")
        peer.close()
        // After EOF what is left comes even below the minimum, with isComplete; then
        // completions without data.
        receive(10, 100)
        #expect(await received.wait(count: 3).last == "ij|true|-|context")
        receive(1, 100)
        #expect(await received.wait(count: 4).last == "nil|true|-|context")
        #expect(states.all == ["preparing", "ready"], "end of stream does not change the state")
    }

    @Test func moreThanTheReadAheadArrivesWhole() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("read-ahead")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        defer { connection.cancel() }
        let peer = try await server.accept()
        await states.wait(count: 2)
        // 10 MiB with no receive waiting: the stand-in reads ahead 4 MiB, then leaves the
        // rest in the kernel until receives drain it.
        let payload = (0..<(10 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let sendable = Unchecked(connection)
        let writer = Task {
            await peer.write(payload)
            peer.close()
        }
        let collected = Collector()
        let done = EventLog()
        @Sendable func next() {
            sendable.value.receive(minimumIncompleteLength: 1, maximumLength: 1 << 20) { data, _, isComplete, error in
                if let data { collected.append(data) }
                if isComplete || error != nil {
                    done.append("\(isComplete)|\(error.map(describe) ?? "-")")
                } else {
                    next()
                }
            }
        }
        try await Task.sleep(for: .milliseconds(200))  // let the read-ahead fill first
        next()
        #expect(await done.wait(count: 1, timeout: .seconds(30)) == ["true|-"])
        await writer.value
        #expect(collected.bytes.count == payload.count)
        #expect(collected.bytes == payload)
    }

    @Test func sendsAreWrittenInCallOrderAndProcessedOnTheQueue() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("send")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        defer { connection.cancel() }
        let peer = try await server.accept()
        defer { peer.close() }
        let processed = EventLog()
        // Queued before ready is fine: Apple sends them once the connection is up.
        let big = [UInt8](repeating: 0x5a, count: 3 << 20)  // larger than the socket buffers: needs the write source
        connection.send(
            content: Data("first,".utf8),
            completion: .contentProcessed { error in
                processed.append("\(queue.isCurrent ? "" : "OFF-QUEUE ")first \(error.map(describe) ?? "ok")")
            })
        connection.send(
            content: Data(big),
            completion: .contentProcessed { error in
                processed.append("\(queue.isCurrent ? "" : "OFF-QUEUE ")big \(error.map(describe) ?? "ok")")
            })
        connection.send(
            content: Data("last".utf8), contentContext: .finalMessage, isComplete: true,
            completion: .contentProcessed { error in
                processed.append("\(queue.isCurrent ? "" : "OFF-QUEUE ")last \(error.map(describe) ?? "ok")")
            })
        let read = await peer.readToEnd()
        #expect(read.eof, "a final message, complete, shuts down the write side (FIN)")
        #expect(read.bytes == Array("first,".utf8) + big + Array("last".utf8))
        #expect(await processed.wait(count: 3) == ["first ok", "big ok", "last ok"])
    }

    @Test func aRefusedConnectionWaitsWithThePOSIXError() async throws {
        let port = try unusedLoopbackPort()
        let queue = TaggedQueue("refused")
        let log = EventLog()
        let connection = connect(to: port, queue: queue, log: log)
        #expect(await log.wait(count: 2) == ["preparing", "waiting(\(posix(.ECONNREFUSED)))"])
        connection.cancel()
        #expect(await log.wait(count: 3).last == "cancelled")
    }

    @Test func aResetFailsTheConnectionAndTheWaitingReceive() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("reset-receive")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        let peer = try await server.accept()
        await states.wait(count: 2)
        let received = EventLog()
        connection.receive(minimumIncompleteLength: 1, maximumLength: 10) { data, _, isComplete, error in
            received.append("\(data == nil ? "nil" : "data")|\(isComplete)|\(error.map(describe) ?? "-")")
        }
        peer.reset()  // often before the receive reaches the queue: the "try, then wait" case
        #expect(await received.wait(count: 1) == ["nil|false|\(posix(.ECONNRESET))"])
        #expect(await states.wait(count: 3).last == "failed(\(posix(.ECONNRESET)))")
        connection.cancel()
        #expect(await states.wait(count: 4).last == "cancelled")
    }

    /// A reset peer is noticed by a send too (EPIPE or ECONNRESET): the send, the waiting
    /// receive and the state all carry the same error.
    @Test func aSendToAResetPeerFailsTheConnectionTheSendAndTheWaitingReceive() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("reset")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        let peer = try await server.accept()
        await states.wait(count: 2)
        let events = EventLog()
        connection.receive(minimumIncompleteLength: 1, maximumLength: 10) { data, _, isComplete, error in
            events.append("receive \(data == nil ? "nil" : "data")|\(isComplete)|\(error.map(describe) ?? "-")")
        }
        peer.reset()
        try await Task.sleep(for: .milliseconds(100))  // the RST is in flight; nothing to wait on from here
        let broken = [posix(.EPIPE), posix(.ECONNRESET)]
        // The first send after a reset may still be accepted by the kernel; keep sending
        // (bounded) until one fails, as a client's next writes would.
        for attempt in 0..<50 where !events.all.contains(where: { $0.hasPrefix("send ") && !$0.hasSuffix(" ok") }) {
            connection.send(
                content: Data("ping \(attempt)".utf8),
                completion: .contentProcessed { error in
                    events.append("send \(error.map(describe) ?? "ok")")
                })
            await events.wait(count: events.all.count + 1, timeout: .seconds(2))
        }
        let all = events.all
        let failure = try #require(all.first { $0.hasPrefix("send ") && !$0.hasSuffix(" ok") }, "\(all)")
        let error = String(failure.dropFirst("send ".count))
        #expect(broken.contains(error), "\(all)")
        #expect(all.contains("receive nil|false|\(error)"), "the waiting receive fails with the same error: \(all)")
        #expect(await states.wait(count: 3).last == "failed(\(error))")
        connection.cancel()
        #expect(await states.wait(count: 4).last == "cancelled")
    }

    @Test func cancelCompletesPendingOperationsAndLaterOnesWithECANCELED() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("cancel")
        let states = EventLog()
        let connection = connect(to: server.port, queue: queue, log: states)
        let peer = try await server.accept()
        defer { peer.close() }
        await states.wait(count: 2)
        let events = EventLog()
        connection.receive(minimumIncompleteLength: 1, maximumLength: 10) { _, _, _, error in
            events.append("receive \(error.map(describe) ?? "-")")
        }
        connection.cancel()
        connection.send(
            content: Data("late".utf8),
            completion: .contentProcessed { error in
                events.append("send \(error.map(describe) ?? "-")")
            })
        connection.receive(minimumIncompleteLength: 1, maximumLength: 10) { _, _, _, error in
            events.append("late receive \(error.map(describe) ?? "-")")
        }
        let cancelled = posix(.ECANCELED)
        #expect(
            await events.wait(count: 3) == ["receive \(cancelled)", "send \(cancelled)", "late receive \(cancelled)"])
        #expect(await states.wait(count: 3) == ["preparing", "ready", "cancelled"])
    }

    @Test func tlsParametersFailAtStartBecauseTheStandInHasNoTLS() async throws {
        let server = try LoopbackServer()
        defer { server.close() }
        let queue = TaggedQueue("tls")
        let log = EventLog()
        let connection = connect(to: server.port, tls: true, queue: queue, log: log)
        #expect(await log.wait(count: 2) == ["preparing", "failed(tls.\(errSecUnimplemented))"])
        connection.cancel()
        #expect(await log.wait(count: 3).last == "cancelled")
    }

    @Test func cancelBeforeStartReportsNothing() async throws {
        let connection = NWConnection(host: NWEndpoint.Host("127.0.0.1"), port: 1, using: .tcp)
        let queue = TaggedQueue("never")
        let log = EventLog()
        logStates(of: connection, on: queue, into: log)
        connection.cancel()
        connection.start(queue: queue.queue)
        #expect(await log.wait(count: 1, timeout: .milliseconds(200)).isEmpty)
        #expect(describe(connection.state) == "cancelled")
    }
}
