import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
@_spi(Testing) import FlowSyncTLS

/// A raw protocol client for end-to-end tests: it sends messages (or arbitrary bytes),
/// records every message it receives, and can stop reading to play a slow consumer.
/// Many clients may share one client loop thread.
public final class TestClient: Sendable {
    public let thread: EventLoopThread
    private let connection: LoopConfined<TCPConnection?>
    private let codec: LoopConfined<(encoder: FrameEncoder, decoder: FrameDecoder)>
    private let inbox = Shared<[Message]>([])
    /// Messages received so far (never reset) and the waiters to wake on the next one.
    private let arrivals = Shared(Arrivals())

    /// Arrival bookkeeping: a count of messages, and suspended waiters by ID (plus the
    /// IDs cancelled before they could register, so a cancelled waiter never sleeps).
    struct Arrivals: Sendable {
        var count = 0
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var cancelled: Set<Int> = []
        /// The connection is gone: nothing more will arrive, so waits end at once.
        var ended = false
    }
    private let state = Shared<(closed: Bool, decodeError: ProtocolError?, bytes: Int)>((false, nil, 0))
    public let clientID: String
    /// TLS (issue #32): the channel on the loop thread, and what its handshake found.
    private let tls = LoopConfined<TLSChannel?>(nil)
    private let tlsOutcome = Shared<(info: TLSConnectionInfo?, failure: TLSError?)>((nil, nil))

    private init(thread: EventLoopThread, clientID: String, connection: TCPConnection?) {
        self.thread = thread
        self.clientID = clientID
        self.connection = LoopConfined(connection)
        self.codec = LoopConfined((FrameEncoder(), FrameDecoder(limits: .client)))
    }

    /// Connects to 127.0.0.1:`port`; with `handshake`, sends Hello and waits for Welcome.
    /// `firstBytes` are written right after (on the loop thread, in the connect callback):
    /// a hostile client's bytes reach the server before any handshake deadline, however
    /// late the test's task next runs.
    ///
    /// `tls`: speak TLS with this client context (`serverName` checked; a chain OpenSSL
    /// does not trust is refused); the Hello waits for the handshake. `firstBytes` are
    /// raw socket bytes even then (hostile input below TLS).
    public static func connect(
        port: Int, on thread: EventLoopThread, clientID: String = "client-\(UInt32.random(in: 0...UInt32.max))",
        handshake: Bool = true,
        authToken: String? = nil, firstBytes: [UInt8]? = nil,
        tls: TLSContext? = nil, serverName: String = "localhost"
    ) async throws -> TestClient {
        let result = Shared<Result<Void, UVError>?>(nil)
        let client = TestClient(thread: thread, clientID: clientID, connection: nil)
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { outcome in
                switch outcome {
                case .failure(let error):
                    result.set(.failure(error))
                case .success(let tcp):
                    client.connection.value = tcp
                    tcp.onRead = { bytes in client.received(bytes) }
                    tcp.onEnd = { _ in client.connectionEnded() }
                    tcp.onClose = { client.connectionEnded() }
                    if let tls {
                        client.startTLS(tls, serverName: serverName, on: tcp)
                    }
                    try? tcp.startReading()
                    // The Hello leaves from the loop thread at once, not after the test's
                    // task next gets a thread: on a loaded machine that can take longer
                    // than a server's handshake deadline.
                    if handshake {
                        let hello = Message.hello(
                            Hello(
                                minVersion: 1, maxVersion: 1, clientName: "test", clientID: clientID,
                                authToken: authToken))
                        client.write([client.codec.value.encoder.encode(hello)], on: tcp)
                    }
                    if let firstBytes, !firstBytes.isEmpty { _ = try? tcp.write([firstBytes]) }
                    result.set(.success(()))
                }
            }
        }
        guard await eventually({ result.get() != nil }), let outcome = result.get() else {
            throw UVError(code: -1, operation: "connect timed out")
        }
        try outcome.get()
        if handshake {
            guard await client.waitFor({ if case .welcome = $0 { return true } else { return false } }) != nil else {
                let why = client.messages.compactMap { message -> String? in
                    if case .error(let e) = message { return "\(e.code) \(e.message)" } else { return nil }
                }
                throw UVError(
                    code: -1,
                    operation:
                        "no Welcome (\(client.isClosed ? "closed" : "open")\(why.isEmpty ? "" : ": " + why.joined(separator: "; ")))"
                )
            }
        }
        return client
    }

    // MARK: TLS

    /// What the handshake found, once it completed.
    public var tlsInfo: TLSConnectionInfo? { tlsOutcome.get().info }
    /// Why TLS failed, if it did.
    public var tlsFailure: TLSError? { tlsOutcome.get().failure }

    /// The TLS channel's view of the test client (loop thread only).
    private struct TLSIO: TLSChannelIO {
        let client: TestClient
        let tcp: TCPConnection
        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { _ = try? tcp.write(bytes: bytes) }
        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) { client.received(bytes) }
        mutating func handshakeCompleted(_ info: TLSConnectionInfo) { client.tlsOutcome.update { $0.info = info } }
        mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? {
            if case .failed(let reason, let text) = info.peerVerification { return .connection(reason, text) }
            return nil
        }
        mutating func channelEnded(_ failure: TLSError?) {
            client.tlsOutcome.update { $0.failure = failure }
            tcp.shutdownAndClose()
        }
    }

    /// Loop thread only: wraps the socket in TLS and sends the ClientHello.
    private func startTLS(_ context: TLSContext, serverName: String, on tcp: TCPConnection) {
        guard let channel = try? TLSChannel(context: context, serverName: serverName, scratch: TLSScratch()) else {
            return
        }
        tls.value = channel
        tcp.onRead = { [self] bytes in
            var io = TLSIO(client: self, tcp: tcp)
            channel.received(bytes, &io)
        }
        tcp.onEnd = { [self] _ in
            var io = TLSIO(client: self, tcp: tcp)
            channel.transportEnded(&io)
            connectionEnded()
        }
        var io = TLSIO(client: self, tcp: tcp)
        channel.start(&io)
    }

    /// A hostile TLS 1.2 client asks to renegotiate (its context must allow it).
    public func requestRenegotiation() {
        let connection = self.connection
        thread.loop.execute { [self] in
            guard let channel = tls.value, let tcp = connection.value else { return }
            var io = TLSIO(client: self, tcp: tcp)
            channel.requestRenegotiation(&io)
        }
    }

    /// Closes the socket without a `close_notify` (a cut, a killed app).
    public func closeWithoutNotify() {
        let connection = self.connection
        thread.loop.execute { connection.value?.close() }
    }

    /// Loop thread only: writes frames, through TLS when the connection has it.
    private func write(_ frames: [[UInt8]], on tcp: TCPConnection) {
        if let channel = tls.value {
            var io = TLSIO(client: self, tcp: tcp)
            channel.send(frames, &io)
        } else {
            _ = try? tcp.write(frames)
        }
    }

    /// Loop thread only: the connection ended; every wait ends now.
    private func connectionEnded() {
        state.update { $0.closed = true }
        let waiters = arrivals.update { state -> [CheckedContinuation<Void, Never>] in
            state.ended = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Loop thread only.
    private func received(_ bytes: UnsafeRawBufferPointer) {
        state.update { $0.bytes += bytes.count }
        let decoder = codec.value.decoder
        decoder.feed(bytes)
        while true {
            do {
                guard let message = try decoder.next() else { return }
                if case .welcome(let welcome) = message {
                    // Use the dictionary the server announced, both ways.
                    let dictionary = CompressionDictionary(welcomeBytes: welcome.dictionary)
                    decoder.dictionary = dictionary
                    codec.value.encoder.configuration.dictionary = dictionary
                }
                inbox.update { $0.append(message) }
                let waiters = arrivals.update { state -> [CheckedContinuation<Void, Never>] in
                    state.count += 1
                    let woken = Array(state.waiters.values)
                    state.waiters = [:]
                    return woken
                }
                for waiter in waiters { waiter.resume() }
            } catch {
                state.update { $0.decodeError = error }
                return
            }
        }
    }

    /// Encodes and sends a message.
    public func send(_ message: Message) {
        let codec = self.codec
        let connection = self.connection
        thread.loop.execute { [self] in
            guard let tcp = connection.value else { return }
            write([codec.value.encoder.encode(message)], on: tcp)
        }
    }

    /// Sends raw bytes (hostile-input tests): on the socket as they are, below TLS.
    public func sendRaw(_ bytes: [UInt8]) {
        let connection = self.connection
        thread.loop.execute { _ = try? connection.value?.write([bytes]) }
    }

    /// Every message received so far, in order.
    public var messages: [Message] { inbox.get() }
    /// True once the server closed the connection (or it failed).
    public var isClosed: Bool { state.get().closed }
    /// A decode error on the client side (the server sent bytes it could not parse).
    public var decodeError: ProtocolError? { state.get().decodeError }
    /// Bytes received so far.
    public var bytesReceived: Int { state.get().bytes }

    /// Waits until a received message satisfies `predicate`; returns it (or `nil` after
    /// `timeout` seconds, or at once when the connection has ended and no received
    /// message matches). Woken by each arriving message rather than by polling, so
    /// latencies measured through it are the network's, not a poll interval's. The
    /// default timeout is generous: it bounds a failure, not a passing wait.
    public func waitFor(
        timeout: Double = 30, isolation: isolated (any Actor)? = #isolation, _ predicate: (Message) -> Bool
    ) async -> Message? {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while true {
            let snapshot = arrivals.get()
            let (seen, ended) = (snapshot.count, snapshot.ended)
            if let found = inbox.get().first(where: predicate) { return found }
            // Closed: what arrived is all there will be.
            if ended || ContinuousClock.now >= deadline { return nil }
            await nextArrival(after: seen, until: deadline)
        }
    }

    /// Suspends until more than `seen` messages arrived or `deadline` passed.
    private func nextArrival(after seen: Int, until deadline: ContinuousClock.Instant) async {
        let arrivals = self.arrivals
        let id = arrivals.update { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        // Registered under the lock: if a message arrived since `seen`,
                        // or the wait was already cancelled, resume at once.
                        let resumeNow = arrivals.update { state -> Bool in
                            if state.count > seen || state.ended || state.cancelled.remove(id) != nil { return true }
                            state.waiters[id] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    let waiter = arrivals.update { state -> CheckedContinuation<Void, Never>? in
                        if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                        state.cancelled.insert(id)
                        return nil
                    }
                    waiter?.resume()
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
            }
            // Whichever finishes first (a message, or the deadline) ends the wait; the
            // other child is cancelled, and both are resumable on cancellation.
            await group.next()
            group.cancelAll()
        }
        arrivals.update { _ = $0.cancelled.remove(id) }
    }

    /// Removes and returns the messages received so far.
    public func drain() -> [Message] {
        inbox.update { inbox in
            let all = inbox
            inbox = []
            return all
        }
    }

    /// Stops reading from the socket (the kernel buffers fill; the server queues).
    public func pauseReading() {
        let connection = self.connection
        thread.loop.execute { connection.value?.stopReading() }
    }

    /// Resumes reading.
    public func resumeReading() {
        let connection = self.connection
        thread.loop.execute { try? connection.value?.startReading() }
    }

    /// Closes the connection (with a `close_notify` first under TLS).
    public func close() {
        let connection = self.connection
        thread.loop.execute { [self] in
            if let channel = tls.value, let tcp = connection.value {
                var io = TLSIO(client: self, tcp: tcp)
                channel.close(&io)
            }
            connection.value?.close()
        }
    }
}

/// A client-side copy of a list, built from the frames a subscriber receives: it
/// applies snapshots and diffs and checks each diff's digest, as the SDK will.
public struct Replica: Sendable {
    public var director = Director(limits: DirectorLimits(maxRows: 10_000_000))
    public var position: ListVersion?
    public var problems: [String] = []
    public var diffsApplied = 0
    public var snapshotsApplied = 0

    public init() {}

    /// Applies every snapshot and diff for `list` in `messages`, in order.
    public mutating func apply(_ messages: [Message], list: String) {
        for message in messages { apply(message, list: list) }
    }

    public mutating func apply(_ message: Message, list: String) {
        switch message {
        case .snapshot(let snapshot) where snapshot.listName == list:
            do {
                director = try Director(sections: snapshot.sections, limits: director.limits)
            } catch {
                problems.append("snapshot does not load: \(error)")
            }
            if director.digest != snapshot.digest {
                problems.append("snapshot digest mismatch at \(snapshot.position)")
            }
            position = snapshot.position
            snapshotsApplied += 1
        case .diff(let diff) where diff.listName == list:
            guard let position, position == diff.from else {
                problems.append("gap: replica at \(position.map { "\($0)" } ?? "nothing"), diff from \(diff.from)")
                return
            }
            do {
                try diff.changeset.apply(to: &director)
            } catch {
                problems.append("diff \(diff.from)→\(diff.to) does not apply: \(error)")
            }
            if director.digest != diff.digest { problems.append("digest mismatch after \(diff.to)") }
            self.position = diff.to
            diffsApplied += 1
        default:
            break
        }
    }
}
