import Dispatch
import FlowSyncCore
import FlowSyncProtocol
import Foundation
import Logging

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The I/O shell around ``ClientSession``: it owns the lock, the codec and the
/// observers, feeds the session its inputs and carries out its actions.
///
/// Threading: every input — an app call on any thread, bytes from the transport thread,
/// a timer — runs under one lock, and the actions it produces are carried out under that
/// same lock. That is what keeps things in order: frames reach the transport in the
/// order the session produced them (the transport's queue is FIFO), and changes reach
/// each observer's queue in the order they happened. Nothing under the lock blocks:
/// writes are queued to the transport, callbacks are dispatched to queues, never called.
final class ClientCore: @unchecked Sendable {
    let configuration: FlowSyncClient.Configuration
    let transport: any ClientTransport
    /// Where lists are kept between launches (``FlowSyncClient/Configuration/persistence``).
    let directory: ReplicaDirectory?
    /// Guards ``state``; every access goes through ``withLock(_:)``. (A class with a
    /// lock rather than `Mutex<State>`: the closures that run under it capture
    /// continuations and handlers, which region isolation cannot see through.)
    private let lock = NSLock()
    private var _state: State

    func withLock<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        let result: T
        do {
            result = try body(&_state)
        } catch {
            lock.unlock()
            throw error
        }
        // Work that may call back into the client (finishing a stream runs its
        // termination handler synchronously) runs after the unlock: the lock is not
        // recursive.
        let deferred = _state.afterUnlock
        _state.afterUnlock = []
        lock.unlock()
        for work in deferred { work() }
        return result
    }

    struct Observer {
        let queue: DispatchQueue
        let handler: @Sendable (ListChange) -> Void
    }

    struct State {
        /// The list as the app sees it now. Built on each read rather than cached: a
        /// cached copy would share the replica's storage, and the next edit would have
        /// to copy the whole list.
        func snapshot(of name: String) -> ListSnapshot? {
            guard let list = session.lists[name] else { return nil }
            return ListSnapshot(
                name: name, director: list.view, version: list.position,
                pendingWrites: list.pending.count, isFromDisk: list.isRestored, registry: registry)
        }

        /// Registers a new observer or stream of `name` and returns the change that
        /// brings it from an empty list to the current state (`nil` when that is empty,
        /// or when `includingCurrent` is false). Runs under the lock, like every
        /// delivery: the caller queues that change before the lock is released, so the
        /// next delivery comes after it, starts where it ends, and nothing is missed or
        /// shown twice.
        mutating func startObserving(_ name: String, includingCurrent: Bool) -> ListChange? {
            let current =
                snapshot(of: name)
                ?? ListSnapshot(
                    name: name, director: Director(limits: ListReplica.limits), version: nil,
                    pendingWrites: 0, registry: registry)
            // With observers already there, the next change starts from `delivered`; it
            // shows the same list as `current` (every visible edit is delivered) but
            // may carry an older version or pending count, so refresh it then.
            if delivered[name].map({ $0.director.digest == current.director.digest }) ?? true {
                delivered[name] = current
            }
            guard includingCurrent, let shown = delivered[name], shown.isLoaded || shown.numberOfSections > 0 else {
                return nil
            }
            let empty = ListSnapshot(
                name: name, director: Director(limits: ListReplica.limits), version: nil,
                pendingWrites: 0, registry: registry)
            return ListChange(
                cause: .initial, previous: empty, changeset: Changeset.diff(from: empty.director, to: shown.director),
                snapshot: shown)
        }

        /// Forgets the previous snapshot of `name` once nothing observes it.
        mutating func stopObservingIfUnobserved(_ name: String) {
            if observers[name]?.isEmpty ?? true, streams[name]?.isEmpty ?? true { delivered[name] = nil }
        }

        var session: ClientSession
        var encoder = FrameEncoder()
        var decoder = FrameDecoder(limits: .client)
        var registry = ModelRegistry()
        var failures: [String: FlowSyncError] = [:]
        var tickets: [String: [UInt64: WriteTicket]] = [:]
        var observers: [String: [UInt64: Observer]] = [:]
        var streams: [String: [UInt64: AsyncThrowingStream<ListChange, any Error>.Continuation]] = [:]
        /// Per observed list, the snapshot of the last change delivered (or the state
        /// when the first observer started): the next change's ``ListChange/previous``.
        /// Kept only while the list has an observer or a stream, because holding it
        /// shares the replica's storage and makes the next edit copy what it touches.
        var delivered: [String: ListSnapshot] = [:]
        var loadWaiters: [String: [CheckedContinuation<Result<Void, FlowSyncError>, Never>]] = [:]
        var statsWaiters: [UInt64: CheckedContinuation<Result<StatsReply, FlowSyncError>, Never>] = [:]
        var backupWaiters: [UInt64: CheckedContinuation<Result<BackupReply, FlowSyncError>, Never>] = [:]
        var statusObservers: [UInt64: (DispatchQueue, @Sendable (ConnectionStatus) -> Void)] = [:]
        var statusStreams: [UInt64: AsyncStream<ConnectionStatus>.Continuation] = [:]
        var status: ConnectionStatus = .connecting
        var nextObserverID: UInt64 = 1
        var tickerRunning = false
        var shutDown = false
        /// Run by ``withLock(_:)`` once the lock is released.
        var afterUnlock: [@Sendable () -> Void] = []
        /// Bumped per connection, so transport events of an old one are ignored.
        var connection = 0
        /// What to write to ``ClientCore/directory`` and when; `nil` without one.
        var persistence: ReplicaPersistence?
        /// Per list and write, the observers a local change is not delivered to
        /// (``ListDirector/submit(_:withoutNotifying:)``).
        var silenced: [String: [UInt64: Set<UInt64>]] = [:]
        /// Orders captures of the lists' state for writing (``ReplicaDirectory/Job``).
        var persistGeneration: UInt64 = 0
    }

    /// - Throws: ``FlowSyncError/persistenceUnavailable(_:)`` when the persistence
    ///   directory cannot be created or another client uses it: an app that asked for
    ///   offline lists must not silently get lists that vanish at the next launch.
    init(configuration: FlowSyncClient.Configuration, transport: any ClientTransport) throws(FlowSyncError) {
        var configuration = configuration
        var directory: ReplicaDirectory?
        if let options = configuration.persistence {
            do throws(ReplicaFileError) {
                let opened = try ReplicaDirectory(
                    path: options.directory, synchronizes: options.synchronizesToDisk, logger: configuration.logger)
                // The stored identity wins: the stored writes were made under it, and
                // a resend must carry it for the server to recognise them.
                configuration.clientID = opened.clientID(proposing: configuration.clientID)
                directory = opened
            } catch {
                throw .persistenceUnavailable(error.message)
            }
        }
        self.directory = directory
        self.configuration = configuration
        self.transport = transport
        let settings = ClientSession.Settings(
            clientID: configuration.clientID, clientName: configuration.clientName, token: configuration.token,
            refreshesTokens: configuration.tokenProvider != nil, maxTokenRefreshes: configuration.maxTokenRefreshes,
            reconnect: configuration.reconnect, pingIntervalMilliseconds: configuration.pingIntervalMilliseconds,
            handshakeTimeoutMilliseconds: configuration.handshakeTimeoutMilliseconds,
            firstSeq: configuration.firstSeq, randomSeed: configuration.randomSeed,
            endpoints: configuration.endpoints, endpointOrder: configuration.endpointOrder)
        _state = State(session: ClientSession(settings: settings))
        if directory != nil, let options = configuration.persistence {
            _state.persistence = ReplicaPersistence(options: options)
        }
    }

    /// Milliseconds on the monotonic clock (FlowSync's one, ``MonotonicClock``).
    static func now() -> UInt64 {
        MonotonicClock.milliseconds()
    }

    // MARK: Inputs

    /// The token provider's answer (`nil` without a provider: the configured token stays).
    func freshToken() -> String?? {
        guard let provider = configuration.tokenProvider else { return nil }
        return .some(provider())
    }

    func start() {
        let token = freshToken()
        input { session in
            if let token { session.useToken(token) }
            return session.start(now: Self.now())
        }
        startTicker()
    }

    /// Runs one session input and carries out its actions, under the lock.
    func input(_ body: (inout ClientSession) -> [SessionAction]) {
        withLock { state in
            let actions = body(&state.session)
            perform(actions, &state)
        }
    }

    /// Like ``input(_:)`` for inputs that return a value as well.
    func input<T>(_ body: (inout State) -> (T, [SessionAction])) -> T {
        withLock { state in
            let (value, actions) = body(&state)
            perform(actions, &state)
            return value
        }
    }

    func read<T>(_ body: (State) -> T) -> T {
        withLock { body($0) }
    }

    func update<T>(_ body: (inout State) -> T) -> T {
        withLock { body(&$0) }
    }

    private func transportEvent(_ event: TransportEvent, connection: Int) {
        withLock { state in
            guard state.connection == connection else { return }
            let now = Self.now()
            switch event {
            case .connected:
                perform(state.session.connected(now: now), &state)
            case .received(let bytes):
                state.decoder.feed(bytes)
                // One message at a time: the Welcome changes how the next frame decodes
                // (its dictionary), so each is handled before the next is decoded.
                while state.connection == connection {
                    let message: Message?
                    do throws(ProtocolError) {
                        message = try state.decoder.next()
                    } catch {
                        perform(state.session.decodingFailed(error), &state)
                        break
                    }
                    guard let message else { break }
                    perform(state.session.received(message, now: now), &state)
                }
            case .closed(let reason):
                state.connection += 1  // ignore anything late from this connection
                state.encoder = FrameEncoder()
                state.decoder = FrameDecoder(limits: .client)
                perform(state.session.transportClosed(reason: reason, now: now), &state)
            }
        }
    }

    // MARK: Actions

    func perform(_ actions: [SessionAction], _ state: inout State) {
        performWithoutPersisting(actions, &state)
        persist(&state)
    }

    private func performWithoutPersisting(_ actions: [SessionAction], _ state: inout State) {
        // Every verdict of this input is known to the persistence first: a `.send` below
        // persists mid-list (the "sent" mark must be on disk before the Mutate leaves),
        // and a write the session already moved out of its pending queue whose
        // `.complete` came later in the list would look rejected there and leave the
        // pending file, though no replica on disk holds it yet.
        for case .complete(let list, let seq, let result) in actions {
            state.persistence?.completed(list: list, seq: seq, result)
        }
        for action in actions {
            switch action {
            case .connect(let endpoint):
                state.connection += 1
                let connection = state.connection
                state.encoder = FrameEncoder()
                state.decoder = FrameDecoder(limits: .client)
                transport.connect(host: endpoint.host, port: endpoint.port) { [weak self] event in
                    self?.transportEvent(event, connection: connection)
                }
            case .send(let message):
                if case .mutate = message, directory != nil {
                    // The pending file must say "sent" before the Mutate can reach the
                    // server: otherwise a kill in between relaunches the write as unsent,
                    // and it would be re-resolved and sent as a new write (a swap applied
                    // twice). Its write is queued now, ahead of the frame (send(_:_:)).
                    persist(&state)
                }
                let frame = state.encoder.encode(message)
                if case .mutate(let mutate) = message, let limits = state.session.serverLimits,
                    !limits.accepts(encodedFrame: frame)
                {
                    // Sent, it would be a frame fault that closes the connection (and,
                    // resent after every reconnect, forever). The session fails and
                    // rolls it back, with the code the server would have used.
                    let error = FlowSyncError.rejected(
                        code: .frameTooLarge,
                        message:
                            "the write is \(FrameEncoder.lengthPrefixValue(ofEncodedFrame: frame)) bytes on the wire, the server accepts \(limits.maxFrameBytes) (refused before sending; split it)"
                    )
                    perform(state.session.sendFailed(list: mutate.listName, seq: mutate.seq, error), &state)
                    continue
                }
                send(frame, state)
            case .disconnect(let reason):
                configuration.logger.debug("disconnecting: \(reason)")
                transport.disconnect()
            case .scheduleReconnect(let ms):
                transport.schedule(after: ms) { [weak self] in
                    guard let self else { return }
                    // The provider runs here, outside the lock (it may be slow or
                    // re-enter the client); the session only ever sees its answer.
                    let token = freshToken()
                    input { session in
                        if let token { session.useToken(token) }
                        return session.reconnectDue(now: Self.now())
                    }
                }
            case .useDictionary(let dictionary):
                state.encoder.configuration.dictionary = dictionary
                state.decoder.dictionary = dictionary
            case .deliver(let list, let cause, let changeset, let view, let version, let pending):
                deliver(
                    list: list, cause: cause, changeset: changeset, view: view, version: version, pending: pending,
                    &state)
            case .complete(let list, let seq, let result):
                if let ticket = state.tickets[list]?.removeValue(forKey: seq) { ticket.resolve(result) }
            case .listFailed(let list, let error):
                state.failures[list] = error
                for (_, stream) in state.streams.removeValue(forKey: list) ?? [:] {
                    // Closing the client ends the sequences normally; a failure throws.
                    state.afterUnlock.append {
                        if error == .closed { stream.finish() } else { stream.finish(throwing: error) }
                    }
                }
                state.stopObservingIfUnobserved(list)
                for waiter in state.loadWaiters.removeValue(forKey: list) ?? [] {
                    waiter.resume(returning: .failure(error))
                }
            case .stats(let id, let result):
                state.statsWaiters.removeValue(forKey: id)?.resume(returning: result)
            case .backup(let id, let result):
                state.backupWaiters.removeValue(forKey: id)?.resume(returning: result)
            case .status(let status):
                state.status = status
                configuration.logger.debug("status: \(status)")
                for (_, (queue, handler)) in state.statusObservers {
                    queue.async { handler(status) }
                }
                for (_, stream) in state.statusStreams { stream.yield(status) }
                if case .closed = status {
                    let ended = Array(state.statusStreams.values)
                    state.statusStreams = [:]
                    state.afterUnlock.append { for stream in ended { stream.finish() } }
                }
            }
        }
    }

    private func deliver(
        list: String, cause: ListChange.Cause, changeset: Changeset, view: Director,
        version: ListVersion?, pending: Int, _ state: inout State
    ) {
        let snapshot = ListSnapshot(
            name: list, director: view, version: version, pendingWrites: pending,
            isFromDisk: state.session.lists[list]?.isRestored ?? false, registry: state.registry)
        var skipped: Set<UInt64> = []
        if case .local(let seq) = cause, let ids = state.silenced[list]?.removeValue(forKey: seq) { skipped = ids }
        if version != nil {
            for waiter in state.loadWaiters.removeValue(forKey: list) ?? [] { waiter.resume(returning: .success(())) }
        }
        // Unobserved lists build no change (and keep no previous snapshot).
        guard let previous = state.delivered[list] else { return }
        state.delivered[list] = snapshot
        let change = ListChange(cause: cause, previous: previous, changeset: changeset, snapshot: snapshot)
        for (id, observer) in state.observers[list] ?? [:] where !skipped.contains(id) {
            let handler = observer.handler
            observer.queue.async { handler(change) }
        }
        for (_, stream) in state.streams[list] ?? [:] {
            stream.yield(change)
        }
    }

    // MARK: Shutdown

    /// Closes the session (failing what is unanswered) and stops the transport.
    func close() {
        let streams = withLock { state -> [AsyncThrowingStream<ListChange, any Error>.Continuation]? in
            guard !state.shutDown else { return nil }
            persist(&state, flush: true)
            state.shutDown = true  // nothing is written after this
            perform(state.session.close(), &state)
            let all = state.streams.values.flatMap(\.values)
            state.streams = [:]
            for (_, waiters) in state.loadWaiters {
                for waiter in waiters { waiter.resume(returning: .failure(.closed)) }
            }
            state.loadWaiters = [:]
            return all
        }
        guard let streams else { return }
        directory?.finish()  // replica writes queued before the close end before it returns; then the lock goes
        for stream in streams { stream.finish() }
        transport.shutdown()
    }
}
