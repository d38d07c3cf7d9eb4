import FlowSyncLoop
import Logging

/// The libuv shell of one peer link (issue #33; docs/CLUSTER.md, "Peer links"): a TCP
/// connection, one timer and a ``PeerFrameDecoder``; every decision is the
/// ``PeerLinkStateMachine``'s, and this class only carries out its actions. Loop-confined.
///
/// Lifetime and ordering rules, each with its reason:
/// 1. **One socket at a time.** A dialer's reconnect makes a new ``TCPConnection``; the
///    old one's callbacks are cleared before it is closed, so a late callback of a dead
///    socket never reaches the machine.
/// 2. **A `.close` is reported back as `closed` at once**, by this shell (the socket's
///    own end callback is cleared first), so the machine sees each socket end once.
/// 3. **Actions run in order, and events raised while they run wait** (`running`):
///    a close while handling a frame does not re-enter the machine mid-action.
/// 4. **Bounded memory** (``maxQueuedBytes``): libuv never pushes back on writes, so
///    after each write the bytes libuv still holds are checked; past the bound the
///    link is closed ("peer too slow") and the node uses PostgreSQL for that peer —
///    what was queued is dropped, which loses nothing (the log has every batch; a
///    forwarded write is sent again through PostgreSQL).
/// 5. **Small frames before `ready`** (``handshakeFrameLimit``): an unauthenticated
///    peer cannot make this node buffer more than that.
final class PeerLink {
    /// The largest frame accepted before the handshake ended (rule 5).
    static let handshakeFrameLimit = 1_024

    let loop: EventLoop
    private var machine: PeerLinkStateMachine
    private var connection: TCPConnection?
    private let timer: LoopTimer
    private var decoder = PeerFrameDecoder(limit: PeerLink.handshakeFrameLimit)
    private let frameLimit: Int
    let maxQueuedBytes: Int
    private let logger: Logger
    /// Events raised while actions run (rule 3).
    private var pendingEvents: [(inout PeerLinkStateMachine) -> [PeerLinkStateMachine.Action]] = []
    private var running = false

    /// The peer's address now (it may change when the peer restarts), for a dial.
    var address: () -> SocketAddress? = { nil }
    var onReady: ((PeerLink, String) -> Void)?
    var onLost: ((PeerLink, String) -> Void)?
    var onFrame: ((PeerLink, String, PeerFrame) -> Void)?
    /// The link ended for good (an acceptor's socket closed, or ``stop()``).
    var onStopped: ((PeerLink) -> Void)?
    /// A nonce per handshake; replaced in tests.
    var nonce: () -> [UInt8] = { (0..<PeerCredential.nonceBytes).map { _ in UInt8.random(in: 0...255) } }

    init(
        loop: EventLoop, role: PeerLinkStateMachine.Role, node: String, credential: PeerCredential,
        frameLimit: Int, maxQueuedBytes: Int, logger: Logger
    ) {
        self.loop = loop
        self.machine = PeerLinkStateMachine(role: role, node: node, credential: credential)
        self.timer = LoopTimer(loop: loop)
        self.frameLimit = frameLimit
        self.maxQueuedBytes = maxQueuedBytes
        self.logger = logger
    }

    /// The peer and its follows while the link is ready.
    var ready: PeerLinkStateMachine.Ready? { machine.ready }

    /// A dialer starts dialing.
    func start() {
        handle { $0.start() }
    }

    /// An acceptor adopts `connection` and waits for the peer's hello.
    func adopt(_ connection: TCPConnection) {
        attach(connection)
        let nonce = nonce()
        handle { $0.accepted(nonce: nonce) }
    }

    /// Ends the link for good.
    func stop() {
        handle { $0.stop() }
    }

    /// Closes the socket as a failure would (the machine decides what follows).
    func drop(reason: String) {
        handle { _ in [.close(reason: reason)] }
    }

    /// Sends `frame` if the link is ready; `false` when it is not (or was just closed by
    /// rule 4): the caller uses PostgreSQL instead.
    @discardableResult
    func send(_ frame: PeerFrame) -> Bool {
        guard machine.ready != nil, let connection else { return false }
        return write([frame.encoded()], on: connection)
    }

    /// Sends bytes already encoded once for several links (encode once, fan out).
    @discardableResult
    func send(encoded bytes: [UInt8]) -> Bool {
        guard machine.ready != nil, let connection else { return false }
        return write([bytes], on: connection)
    }

    private func write(_ chunks: [[UInt8]], on connection: TCPConnection) -> Bool {
        do {
            let queued = try connection.write(chunks)
            if queued > maxQueuedBytes {
                handle { _ in [.close(reason: "peer too slow: \(queued) bytes queued, over \(self.maxQueuedBytes)")] }
                return false
            }
            return true
        } catch {
            handle { _ in [.close(reason: "write failed: \(error)")] }
            return false
        }
    }

    // MARK: The shell

    private func attach(_ connection: TCPConnection) {
        self.connection = connection
        decoder = PeerFrameDecoder(limit: Self.handshakeFrameLimit)
        connection.setKeepAlive(seconds: 10)
        connection.onRead = { [weak self] bytes in self?.read(bytes) }
        connection.onEnd = { [weak self] error in
            guard let self else { return }
            detach()
            let random = Double.random(in: 0..<1)
            logger.debug(
                "cluster: peer link ended", metadata: ["error": "\(error.map { "\($0)" } ?? "closed by the peer")"])
            handle { $0.closed(random: random) }
        }
        do { try connection.startReading() } catch {
            handle { _ in [.close(reason: "cannot read: \(error)")] }
        }
    }

    /// Rule 1: the socket's callbacks are cleared before it is closed.
    private func detach() {
        guard let connection else { return }
        self.connection = nil
        connection.onRead = nil
        connection.onEnd = nil
        connection.onDrain = nil
        connection.close()
    }

    private func read(_ bytes: UnsafeRawBufferPointer) {
        decoder.feed(bytes)
        while connection != nil {
            let frame: PeerFrame?
            do { frame = try decoder.next() } catch {
                handle { $0.receivedGarbage(error) }
                return
            }
            guard let frame else { return }
            handle { $0.received(frame) }
        }
    }

    /// Runs `event` on the machine and carries out its actions (rule 3).
    private func handle(_ event: @escaping (inout PeerLinkStateMachine) -> [PeerLinkStateMachine.Action]) {
        pendingEvents.append(event)
        guard !running else { return }
        running = true
        defer { running = false }
        while !pendingEvents.isEmpty {
            let next = pendingEvents.removeFirst()
            for action in next(&machine) { perform(action) }
        }
    }

    private func perform(_ action: PeerLinkStateMachine.Action) {
        switch action {
        case .connect:
            guard let address = address() else {
                // The peer has no address yet: count it as a failed dial (backoff).
                handle { $0.connectFailed(random: Double.random(in: 0..<1)) }
                return
            }
            TCPConnection.connect(loop: loop, to: address) { [weak self] result in
                guard let self else {
                    if case .success(let connection) = result { connection.close() }
                    return
                }
                guard !machine.isStopped else {
                    if case .success(let connection) = result { connection.close() }
                    return
                }
                switch result {
                case .success(let connection):
                    attach(connection)
                    let nonce = nonce()
                    handle { $0.connected(nonce: nonce) }
                case .failure:
                    let random = Double.random(in: 0..<1)
                    handle { $0.connectFailed(random: random) }
                }
            }
        case .send(let frame):
            if let connection { _ = try? connection.write([frame.encoded()]) }
        case .startTimer(let milliseconds):
            timer.start(after: UInt64(milliseconds)) { [weak self] in self?.handle { $0.timerFired() } }
        case .stopTimer:
            timer.stop()
        case .close(let reason):
            let peer = machine.ready?.peer ?? peerDescription
            // A stop of this node's own is routine; anything else (a refused peer, a
            // slow one, garbage, a deadline) is worth an operator's eye.
            logger.log(
                level: machine.isStopped ? .info : .warning, "cluster: peer link closed",
                metadata: ["peer": "\(peer)", "reason": "\(reason)"])
            // Rule 2: reported here, once; the socket's own end callback is cleared.
            if connection != nil {
                detach()
                let random = Double.random(in: 0..<1)
                handle { $0.closed(random: random) }
            }
        case .ready(let peer):
            // Rule 5: the full frame limit only once the peer proved the credential.
            decoder.limit = frameLimit
            onReady?(self, peer)
        case .lost(let peer):
            onLost?(self, peer)
        case .deliver(let frame):
            if let peer = machine.ready?.peer { onFrame?(self, peer, frame) }
        }
        // Ended for good: the timer goes with the socket (a timer left open would keep
        // the loop from closing cleanly at the daemon's stop).
        if machine.isStopped, connection == nil, !timer.isClosing {
            timer.close()
            let stopped = onStopped
            onStopped = nil
            stopped?(self)
        }
    }

    private var peerDescription: String {
        if case .dialer(let peer) = machine.role { return peer }
        return connection?.peer ?? "unknown"
    }
}
