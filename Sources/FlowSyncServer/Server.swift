import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// The daemon's hub: it accepts connections, hosts lists by name, seals each list's
/// mutations once per loop turn into one batch, encodes that batch once and queues the
/// same bytes to every subscriber, and enforces back-pressure. Loop-confined: create
/// and use it on the loop thread.
///
/// Per loop turn (libuv: timers → I/O poll → **check** → close callbacks):
/// 1. during poll, reads are decoded and their actions carried out; mutations are only
///    queued in their list's sequencer, replies only queued in the connection;
/// 2. in the check hook, every list with pending mutations is sealed (one version, one
///    changeset, one encoded diff frame), the frame is queued to each live subscriber,
///    then acks and rejects; lagging subscribers whose queue drained get a catch-up;
/// 3. still in the hook, each connection with queued frames is written **once**, and
///    connections marked for closing are shut down — never in the middle of their own
///    callbacks.
public final class Server {
    public private(set) var configuration: ServerConfiguration
    public let loop: EventLoop
    public var logger: Logger
    public internal(set) var statistics = ServerStatistics()
    /// The same events for a metrics backend (swift-metrics; a no-op when none).
    let metrics = ServerMetrics()
    private var lastSweep: UInt64 = 0

    private var listener: TCPListener?
    /// The Unix-domain listener (`server.unix_socket`), when configured.
    private var unixListener: UnixListener?
    private(set) var connections: [Int: Connection] = [:]
    private(set) var lists: [String: ListHost] = [:]
    private var dirtyLists: Set<String> = []
    private var toFlush: Set<Int> = []
    /// Connections with at least one lagging subscription. The end of every turn looks
    /// only at these: scanning every connection's flows per turn would cost
    /// O(connections) even when nobody lags.
    var laggingConnections: Set<Int> = []
    private var hook: LoopHook?
    private var sweep: LoopTimer?
    private(set) var encoder: FrameEncoder
    private var nextConnectionID = 1
    /// Checks Hello tokens; `nil` with `[auth] mode = "off"` (docs/SECURITY.md).
    private var verifier: TokenVerifier?
    /// Connections that have not completed the handshake (capped by
    /// `auth.max_pending_handshakes`: excess connections are closed at accept).
    private var pendingHandshakes = 0
    private var startedAt: UInt64 = 0
    private var shutdownCompletion: (() -> Void)?
    private var shutdownDeadline: UInt64?

    /// Called once per change of the listener port, connections or lists (for
    /// `STATUS=` lines in systemd); optional.
    public var onStatusChange: (() -> Void)?

    /// Where committed batches go (docs/STORAGE.md).
    public let store: DirectorStore
    /// Set once the store failed a write or an fsync: from then on nothing is sent.
    public private(set) var storageFailure: StoreError?
    /// Called once, on the loop thread, when the store fails a write or an fsync. The
    /// batch in flight is never acknowledged, and the in-memory state is ahead of the
    /// disk, so the only safe continuation is a restart: `flowsyncd` exits with
    /// `EX_IOERR` (74) and systemd restarts it; tests observe it instead. Without a
    /// handler the server just stops serving (every connection is closed).
    public var onFatalStorageError: ((StoreError) -> Void)?
    /// Lists that asked for a snapshot (compaction) this turn; done after the flush, so
    /// no ack waits for it.
    var compactionsDue: Set<String> = []
    /// Lists whose compaction snapshot is being written off the loop (one at a time per
    /// list: a second would race the first's install).
    var compactionsInFlight: Set<String> = []
    /// Work handed to the thread pool whose completion has not run: snapshot builds and
    /// compactions. A shutdown completes only at 0 — the completions touch the server
    /// and the store, which must still be open.
    var offloadsOutstanding = 0
    /// The next ``PendingFrame`` ID.
    var nextPendingFrameID: UInt64 = 1
    private var syncTimer: LoopTimer?
    private var recovered = false
    private var closedAfterFailure = false

    /// A server over `store`, or over the store `configuration` names (`[storage]`:
    /// a ``FileStore`` in the data directory by default).
    public init(configuration: ServerConfiguration, loop: EventLoop, logger: Logger, store: DirectorStore? = nil) {
        self.configuration = configuration
        self.loop = loop
        self.logger = logger
        self.encoder = FrameEncoder(configuration: Self.compression(configuration))
        if let store {
            self.store = store
        } else {
            switch configuration.storageEngine {
            case .file: self.store = FileStore(directory: configuration.dataDirectory, options: configuration.fileStoreOptions)
            case .memory: self.store = InMemoryStore(snapshotEveryBatches: configuration.snapshotEveryBatches)
            }
        }
    }

    /// Level 0 means "never compress" (zlib's own level 0 would still wrap stored
    /// blocks in a stream, all cost and no gain). The standard dictionary is announced
    /// either way, since clients may compress what they send.
    static func compression(_ c: ServerConfiguration) -> CompressionConfiguration {
        if c.compressionLevel == 0 {
            return CompressionConfiguration(threshold: .max, level: 1, dictionary: .standard)
        }
        return CompressionConfiguration(threshold: c.compressionThresholdBytes, level: Int32(c.compressionLevel), dictionary: .standard)
    }

    // MARK: Lifecycle

    /// Binds the configured address (or adopts `descriptor`, a listening socket handed
    /// over by systemd) and starts serving. Returns the bound port.
    @discardableResult
    public func start(adoptingDescriptor descriptor: Int32? = nil) throws(UVError) -> Int {
        if !recovered {
            // Callers that want the recovery report (and --repair) call recover() first.
            do {
                try recover()
            } catch {
                throw UVError(code: -5, operation: "store recovery: \(error)")
            }
        }
        // A socket handed over by systemd may listen elsewhere than server.host: judge
        // the default mode (and "off beyond loopback") by the address really bound.
        var listenHost = configuration.host
        if let descriptor { listenHost = AuthConfiguration.boundHost(ofDescriptor: descriptor) ?? "unknown address" }
        if let (key, problem) = configuration.auth.validate(host: listenHost) {
            throw UVError(code: -22, operation: "\(key): \(problem) (listening on \(listenHost))")
        }
        switch configuration.auth.effectiveMode(host: listenHost) {
        case .required:
            do {
                verifier = try TokenVerifier(configuration: configuration.auth)
            } catch {
                throw UVError(code: -22, operation: "auth keys: \(error)")
            }
        case .off:
            verifier = nil
            if !AuthConfiguration.isLoopback(listenHost) {
                logger.warning("auth is OFF on a non-loopback address (auth.allow_off_beyond_loopback): anyone who reaches the port can read and write every list",
                               metadata: ["host": "\(listenHost)"])
            }
        }
        let listener: TCPListener
        if let descriptor {
            listener = try TCPListener(loop: loop, adoptingDescriptor: descriptor)
        } else {
            listener = try TCPListener(loop: loop, address: SocketAddress(host: configuration.host, port: configuration.port))
        }
        // Handle callbacks capture weakly: a handle's callbacks may outlive the objects
        // they talk to (a close callback after the peer's EOF already forgot the
        // connection), and `unowned` would trap there.
        listener.onConnection = { [weak self] tcp in self?.accept(tcp) }
        listener.onAcceptError = { [weak self] error in
            self?.logger.warning("accept failed", metadata: ["error": "\(error)"])
        }
        self.listener = listener
        if let path = configuration.unixSocketPath {
            let unix: UnixListener
            do throws(UVError) {
                unix = try UnixListener(loop: loop, path: path, mode: configuration.unixSocketMode)
            } catch {
                listener.close()
                self.listener = nil
                throw error
            }
            unix.onConnection = { [weak self] connection in self?.accept(connection) }
            unix.onAcceptError = { [weak self] error in
                self?.logger.warning("accept failed", metadata: ["error": "\(error)"])
            }
            unixListener = unix
            logger.info("listening", metadata: ["unix_socket": "\(path)", "mode": "\(String(configuration.unixSocketMode, radix: 8))"])
        }
        startedAt = loop.now
        for name in configuration.declaredLists { _ = host(for: name, create: true, declared: true) }
        hook = LoopHook(loop: loop, kind: .check) { [weak self] in self?.endOfTurn() }
        let sweep = LoopTimer(loop: loop)
        sweep.start(after: 100, repeat: 100) { [weak self] in self?.sweepConnections() }
        sweep.unref()
        self.sweep = sweep
        if configuration.fsyncPolicy == .interval {
            // Acks leave at once; this timer bounds what an OS crash can lose.
            let timer = LoopTimer(loop: loop)
            let interval = UInt64(configuration.fsyncIntervalMilliseconds)
            timer.start(after: interval, repeat: interval) { [weak self] in self?.syncStore() }
            timer.unref()
            syncTimer = timer
        }
        logger.info("listening", metadata: ["address": "\(configuration.host):\(listener.port)"])
        return listener.port
    }

    /// The port the listener is bound to (0 before ``start(adoptingDescriptor:)``).
    public var port: Int { listener?.port ?? 0 }

    /// Graceful shutdown: stop accepting, seal pending mutations, send every client a
    /// `Notice` (shutting down) and flush, then close. Connections that have not
    /// flushed within the grace period are closed anyway. `completion` runs when every
    /// connection is closed and the server's own handles are closed too.
    public func shutdown(_ completion: @escaping () -> Void) {
        guard shutdownCompletion == nil else { return }
        shutdownCompletion = completion
        shutdownDeadline = loop.now + UInt64(configuration.shutdownGraceMilliseconds)
        listener?.close()
        listener = nil
        unixListener?.close()
        unixListener = nil
        logger.info("shutting down", metadata: ["connections": "\(connections.count)"])
        sealDirtyLists()
        let notice = encoder.encode(.notice(Notice(kind: .shuttingDown, message: "server is shutting down", delayMilliseconds: 0)))
        for connection in connections.values {
            connection.enqueue(notice)
            close(connection, code: .serverShuttingDown, message: "server is shutting down")
        }
        flushAll()
        finishShutdownIfDone()
        // The sweep timer must keep the loop alive until the grace period ends.
        sweep?.ref()
    }

    func finishShutdownIfDone() {
        // Outstanding offloaded work first: its completion may install a compaction
        // (the store must not be closed under it) or serve subscribers.
        guard let completion = shutdownCompletion, connections.isEmpty, offloadsOutstanding == 0 else { return }
        shutdownCompletion = nil
        hook?.close()
        sweep?.close()
        syncTimer?.close()
        hook = nil
        sweep = nil
        syncTimer = nil
        if storageFailure == nil {
            do {
                try store.close()
            } catch {
                storageFailed(error)
            }
        }
        if storageFailure != nil { (store as? FileStore)?.abandon() }
        logger.info("stopped", metadata: ["batches": "\(statistics.batchesCommitted)"])
        completion()
    }

    /// Applies a reloaded configuration: limits, back-pressure, history, compression
    /// and log level take effect now (limits for frames decoded from now on); the
    /// listen address and the data directory need a restart. Returns what changed.
    @discardableResult
    public func reload(_ new: ServerConfiguration) -> [String] {
        var changes: [String] = []
        func note<T: Equatable>(_ key: String, _ old: T, _ new: T) {
            if old != new { changes.append("\(key): \(old) → \(new)") }
        }
        note("logging.level", configuration.logLevel, new.logLevel)
        note("limits.max_frame_bytes", configuration.maxFrameBytes, new.maxFrameBytes)
        note("limits.max_inflated_bytes", configuration.maxInflatedBytes, new.maxInflatedBytes)
        note("limits.director", configuration.director, new.director)
        note("limits.max_lists_per_connection", configuration.maxListsPerConnection, new.maxListsPerConnection)
        note("backpressure", [configuration.lowWatermarkBytes, configuration.highWatermarkBytes, configuration.hardLimitBytes, configuration.writeDeadlineMilliseconds],
             [new.lowWatermarkBytes, new.highWatermarkBytes, new.hardLimitBytes, new.writeDeadlineMilliseconds])
        note("history", [configuration.historyMaxBatches, configuration.historyMaxBytes], [new.historyMaxBatches, new.historyMaxBytes])
        note("compression", [configuration.compressionLevel, configuration.compressionThresholdBytes], [new.compressionLevel, new.compressionThresholdBytes])
        note("compression.offload_snapshot_rows", configuration.offloadSnapshotRows, new.offloadSnapshotRows)
        var ignored: [String] = []
        if new.host != configuration.host || new.port != configuration.port { ignored.append("server.host/port") }
        if new.dataDirectory != configuration.dataDirectory { ignored.append("server.data_dir") }
        if new.storageEngine != configuration.storageEngine || new.fsyncPolicy != configuration.fsyncPolicy
            || new.fsyncIntervalMilliseconds != configuration.fsyncIntervalMilliseconds
            || new.snapshotEveryBatches != configuration.snapshotEveryBatches || new.snapshotEveryBytes != configuration.snapshotEveryBytes
            || new.parallelSync != configuration.parallelSync || new.maxOpenLogs != configuration.maxOpenLogs {
            ignored.append("storage")
        }
        var applied = new
        applied.storageEngine = configuration.storageEngine
        applied.fsyncPolicy = configuration.fsyncPolicy
        applied.fsyncIntervalMilliseconds = configuration.fsyncIntervalMilliseconds
        applied.snapshotEveryBatches = configuration.snapshotEveryBatches
        applied.snapshotEveryBytes = configuration.snapshotEveryBytes
        applied.parallelSync = configuration.parallelSync
        applied.maxOpenLogs = configuration.maxOpenLogs
        applied.host = configuration.host
        applied.port = configuration.port
        applied.dataDirectory = configuration.dataDirectory
        if new.auth != configuration.auth {
            // New keys (rotation) apply to handshakes from now on; ready connections
            // keep the grant of the token they were admitted with until it expires.
            switch new.auth.effectiveMode(host: configuration.host) {
            case .off:
                verifier = nil
                changes.append("auth: off")
            case .required:
                do {
                    verifier = try TokenVerifier(configuration: new.auth)
                    changes.append("auth: keys \(new.auth.keys.map(\.kid).joined(separator: ", "))")
                } catch {
                    logger.error("reload: auth keys refused, the old ones stay", metadata: ["error": "\(error)"])
                    applied.auth = configuration.auth
                }
            }
        }
        configuration = applied
        encoder = FrameEncoder(configuration: Self.compression(applied))
        for list in lists.values {
            list.sequencer.historyLimits = historyLimits
            list.sequencer.setDirectorLimits(applied.director)
        }
        for connection in connections.values where connection.machine.isReady {
            connection.decoder.limits = readyDecoderLimits
        }
        if !ignored.isEmpty {
            logger.warning("reload: these settings need a restart and were not changed", metadata: ["keys": "\(ignored.joined(separator: ", "))"])
        }
        return changes
    }

    // MARK: Limits derived from the configuration

    var backpressure: BackpressurePolicy {
        BackpressurePolicy(lowWatermark: configuration.lowWatermarkBytes, highWatermark: configuration.highWatermarkBytes, hardLimit: configuration.hardLimitBytes)
    }

    var historyLimits: Sequencer.HistoryLimits {
        Sequencer.HistoryLimits(maxBatches: configuration.historyMaxBatches, maxBytes: configuration.historyMaxBytes)
    }

    var preAuthDecoderLimits: DecoderLimits {
        var limits = DecoderLimits.preAuth
        limits.maxFrameBytes = configuration.preAuthMaxFrameBytes
        limits.allowCompressed = false
        return limits
    }

    var readyDecoderLimits: DecoderLimits {
        var limits = DecoderLimits.server
        limits.maxFrameBytes = configuration.maxFrameBytes
        limits.maxInflatedBytes = configuration.maxInflatedBytes
        limits.maxOpsPerMutation = configuration.director.maxOpsPerMutation
        limits.maxIDBytes = configuration.director.maxIDBytes
        limits.maxKindBytes = configuration.director.maxKindBytes
        limits.maxPayloadBytes = configuration.director.maxPayloadBytes
        limits.maxListNameBytes = configuration.maxListNameBytes
        limits.allowCompressed = true
        return limits
    }

    var serverLimits: ServerLimits {
        ServerLimits(
            maxFrameBytes: UInt32(clamping: configuration.maxFrameBytes),
            maxInflatedBytes: UInt32(clamping: configuration.maxInflatedBytes),
            maxOpsPerMutation: UInt32(clamping: configuration.director.maxOpsPerMutation),
            maxListsPerConnection: UInt32(clamping: configuration.maxListsPerConnection),
            maxListNameBytes: UInt32(clamping: configuration.maxListNameBytes),
            maxIDBytes: UInt32(clamping: configuration.director.maxIDBytes),
            maxPayloadBytes: UInt32(clamping: configuration.director.maxPayloadBytes)
        )
    }

    // MARK: Connections

    private func accept(_ tcp: TCPConnection) {
        guard shutdownCompletion == nil, connections.count < configuration.maxConnections,
              pendingHandshakes < configuration.auth.maxPendingHandshakes else {
            statistics.connectionsRefused += 1
            metrics.connectionsRefused.increment()
            tcp.close()
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        tcp.setKeepAlive(seconds: configuration.tcpKeepaliveSeconds)
        let machine = ConnectionStateMachine(
            now: loop.now,
            handshakeTimeout: UInt64(configuration.handshakeTimeoutMilliseconds),
            limits: .init(maxListsPerConnection: configuration.maxListsPerConnection, maxListNameBytes: configuration.maxListNameBytes),
            verifier: verifier
        )
        let connection = Connection(id: id, tcp: tcp, machine: machine, decoder: FrameDecoder(limits: preAuthDecoderLimits), logger: logger)
        connections[id] = connection
        pendingHandshakes += 1
        statistics.connectionsAccepted += 1
        statistics.connectionsCurrent = connections.count
        metrics.connectionsAccepted.increment()
        metrics.connectionsOpen.record(connections.count)
        tcp.onRead = { [weak self, weak connection] bytes in
            guard let self, let connection else { return }
            received(bytes, on: connection)
        }
        tcp.onEnd = { [weak self, weak connection] error in
            guard let self, let connection else { return }
            peerEnded(connection, error)
        }
        tcp.onDrain = { [weak self, weak connection] in
            guard let self, let connection else { return }
            drained(connection)
        }
        do {
            try tcp.startReading()
        } catch {
            peerEnded(connection, error)
            return
        }
        connection.logger.debug("accepted", metadata: ["peer": "\(connection.peer)"])
        onStatusChange?()
    }

    private func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        guard !connection.isClosing else { return }
        connection.lastReceivedAt = loop.now
        connection.decoder.feed(bytes)
        while !connection.isClosing {
            let message: Message?
            do {
                message = try connection.decoder.next()
            } catch {
                perform(connection.machine.decodeFailed(error), on: connection)
                return
            }
            guard let message else { return }
            perform(connection.machine.receivedMessage(message), on: connection)
        }
    }

    private func perform(_ action: ConnectionStateMachine.Action, on connection: Connection) {
        switch action {
        case .none:
            break
        case .welcome(let version):
            // After Welcome, compressed frames in both directions use the dictionary it
            // announces (docs/PROTOCOL.md, "Preset dictionary").
            let dictionary = encoder.configuration.dictionary
            if connection.countsAsPendingHandshake {
                connection.countsAsPendingHandshake = false
                pendingHandshakes -= 1
            }
            connection.decoder.limits = readyDecoderLimits
            connection.decoder.dictionary = dictionary
            send(.welcome(Welcome(version: version, serverName: configuration.serverName, limits: serverLimits, heartbeatMilliseconds: UInt32(configuration.heartbeatMilliseconds), dictionary: dictionary?.bytes ?? [])), to: connection)
            connection.logger.debug("handshake", metadata: ["client": "\(connection.machine.session?.clientName ?? "")", "clientID": "\(connection.machine.session?.clientID ?? "")"])
        case .subscribe(let request):
            subscribe(connection, request)
        case .refreshed(let dropped):
            for name in dropped {
                connection.flows[name] = nil
                if let list = lists[name] {
                    list.removeSubscriber(connection.id)
                    dropIfDisposable(list)
                }
                send(.error(ErrorMessage(code: .forbidden, message: "the refreshed token does not grant reading \"\(name)\"", listName: name, closesConnection: false)), to: connection)
            }
            connection.logger.debug("token refreshed", metadata: ["dropped": "\(dropped)"])
        case .reject(let reject):
            send(.reject(reject), to: connection)
            statistics.mutationsRejected += 1
            metrics.mutationRejected(code: reject.code.rawValue)
        case .unsubscribe(let name):
            connection.flows[name] = nil
            if let list = lists[name] {
                list.removeSubscriber(connection.id)
                dropIfDisposable(list)
            }
        case .mutate(let mutate):
            guard let list = host(for: mutate.listName, create: configuration.autoCreateLists) else {
                send(.reject(Reject(listName: mutate.listName, seq: mutate.seq, code: .unknownList, message: "no list \"\(mutate.listName)\"")), to: connection)
                statistics.mutationsRejected += 1
                metrics.mutationRejected(code: ErrorCode.unknownList.rawValue)
                return
            }
            list.sequencer.submit(MutationRequest(clientID: mutate.clientID, seq: mutate.seq, base: mutate.base, operations: mutate.operations), tag: connection.id)
            dirtyLists.insert(list.name)
        case .pong(let nonce):
            send(.pong(Pong(nonce: nonce)), to: connection)
        case .stats(let request):
            let grant = connection.machine.session?.grant ?? .unrestricted
            send(.statsReply(StatsReply(requestID: request.requestID, entries: statsEntries(list: request.listName, grant: grant))), to: connection)
        case .sendError(let error):
            send(.error(error), to: connection)
        case .close(let error):
            closeNow(connection, with: error)
        }
    }

    private func subscribe(_ connection: Connection, _ request: Subscribe) {
        guard let list = host(for: request.listName, create: configuration.autoCreateLists) else {
            _ = connection.machine.receivedMessage(.unsubscribe(Unsubscribe(listName: request.listName)))
            send(.error(ErrorMessage(code: .unknownList, message: "no list \"\(request.listName)\"", listName: request.listName, closesConnection: false)), to: connection)
            return
        }
        // Seal first, so the subscriber starts exactly at a committed version and the
        // mutations already queued this turn arrive as a normal diff.
        if list.sequencer.hasPending { seal(list) }
        let first = firstFrame(for: connection, of: list, from: request.resumeFrom, digest: request.digest,
                               cause: request.resumeFrom == nil ? .subscribe : .resume)
        connection.flows[list.name] = first.flow
        list.addSubscriber(connection.id)
        if let frame = first.frame { enqueue(frame, to: connection) }
        recordListGauges()
        onStatusChange?()
    }

    private func host(for name: String, create: Bool, declared: Bool = false) -> ListHost? {
        if let list = lists[name] {
            if declared { list.declared = true }
            return list
        }
        guard create else { return nil }
        // A fresh random epoch: a list that is not in the store is a new history, and a
        // client holding a position of an older list of that name must resync.
        defer { recordListGauges() }
        let list = ListHost(name: name, epoch: UInt64.random(in: 1...UInt64.max), limits: configuration.director, history: historyLimits,
                            dedupe: DedupeWindow.Limits(perClient: configuration.dedupePerClient, clients: configuration.dedupeClients), declared: declared)
        lists[name] = list
        logger.debug("list created", metadata: ["flowsync.list": "\(name)"])
        return list
    }

    private func dropIfDisposable(_ list: ListHost) {
        if list.isDisposable { lists[list.name] = nil }
        recordListGauges()
    }

    private func recordListGauges() {
        metrics.lists.record(lists.count)
        metrics.subscriptions.record(lists.values.reduce(0) { $0 + $1.subscribers.count })
    }

    private func drained(_ connection: Connection) {
        connection.stalledSince = nil
        catchUpLaggingFlows(of: connection)
    }

    private func peerEnded(_ connection: Connection, _ error: UVError?) {
        connection.machine.peerClosed()
        connection.discardPending()
        if let error { connection.logger.debug("connection error", metadata: ["error": "\(error)"]) }
        forget(connection)
        connection.tcp.close()
    }

    /// Removes a connection from every list and from the table.
    private func forget(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        if connection.countsAsPendingHandshake {
            connection.countsAsPendingHandshake = false
            pendingHandshakes -= 1
        }
        laggingConnections.remove(connection.id)
        for name in connection.flows.keys {
            if let list = lists[name] {
                list.removeSubscriber(connection.id)
                dropIfDisposable(list)
            }
        }
        connection.flows = [:]
        statistics.connectionsCurrent = connections.count
        metrics.connectionsOpen.record(connections.count)
        metrics.connectionClosed(code: connection.closeReason?.rawValue)
        recordListGauges()
        connection.logger.debug("closed", metadata: ["reason": "\(connection.closeReason.map { "\($0)" } ?? "peer")"])
        onStatusChange?()
        finishShutdownIfDone()
    }

    // MARK: Sending

    private func send(_ message: Message, to connection: Connection) {
        enqueue(encoder.encode(message), to: connection)
    }

    func enqueue(_ frame: [UInt8], to connection: Connection) {
        guard storageFailure == nil, connection.enqueue(frame) else { return }
        toFlush.insert(connection.id)
        if connection.queuedBytes > configuration.hardLimitBytes {
            statistics.slowConsumerEvents += 1
            metrics.slowConsumerEvents.increment()
            close(connection, code: .slowConsumer, message: "more than \(configuration.hardLimitBytes) bytes queued")
        }
    }

    /// Server-initiated close with a code: the error frame goes out after what is
    /// already queued (best effort), then the socket is shut down at the turn's end.
    private func close(_ connection: Connection, code: ErrorCode, message: String) {
        guard let error = connection.machine.serverCloses(code, message) else { return }
        closeNow(connection, with: error)
    }

    private func closeNow(_ connection: Connection, with error: ErrorMessage) {
        guard !connection.isClosing else { return }
        connection.closeReason = error.code
        statistics.closedByReason[error.code.rawValue, default: 0] += 1
        if error.code == .slowConsumer || error.code == .writeTimeout {
            // Its queue is what is wrong: drop this turn's frames so the error is next.
            connection.discardPending()
            connection.logger.warning("closing slow consumer", metadata: ["code": "\(error.code.rawValue)", "queued": "\(connection.tcp.queuedBytes)"])
        } else {
            connection.logger.info("closing connection", metadata: ["code": "\(error.code.rawValue)", "reason": "\(error.message)"])
        }
        // No more list traffic for it.
        for name in connection.flows.keys { lists[name]?.removeSubscriber(connection.id) }
        connection.flows = [:]
        laggingConnections.remove(connection.id)
        connection.beginClosing(now: loop.now, final: [encoder.encode(.error(error))])
        toFlush.insert(connection.id)
    }

    // MARK: End of turn

    private func endOfTurn() {
        if storageFailure != nil {
            closeEverythingAfterStorageFailure()
            return
        }
        sealDirtyLists()
        flushAll()
        // Lagging subscribers whose queue is already low (the flush wrote everything
        // without a uv_write, so no drain callback will come) are caught up now.
        var caughtUp = false
        for id in laggingConnections {
            guard let connection = connections[id] else { continue }
            caughtUp = catchUpLaggingFlows(of: connection) || caughtUp
        }
        if caughtUp { flushAll() }
        if !compactionsDue.isEmpty { compactDueLists() }
        if storageFailure != nil { closeEverythingAfterStorageFailure() }
    }

    private func sealDirtyLists() {
        guard !dirtyLists.isEmpty, storageFailure == nil else { return }
        let names = dirtyLists
        dirtyLists = []
        for name in names {
            if let list = lists[name] { seal(list) }
        }
    }

    /// Seals a list's pending mutations into one batch and queues its frames: the diff
    /// (encoded once, the same bytes for every subscriber), then acks and rejects — so a
    /// writer that also subscribes sees the batch before its ack.
    private func seal(_ list: ListHost) {
        let sealed = list.sequencer.seal()
        if let commit = sealed.commit {
            statistics.batchesCommitted += 1
            metrics.batches.increment()
            let diff = Diff(listName: list.name, epoch: commit.to.epoch, fromVersion: commit.from.version, toVersion: commit.to.version,
                            digest: commit.digest, changeset: commit.changeset,
                            mutations: commit.mutations)
            let frame = encoder.encode(.diff(diff))
            // Into the store before anything is queued; the frames queued below leave
            // only after flushAll() has synced it (fsync = always).
            do {
                if try store.append(StoredBatch(listName: list.name, commit: commit, encodedDiff: frame)) {
                    compactionsDue.insert(list.name)
                }
            } catch {
                storageFailed(error)
                return
            }
            // Subscribers whose first frame is being built off the loop get this batch
            // after it, from the build (the same bytes, in order: no gap).
            list.holdForPendingFrames(from: commit.from, to: commit.to, frame: frame)
            let policy = backpressure
            for id in list.subscribers {
                guard let connection = connections[id], var flow = connection.flows[list.name] else { continue }
                let wasLive = flow.state == .live
                let decision = flow.batchCommitted(from: commit.from, to: commit.to, queued: connection.queuedBytes, policy: policy)
                connection.flows[list.name] = flow
                switch decision {
                case .send:
                    enqueue(frame, to: connection)
                case .held:
                    break
                case .skip:
                    if wasLive {
                        laggingConnections.insert(connection.id)
                        statistics.slowConsumerEvents += 1
                        metrics.slowConsumerEvents.increment()
                        connection.logger.info("subscriber lagging: per-batch frames paused", metadata: ["flowsync.list": "\(list.name)", "queued": "\(connection.queuedBytes)"])
                    }
                }
            }
        }
        for outcome in sealed.outcomes {
            guard let connection = connections[outcome.tag] else { continue }
            switch outcome.result {
            case .success(let version):
                statistics.mutationsCommitted += 1
                metrics.mutationsCommitted.increment()
                send(.ack(Ack(listName: list.name, seq: outcome.id.seq, committed: version)), to: connection)
            case .failure(let rejection):
                statistics.mutationsRejected += 1
                let (code, message) = Self.wire(rejection)
                metrics.mutationRejected(code: code.rawValue)
                send(.reject(Reject(listName: list.name, seq: outcome.id.seq, code: code, message: message)), to: connection)
            }
        }
    }

    static func wire(_ rejection: SequencerRejection) -> (ErrorCode, String) {
        switch rejection {
        case .invalid(let error): return (ErrorCode(for: error.reason), error.description)
        case .staleBase: return (.staleBaseVersion, rejection.description)
        case .futureBase: return (.staleBaseVersion, rejection.description)
        case .retryOutsideWindow: return (.staleBaseVersion, rejection.description)
        }
    }

    /// Queues catch-ups for the connection's lagging subscriptions whose queue is low
    /// enough; returns whether any was queued.
    @discardableResult
    private func catchUpLaggingFlows(of connection: Connection) -> Bool {
        var queued = false
        for (name, var flow) in connection.flows where flow.state == .lagging {
            // A catch-up queued above may have closed the connection (hard limit): its
            // flows are gone and must stay gone.
            guard !connection.isClosing else { break }
            guard flow.queueShrank(to: connection.queuedBytes, policy: backpressure), let list = lists[name] else { continue }
            // Inline for a small list; a large list's catch-up is built off the loop and
            // the flow waits for it (holding the batches committed meanwhile).
            let first = firstFrame(for: connection, of: list, from: flow.delivered, digest: nil, cause: .lag)
            connection.flows[name] = first.flow
            if let frame = first.frame {
                enqueue(frame, to: connection)
                queued = true
            }
        }
        if !connection.flows.values.contains(where: { $0.state == .lagging }) {
            laggingConnections.remove(connection.id)
        }
        return queued
    }

    private func flushAll() {
        // The durability rule: under fsync = always, no byte leaves while a batch
        // appended to the store is not on disk — one sync covers every list written
        // this turn (group commit), then the acks and diffs of all of them go out.
        guard storageFailure == nil else { return }
        if configuration.fsyncPolicy == .always && store.hasUnsyncedWrites {
            syncStore()
            guard storageFailure == nil else { return }
        }
        let now = loop.now
        let ids = toFlush
        toFlush = []
        for id in ids {
            guard let connection = connections[id] else { continue }
            let frames = connection.pending.count
            let bytes = connection.pendingBytes
            if let error = connection.flush(now: now) {
                peerEnded(connection, error)
                continue
            }
            statistics.framesSent += frames
            statistics.bytesSent += bytes
            metrics.framesSent.increment(by: Int64(frames))
            metrics.bytesSent.increment(by: Int64(bytes))
            if connection.isClosing && !connection.tcp.isClosing {
                connection.tcp.onRead = nil
                connection.tcp.shutdownAndClose()
                connection.tcp.onClose = { [weak self, weak connection] in
                    guard let self, let connection else { return }
                    forget(connection)
                }
            }
        }
    }

    /// Every 100 ms: handshake deadlines, heartbeats, write deadlines, stuck closes,
    /// shutdown grace.
    private func sweepConnections() {
        let now = loop.now
        // The timer is due every 100 ms; anything later is time the loop spent elsewhere.
        if lastSweep != 0 { metrics.loopLag.recordMilliseconds(Int64(now > lastSweep + 100 ? now - lastSweep - 100 : 0)) }
        lastSweep = now
        var largest = 0
        let writeDeadline = UInt64(configuration.writeDeadlineMilliseconds)
        let heartbeat = UInt64(configuration.heartbeatMilliseconds)
        for connection in Array(connections.values) {
            largest = max(largest, connection.queuedBytes)
            if connection.isClosing {
                // A peer that never reads keeps uv_shutdown pending forever: cut it.
                if let since = connection.closingSince, now - since > 2_000 || shutdownDeadline.map({ now >= $0 }) == true {
                    connection.tcp.close()
                }
                continue
            }
            perform(connection.machine.tick(now: now), on: connection)
            // Heartbeats (issue #19): a ready peer silent for twice the announced interval
            // is presumed gone (a phone that lost its network sends no FIN).
            if heartbeat > 0, connection.machine.isReady, now &- connection.lastReceivedAt > 2 * heartbeat {
                close(connection, code: .heartbeatTimeout, message: "nothing received for \(now &- connection.lastReceivedAt) ms (heartbeat \(heartbeat) ms)")
            } else if let since = connection.stalledSince, now - since > writeDeadline {
                close(connection, code: .writeTimeout, message: "queue not drained for \(writeDeadline) ms")
            }
        }
        metrics.largestQueueBytes.record(largest)
        flushAll()
        if let deadline = shutdownDeadline, now >= deadline {
            for connection in connections.values { connection.tcp.close() }
        }
    }

    // MARK: Storage

    /// Rebuilds the lists from the store (before ``start(adoptingDescriptor:)``, which
    /// calls it when nobody did). Lists whose stored history may not be what clients
    /// saw (a repair, or an unclean stop under a lossy fsync policy) start a new epoch,
    /// so their subscribers resync from a snapshot instead of trusting a gap.
    /// - Throws: ``StoreError`` — corruption (refuse to start; `repair` keeps the
    ///   valid prefix) or an I/O failure.
    @discardableResult
    public func recover(repair: Bool = false) throws(StoreError) -> RecoveryReport {
        precondition(!recovered, "Internal inconsistency in Server: recover() called twice")
        let options = RecoveryOptions(directorLimits: configuration.director, historyLimits: historyLimits,
                                      dedupeLimits: DedupeWindow.Limits(perClient: configuration.dedupePerClient, clients: configuration.dedupeClients),
                                      repair: repair)
        let started = monotonicNanoseconds()
        let report = try store.recover(options)
        for var list in report.lists {
            if list.needsNewEpoch {
                let old = list.sequencer.position
                list.sequencer.startEpoch(UInt64.random(in: 1...UInt64.max))
                let sequencer = list.sequencer
                try store.startEpoch(StoredSnapshot(listName: list.name, position: sequencer.position, digest: sequencer.director.digest,
                                                    sections: sequencer.director.sections, dedupe: sequencer.dedupeRecords()))
                logger.warning("list starts a new epoch: clients resync from a snapshot", metadata: ["flowsync.list": "\(list.name)", "was": "\(old)", "now": "\(sequencer.position)"])
            }
            lists[list.name] = ListHost(name: list.name, sequencer: list.sequencer, declared: false)
        }
        for note in report.notes { logger.warning("store: \(note)") }
        recovered = true
        recordListGauges()
        if !report.lists.isEmpty || report.truncatedBytes > 0 {
            logger.info("recovered", metadata: ["lists": "\(report.lists.count)", "batches": "\(report.replayedBatches)",
                                                "truncatedBytes": "\(report.truncatedBytes)", "ms": "\((monotonicNanoseconds() - started) / 1_000_000)"])
        }
        return report
    }

    /// The `interval` policy's timer.
    private func syncStore() {
        guard storageFailure == nil, store.hasUnsyncedWrites else { return }
        let started = monotonicNanoseconds()
        do {
            try store.sync()
        } catch {
            storageFailed(error)
            return
        }
        statistics.storeSyncs += 1
        metrics.storeSync.recordNanoseconds(Int64(monotonicNanoseconds() - started))
    }

    /// A write or fsync failed: nothing more leaves (the batch in flight is never
    /// acknowledged), and the fatal handler runs. Connections are closed at the end of
    /// the turn, never inside a callback.
    func storageFailed(_ error: StoreError) {
        guard storageFailure == nil else { return }
        storageFailure = error
        logger.critical("storage failed; no further acknowledgement will be sent", metadata: ["error": "\(error)"])
        toFlush = []
        for connection in connections.values { connection.discardPending() }
        onFatalStorageError?(error)
    }

    func closeEverythingAfterStorageFailure() {
        guard !closedAfterFailure else { return }
        closedAfterFailure = true
        listener?.close()
        listener = nil
        for connection in Array(connections.values) { peerEnded(connection, nil) }
    }

    // MARK: Stats

    private func statsEntries(list name: String?, grant: AccessGrant = .unrestricted) -> [StatsReply.Entry] {
        // Names as docs/PROTOCOL.md lists them (dotted; the set may grow). Epochs and
        // digests are u64 values carried in the i64 field (two's complement).
        var entries: [(String, Int64)] = [
            ("uptime.ms", Int64(loop.now - startedAt)),
            ("connections", Int64(connections.count)),
            ("connections.accepted", Int64(statistics.connectionsAccepted)),
            ("connections.refused", Int64(statistics.connectionsRefused)),
            ("lists", Int64(lists.count)),
            ("subscriptions", Int64(lists.values.reduce(0) { $0 + $1.subscribers.count })),
            ("batches", Int64(statistics.batchesCommitted)),
            ("mutations.committed", Int64(statistics.mutationsCommitted)),
            ("mutations.rejected", Int64(statistics.mutationsRejected)),
            ("frames.sent", Int64(statistics.framesSent)),
            ("bytes.sent", Int64(statistics.bytesSent)),
            ("subscribers.paused", Int64(statistics.slowConsumerEvents)),
            ("catchup.diffs", Int64(statistics.catchUpDiffs)),
            ("catchup.snapshots", Int64(statistics.catchUpSnapshots)),
            ("store.syncs", Int64(statistics.storeSyncs)),
            ("store.snapshots", Int64(statistics.storeSnapshots)),
            ("snapshots.encoded", Int64(statistics.snapshotsEncoded)),
            ("frames.offloaded", Int64(statistics.framesBuiltOffLoop)),
        ]
        // Each hosted list by name with its version (`flowsync lists`), the first
        // `maxListedInStats` by name: a bounded reply whatever the server holds.
        // Only the lists the token may read are named (auth off: all of them).
        for name in lists.keys.sorted().lazy.filter({ grant.mayRead($0) }).prefix(Self.maxListedInStats) {
            entries.append(("list:" + name, Int64(lists[name]!.position.version)))
        }
        if let name, let list = lists[name] {
            entries += [
                ("list.epoch", Int64(bitPattern: list.position.epoch)),
                ("list.version", Int64(list.position.version)),
                ("list.sections", Int64(list.sequencer.director.sections.count)),
                ("list.rows", Int64(list.sequencer.director.rowCount)),
                ("list.subscribers", Int64(list.subscribers.count)),
                ("list.digest", Int64(bitPattern: list.sequencer.director.digest.rawValue)),
            ]
        }
        return entries.map { StatsReply.Entry(name: $0.0, value: $0.1) }
    }

    /// How many lists a server-wide StatsReply names (`list:NAME` entries).
    static let maxListedInStats = 1_000

    /// The names of the lists currently hosted (for tests and the CLI).
    public var listNames: [String] { lists.keys.sorted() }

    /// The connections subscribed to `list` (0 when it is not hosted).
    public func subscriberCount(of list: String) -> Int { lists[list]?.subscribers.count ?? 0 }

    /// The current director and position of a list (for tests and tools).
    public func state(of list: String) -> (director: Director, position: ListVersion)? {
        lists[list].map { ($0.sequencer.director, $0.position) }
    }

    /// The number of open connections.
    public var connectionCount: Int { connections.count }

    /// Snapshot builds and compactions running on worker threads (their completion has
    /// not run yet). A shutdown completes only when this is 0.
    public var offloadsInFlight: Int { offloadsOutstanding }

    /// The most bytes queued for any one connection (this turn's frames plus what libuv
    /// holds): the figure back-pressure keeps bounded.
    public var largestQueue: Int { connections.values.map(\.queuedBytes).max() ?? 0 }
}
