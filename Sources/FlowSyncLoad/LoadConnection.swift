import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTLS

/// What every load client shares: the configuration, the metrics, the frame cache, the
/// encoder and the table of intended send times. Loop-confined.
///
/// Why the load tester speaks the protocol directly instead of using the SDK
/// (FlowSyncClient): the SDK runs one thread per client, which is right for an app and
/// far too heavy for thousands of connections on a 2-core machine. Here every client
/// is a small object on **one** libuv loop thread, so the shared tables need no lock.
final class LoadContext {
    let configuration: LoadConfiguration
    let loop: EventLoop
    /// The first daemon: the control connection's.
    var target: SocketAddress { targets[0] }
    /// Every daemon (``LoadConfiguration/endpoints``); connection `k` of a role uses
    /// `targets[k % count]`.
    let targets: [SocketAddress]
    /// The endpoint of each writer, by writer index (for the cross-endpoint latency).
    var writerEndpoints: [Int] = []
    let sources: [SocketAddress]
    private var sourceCursor = 0
    /// Counters and latencies.
    public let metrics = LoadMetrics()
    /// Shared decodes of identical frames.
    public let cache = FrameCache()
    /// Hello and other frames sent before a Welcome: never compressed.
    let plainEncoder = FrameEncoder(configuration: .disabled)
    /// Mutates, compressed like the SDK does, with the Welcome's dictionary.
    var encoder = FrameEncoder()
    private var dictionaryKnown = false
    /// Intended send time (monotonic ns) of each writer's mutation, indexed by
    /// `[writer][seq]`: a subscriber maps a Diff's `mutations` to send times in O(1).
    var intendedTimes: [[UInt64]] = []
    var writerIndex: [String: Int] = [:]
    /// Set when the run closes its clients: no more reconnects.
    var shuttingDown = false
    /// The daemon's heartbeat (its Welcome): connections ping at least every half of it.
    var heartbeatMilliseconds: UInt64 = 0
    /// TLS (`--tls`): the client context every connection's channel is made from, the
    /// name checked, and the channels' buffers (one loop thread: one scratch).
    var tls: TLSContext?
    var serverName = "localhost"
    lazy var tlsScratch = TLSScratch()

    // Connection pacing: at most this many handshakes at once, so a listen backlog never
    // overflows (a dropped SYN costs a 1 s retransmit and would show as latency).
    private let maxConnecting = 200
    private var connecting = 0
    private var connectQueue: [LoadConnection] = []

    init(configuration: LoadConfiguration, loop: EventLoop, targets: [SocketAddress], sources: [SocketAddress]) {
        precondition(!targets.isEmpty, "Internal inconsistency in LoadContext: no target")
        self.configuration = configuration
        self.loop = loop
        self.targets = targets
        self.sources = sources
    }

    /// The source address for the next connection (round robin), or nil for "any".
    func nextSource() -> SocketAddress? {
        guard sources.count > 1 else { return nil }
        defer { sourceCursor = (sourceCursor + 1) % sources.count }
        return sources[sourceCursor]
    }

    /// Queues `connection` to connect when a handshake slot is free.
    func enqueueConnect(_ connection: LoadConnection) {
        connectQueue.append(connection)
        startQueuedConnects()
    }

    /// A handshake finished (ready or failed): start the next queued one.
    func handshakeFinished() {
        connecting -= 1
        startQueuedConnects()
    }

    private func startQueuedConnects() {
        while connecting < maxConnecting, !connectQueue.isEmpty {
            let next = connectQueue.removeFirst()
            connecting += 1
            next.connect()
        }
    }

    /// Adopts the Welcome's dictionary (the same for every connection to one server).
    func adopt(_ welcome: Welcome) {
        heartbeatMilliseconds = UInt64(welcome.heartbeatMilliseconds)
        guard !dictionaryKnown else { return }
        dictionaryKnown = true
        let dictionary = CompressionDictionary(welcomeBytes: welcome.dictionary)
        cache.dictionary = dictionary
        encoder = FrameEncoder(configuration: CompressionConfiguration(dictionary: dictionary))
    }

    /// Records a writer's intended send time for `seq`.
    func recordIntended(writer: Int, seq: UInt64, at time: UInt64) {
        let index = Int(seq)
        if intendedTimes[writer].count <= index {
            intendedTimes[writer].append(contentsOf: repeatElement(0, count: index + 1 - intendedTimes[writer].count))
        }
        intendedTimes[writer][index] = time
    }

    /// The intended send times of the mutations `ids` (0 for ones this process did not write).
    /// The endpoint of the writer of mutation `id`; `nil` for a writer of another run.
    func writerEndpoint(of id: MutationID) -> Int? {
        guard let w = writerIndex[id.clientID], w < writerEndpoints.count else { return nil }
        return writerEndpoints[w]
    }

    func intendedTimes(of ids: [MutationID]) -> [UInt64] {
        ids.map { id in
            guard let w = writerIndex[id.clientID] else { return 0 }
            let table = intendedTimes[w]
            return Int(id.seq) < table.count ? table[Int(id.seq)] : 0
        }
    }
}

/// One load-client connection: connect, Hello, Welcome, then frames to its role.
/// Subclasses (``SubscriberClient``, ``WriterClient``, ``ControlClient``) override the
/// `did…` hooks. Loop-confined; callbacks hold it weakly.
class LoadConnection {
    let context: LoadContext
    /// The Hello's client ID.
    public let clientID: String
    private(set) var tcp: TCPConnection?
    /// Its TLS channel under `--tls`.
    private var channel: TLSChannel?
    /// Which of ``LoadContext/targets`` it connects to (0 for the control connection).
    var endpointIndex = 0
    private(set) var machine = LoadConnectionStateMachine()
    private var splitter = FrameSplitter()
    private var countedHandshake = false
    /// Loop time of the last write, for the heartbeat.
    private var lastSentAt: UInt64 = 0

    init(context: LoadContext, clientID: String) {
        self.context = context
        self.clientID = clientID
    }

    /// True between the Welcome and the end of the connection.
    public var isReady: Bool { machine.isReady }
    /// True after the connection ended or failed.
    public var isClosed: Bool { machine.isClosed }

    /// Opens the connection now (prefer ``LoadContext/enqueueConnect(_:)``).
    func connect() {
        guard machine.connectRequested() == .connect else { return }
        countedHandshake = true
        splitter = FrameSplitter()
        TCPConnection.connect(loop: context.loop, to: context.targets[endpointIndex], from: context.nextSource()) {
            [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                self.perform(self.machine.connectFailed("\(error)"))
            case .success(let tcp):
                self.tcp = tcp
                if self.receiveBufferBytes > 0 { tcp.setReceiveBufferSize(self.receiveBufferBytes) }
                tcp.onRead = { [weak self] bytes in self?.read(bytes) }
                tcp.onEnd = { [weak self] error in
                    guard let self else { return }
                    self.perform(self.machine.ended(error.map { "\($0)" } ?? "closed"))
                }
                if let context = self.context.tls {
                    // The Hello below is queued by the channel until the handshake is done.
                    self.startTLS(context, on: tcp)
                }
                do {
                    try tcp.startReading()
                } catch {
                    self.perform(self.machine.ended("\(error)"))
                    return
                }
                self.perform(self.machine.connected())
            }
        }
    }

    /// Closes the connection (no error recorded).
    func close() {
        if let channel, let tcp {
            var io = TLSIO(connection: self, tcp: tcp)
            channel.close(&io)
        }
        channel = nil
        tcp?.close()
        tcp = nil
    }

    /// Stops / restarts reading (slow-consumer simulation).
    func pauseReading() { tcp?.stopReading() }
    /// A receive buffer size to keep on this connection and its reconnections (0: the kernel's).
    var receiveBufferBytes = 0 {
        didSet { if receiveBufferBytes > 0 { tcp?.setReceiveBufferSize(receiveBufferBytes) } }
    }
    func resumeReading() { try? tcp?.startReading() }

    /// Writes frames; a broken stream closes the connection.
    func send(_ frames: [[UInt8]]) {
        guard let tcp else { return }
        lastSentAt = context.loop.now
        if let channel {
            var io = TLSIO(connection: self, tcp: tcp)
            channel.send(frames, &io)
            return
        }
        do {
            _ = try tcp.write(frames)
        } catch {
            perform(machine.ended("write: \(error)"))
            close()
        }
    }

    // MARK: TLS

    /// The channel's view of a load connection (loop thread, one call at a time).
    private struct TLSIO: TLSChannelIO {
        unowned let connection: LoadConnection
        let tcp: TCPConnection
        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { _ = try? tcp.write(bytes: bytes) }
        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) { connection.read(bytes) }
        mutating func handshakeCompleted(_ info: TLSConnectionInfo) {}
        /// OpenSSL's verdict decides (the system's roots plus `--cacert`, the name).
        mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? {
            if case .failed(let reason, let text) = info.peerVerification { return .connection(reason, text) }
            return nil
        }
        mutating func channelEnded(_ failure: TLSError?) {
            // A TLS failure is an error of the run (a refused chain, a broken record).
            if let failure { connection.perform(connection.machine.undecodable("\(failure)")) }
            tcp.shutdownAndClose()
        }
    }

    private func startTLS(_ tls: TLSContext, on tcp: TCPConnection) {
        guard let channel = try? TLSChannel(context: tls, serverName: context.serverName, scratch: context.tlsScratch)
        else {
            perform(machine.ended("TLS session not created"))
            return
        }
        self.channel = channel
        tcp.onRead = { [weak self, weak channel] bytes in
            guard let self, let channel else { return }
            var io = TLSIO(connection: self, tcp: tcp)
            channel.received(bytes, &io)
        }
        var io = TLSIO(connection: self, tcp: tcp)
        channel.start(&io)
    }

    private func read(_ bytes: UnsafeRawBufferPointer) {
        do {
            try splitter.split(bytes) { frame in
                guard !machine.isClosed else { return }
                let decoded: DecodedFrame
                do {
                    decoded = try context.cache.decode(frame)
                } catch {
                    perform(machine.undecodable("\(error)"))
                    return
                }
                var isError = false
                if case .error = decoded.message { isError = true }
                var isWelcome = false
                if case .welcome = decoded.message { isWelcome = true }
                let action = machine.received(isWelcome: isWelcome, isError: isError)
                switch action {
                case .becomeReady:
                    if case .welcome(let welcome) = decoded.message { context.adopt(welcome) }
                    finishHandshake()
                    didBecomeReady()
                case .deliver:
                    didReceive(decoded)
                case .protocolError:
                    if case .error(let e) = decoded.message {
                        perform(.protocolError("\(clientID): \(e.code) \(e.message)"))
                    } else {
                        perform(action)
                    }
                default:
                    perform(action)
                }
            }
        } catch {
            perform(machine.undecodable("\(error)"))
        }
        // The daemon closes a connection it hears nothing from for twice its heartbeat
        // (1008); a subscriber only reads, so it pings, driven by what it receives (a
        // subscriber of a list with no traffic for that long is still closed).
        let heartbeat = context.heartbeatMilliseconds
        if heartbeat > 0, machine.isReady, context.loop.now &- lastSentAt >= heartbeat / 2 {
            send([context.plainEncoder.encode(.ping(Ping(nonce: 0)))])
        }
    }

    private func finishHandshake() {
        if countedHandshake {
            countedHandshake = false
            context.handshakeFinished()
        }
    }

    private func perform(_ action: LoadConnectionStateMachine.Action) {
        switch action {
        case .sendHello:
            send([
                context.plainEncoder.encode(
                    .hello(
                        Hello(
                            minVersion: 1, maxVersion: 1, clientName: "flowsync-load", clientID: clientID,
                            authToken: nil)))
            ])
        case .connectionFailed(let text):
            finishHandshake()
            context.metrics.connectionFailed("\(clientID): \(text)")
            tcp = nil
            didEnd(failed: true)
        case .protocolError(let text):
            finishHandshake()
            context.metrics.protocolError("\(clientID): \(text)")
            close()
            didEnd(failed: true)
        case .ended:
            finishHandshake()
            tcp = nil
            didEnd(failed: false)
        case .becomeReady, .deliver, .connect, .none:
            break
        }
    }

    // MARK: Hooks

    /// The Welcome arrived.
    func didBecomeReady() {}
    /// A message arrived after the Welcome.
    func didReceive(_ frame: DecodedFrame) {}
    /// The connection ended (`failed`: an error, not a close).
    func didEnd(failed: Bool) {}
}
