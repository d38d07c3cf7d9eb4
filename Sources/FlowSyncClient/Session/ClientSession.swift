import FlowSyncCore
import FlowSyncProtocol

/// The client's protocol logic as a pure state machine: inputs (a message arrived, the
/// connection closed, the app edited a list, a timer fired) in, ``SessionAction``s out.
///
/// No sockets, no clock, no threads: the shell (``FlowSyncClient``) owns those and
/// serialises the inputs. Tests drive it message by message.
///
/// It routes: the connection's lifecycle is ``ClientConnection`` (its own state
/// machine), each list's replica and write pipeline is a ``ListReplica``
/// (ListWritePipeline.swift); this type holds them, numbers the writes and the stats
/// requests, and turns a connection verdict into its list-level consequences.
///
/// Protocol rules it follows (docs/PROTOCOL.md):
/// - Hello first; nothing else before the Welcome.
/// - After a reconnect: Subscribe with the replica's position and digest, then resend the
///   Mutate that was in flight unchanged (same `seq`), so the server's idempotency table
///   answers it if it was already committed: nothing applies twice.
/// - After every batch the replica's digest is compared with the server's; a mismatch,
///   a gap or a batch that does not apply asks for a fresh snapshot (Unsubscribe, then a
///   Subscribe without position), and the reload is delivered as a change.
struct ClientSession: Sendable {
    typealias Phase = ClientConnection.Phase

    struct Settings: Sendable {
        var clientID: String
        var clientName: String
        var token: String?
        /// Whether the shell can fetch a new token (a token provider is configured): then
        /// a "refresh token" error (2000–2002) reconnects with a fresh token instead of
        /// ending the client.
        var refreshesTokens = false
        /// Consecutive "refresh token" refusals after which the client gives up.
        var maxTokenRefreshes = 3
        var reconnect: ReconnectPolicy
        /// Ping when nothing arrived for this long; drop the connection after twice as
        /// long. 0 disables.
        var pingIntervalMilliseconds: UInt64
        /// Drop a connection that is not ready after this long.
        var handshakeTimeoutMilliseconds: UInt64
        /// The first `seq`; later writes count up from it.
        var firstSeq: UInt64
        var randomSeed: UInt64
        /// The servers, tried in turn (``EndpointRotation``); at least one.
        var endpoints: [Endpoint] = [Endpoint(host: "127.0.0.1", port: 7400)]
        /// Which endpoint is tried first.
        var endpointOrder: EndpointOrder = .listed
    }

    var settings: ClientSession.Settings { connection.settings }
    private(set) var connection: ClientConnection
    private(set) var lists: [String: ListReplica] = [:]
    private var nextSeq: UInt64
    private var nextRequestID: UInt64 = 1
    private var statsRequests: Set<UInt64> = []
    /// BackupRequests sent and not answered (they fail like stats requests).
    private var backupRequests: Set<UInt64> = []

    var phase: Phase { connection.phase }
    /// The endpoint in use, or tried next.
    var endpoint: Endpoint { connection.endpoint }
    /// The token the next Hello carries.
    var token: String? { connection.token }
    /// The heartbeat in force (the smaller of this client's and the server's), ms; 0 none.
    var heartbeatMilliseconds: UInt64 { connection.heartbeatMilliseconds }
    var serverLimits: ServerLimits? { connection.serverLimits }

    /// The server's limits on one write, as director limits (counts stay unlimited:
    /// the server judges those against the whole list).
    var writeLimits: DirectorLimits? {
        guard let limits = serverLimits else { return nil }
        return DirectorLimits(
            maxIDBytes: Int(limits.maxIDBytes), maxKindBytes: ListReplica.limits.maxKindBytes,
            maxPayloadBytes: Int(limits.maxPayloadBytes), maxSections: .max, maxRows: .max,
            maxOpsPerMutation: Int(limits.maxOpsPerMutation))
    }

    init(settings: Settings) {
        self.connection = ClientConnection(settings: settings)
        self.nextSeq = settings.firstSeq
    }

    /// What a list's pipeline needs to know of the session.
    private var context: ListReplica.Context {
        ListReplica.Context(clientID: settings.clientID, isReady: connection.isReady)
    }

    // MARK: App inputs

    /// Starts connecting.
    mutating func start(now: UInt64) -> [SessionAction] {
        connection.start(now: now)
    }

    /// The `seq` the next write will get.
    var nextSequenceNumber: UInt64 { nextSeq }

    /// Subscribes to `name` (once; later calls do nothing). Sent now when ready, else on
    /// the next Welcome.
    ///
    /// With `restoring` (the list as a previous launch left it on disk), the replica
    /// starts from it: it is shown at once (a change with cause `.initial`, its snapshot
    /// marked ``ListReplica/isRestored``), the Subscribe resumes from its position and
    /// digest, and its pending writes are sent as if this session had made them — the
    /// one that was sent is resent unchanged, so the server's idempotency window
    /// answers it if it had committed.
    mutating func subscribe(_ name: String, restoring restored: RestoredList? = nil) -> [SessionAction] {
        guard lists[name] == nil else { return [] }
        let list = ListReplica(name: name)
        lists[name] = list
        var actions: [SessionAction] = []
        if let restored {
            if let position = restored.position {
                list.confirmed = restored.confirmed
                list.position = position
                list.isRestored = true
            }
            list.pending = restored.pending
            // Writes acked at or before the replica's position are in it already.
            list.dropConfirmed(seqs: [])
            _ = list.rebuildView()
            if let last = restored.pending.map(\.seq).max() { nextSeq = max(nextSeq, last + 1) }
            nextSeq = max(nextSeq, restored.nextSeq)
            if list.position != nil || !list.pending.isEmpty {
                actions.append(
                    list.deliver(.initial, Changeset.diff(from: Director(limits: ListReplica.limits), to: list.view)))
            }
        }
        guard connection.isReady else { return actions }
        return actions + [.send(list.subscribeMessage)] + list.resendUnanswered()
    }

    /// Applies `operations` to the list's view at once and queues them as one write.
    ///
    /// - Parameter base: The view the app built `operations` on, when it may be older
    ///   than the current one (``ListReplica/edit(_:seq:limits:basedOn:)``).
    /// - Returns: The write's `seq` and the actions (the local change, maybe the Mutate).
    /// - Throws: ``FlowSyncError/invalidEdit(_:)`` when they do not apply to the view.
    mutating func submit(
        _ operations: [Operation], to name: String, basedOn base: Director? = nil
    ) throws(FlowSyncError) -> (seq: UInt64, actions: [SessionAction]) {
        if phase == .closed { throw connection.refusal ?? .closed }
        guard let list = lists[name] else { throw .closed }
        if case .failed(let error) = list.phase { throw error }
        let seq = nextSeq
        let changeset: Changeset
        do {
            changeset = try list.edit(operations, seq: seq, limits: writeLimits, basedOn: base)
        } catch {
            throw .invalidEdit(error)
        }
        nextSeq += 1
        return (seq, [list.deliver(.local(seq: seq), changeset)] + list.sendNext(context))
    }

    /// Stops following `name`: Unsubscribe when ready; its unanswered writes fail with
    /// ``FlowSyncError/closed`` and its observers end. Subscribing again starts afresh
    /// (from disk, with persistence, where its writes wait).
    mutating func unsubscribe(_ name: String) -> [SessionAction] {
        guard let list = lists.removeValue(forKey: name) else { return [] }
        var actions: [SessionAction] = connection.isReady ? [.send(.unsubscribe(Unsubscribe(listName: name)))] : []
        for write in list.pending where write.ackedAt == nil {
            actions.append(.complete(list: name, seq: write.seq, .failure(.closed)))
        }
        actions.append(.listFailed(list: name, .closed))
        return actions
    }

    // MARK: Lifecycle (mobile)

    /// The app goes to the background: close the connection (or stop waiting to
    /// reconnect) and stay offline until ``resume(now:)``. Replicas and pending writes
    /// stay; the next connection resumes every list from where it is.
    mutating func pause(now: UInt64) -> [SessionAction] {
        guard let wasOpen = connection.pause() else { return [] }
        guard wasOpen else { return [.status(.paused)] }
        return connectionLost() + [.disconnect(reason: "paused by the app"), .status(.paused)]
    }

    /// The app is back in the foreground: connect now.
    mutating func resume(now: UInt64) -> [SessionAction] {
        connection.resume(now: now)
    }

    /// Skip the backoff and connect now (a network path appeared, the app came to the
    /// foreground); resumes a paused session too. Nothing when connected or connecting.
    mutating func reconnectNow(now: UInt64) -> [SessionAction] {
        connection.reconnectNow(now: now)
    }

    /// Asks the server for its statistics (of one list, when named).
    mutating func requestStats(list: String?) -> (requestID: UInt64, actions: [SessionAction]) {
        let id = nextRequestID
        nextRequestID += 1
        guard connection.isReady else {
            return (id, [.stats(requestID: id, .failure(connection.refusal ?? .closed))])
        }
        statsRequests.insert(id)
        return (id, [.send(.statsRequest(StatsRequest(requestID: id, listName: list)))])
    }

    /// Asks the server for a backup of every list into `directory` (on its machine).
    mutating func requestBackup(directory: String) -> (requestID: UInt64, actions: [SessionAction]) {
        let id = nextRequestID
        nextRequestID += 1
        guard connection.isReady else {
            return (id, [.backup(requestID: id, .failure(connection.refusal ?? .closed))])
        }
        backupRequests.insert(id)
        return (id, [.send(.backupRequest(BackupRequest(requestID: id, directory: directory)))])
    }

    /// Unanswered backup requests die with the connection: the backup may still complete
    /// on the server, but its answer is lost (the CLI says so).
    private mutating func failBackupRequests(_ error: FlowSyncError) -> [SessionAction] {
        defer { backupRequests = [] }
        return backupRequests.sorted().map { .backup(requestID: $0, .failure(error)) }
    }

    /// Stops for good: every unanswered write fails with ``FlowSyncError/closed``.
    mutating func close() -> [SessionAction] {
        guard let wasOpen = connection.close() else { return [] }
        var actions = failEverything(with: .closed)
        if wasOpen { actions.append(.disconnect(reason: "closed by the app")) }
        actions.append(.status(.closed(nil)))
        return actions
    }

    /// The token for the next Hello (fetched by the shell from the token provider,
    /// outside the lock, before each connection attempt).
    mutating func useToken(_ token: String?) {
        connection.useToken(token)
    }

    /// Replaces the token: sent at once in a RefreshToken when ready (in-band refresh,
    /// the connection stays), and used by every later Hello.
    mutating func refresh(token: String) -> [SessionAction] {
        connection.refresh(token: token)
    }

    // MARK: Transport inputs

    /// The connection is open: say Hello.
    mutating func connected(now: UInt64) -> [SessionAction] {
        connection.connected(now: now)
    }

    /// The connection closed (or never opened): back off, then reconnect — unless the
    /// app closed the client or the server refused it for good.
    mutating func transportClosed(reason: String, now: UInt64) -> [SessionAction] {
        switch connection.transportClosed(reason: reason, now: now) {
        case .ignored:
            return []
        case .closedForGood(let error):
            return failEverything(with: error) + [.status(.closed(error))]
        case .retry(let delay):
            return connectionLost() + [
                .status(.disconnected(reason: reason, retryInMilliseconds: delay)),
                .scheduleReconnect(milliseconds: delay),
            ]
        }
    }

    /// The reconnect timer fired.
    mutating func reconnectDue(now: UInt64) -> [SessionAction] {
        connection.reconnectDue(now: now)
    }

    /// Periodic check (the shell calls it at least four times per heartbeat, and at
    /// least every second): handshake deadline, heartbeat pings, dead-connection detection.
    mutating func tick(now: UInt64) -> [SessionAction] {
        connection.tick(now: now)
    }

    /// A frame could not be decoded: framing cannot be trusted any more, so close and
    /// reconnect (protocol rule 5).
    mutating func decodingFailed(_ error: ProtocolError) -> [SessionAction] {
        [.disconnect(reason: "bad frame from server: \(error)")]
    }

    /// The shell could not send write `seq` of `list` (its frame is over the server's
    /// limit: sent, it would be a frame fault that closes the connection, and resent
    /// after every reconnect, forever). It fails with `error` and is rolled back.
    mutating func sendFailed(list name: String, seq: UInt64, _ error: FlowSyncError) -> [SessionAction] {
        guard let list = lists[name] else { return [.complete(list: name, seq: seq, .failure(error))] }
        return list.refuse(seq: seq, error, context)
    }

    /// A message arrived.
    mutating func received(_ message: Message, now: UInt64) -> [SessionAction] {
        connection.heard(now: now)
        if phase == .handshaking {
            switch message {
            case .welcome(let welcome): return welcomed(welcome)
            case .error(let error): return serverError(error)
            default: return [.disconnect(reason: "unexpected \(message.type) before Welcome")]
            }
        }
        guard connection.isReady else { return [] }
        let context = self.context
        switch message {
        case .snapshot(let snapshot): return lists[snapshot.listName]?.receive(snapshot, context) ?? []
        case .diff(let diff): return lists[diff.listName]?.receive(diff, context) ?? []
        case .ack(let ack):
            // A list unsubscribed meanwhile still completes its write.
            return lists[ack.listName]?.receive(ack, context) ?? [
                .complete(list: ack.listName, seq: ack.seq, .success(ack.committed))
            ]
        case .reject(let reject):
            if Self.nodeCannotServe(reject.code), let leave = connection.leaveForNextEndpoint(reason: reject.message) {
                // Not applied here: the write stays pending and is resent, with its
                // `seq`, on the next endpoint.
                return leave
            }
            let error = FlowSyncError.rejected(code: reject.code, message: reject.message)
            return lists[reject.listName]?.refuse(seq: reject.seq, error, context) ?? [
                .complete(list: reject.listName, seq: reject.seq, .failure(error))
            ]
        case .error(let error): return serverError(error)
        case .ping(let ping): return [.send(.pong(Pong(nonce: ping.nonce)))]
        case .pong: return []
        case .notice(let notice):
            // Reconnect after the delay the server asked for (the close follows).
            connection.serverAsked(delayMilliseconds: UInt64(notice.delayMilliseconds))
            return []
        case .statsReply(let reply):
            guard statsRequests.remove(reply.requestID) != nil else { return [] }
            return [.stats(requestID: reply.requestID, .success(reply))]
        case .backupReply(let reply):
            guard backupRequests.remove(reply.requestID) != nil else { return [] }
            return [.backup(requestID: reply.requestID, .success(reply))]
        case .welcome, .hello, .subscribe, .unsubscribe, .mutate, .statsRequest, .refreshToken, .backupRequest:
            return [.disconnect(reason: "unexpected \(message.type) from server")]
        }
    }

    // MARK: Routing

    private mutating func welcomed(_ welcome: Welcome) -> [SessionAction] {
        var actions = connection.welcomed(welcome)
        // Resubscribe every list from where its replica is, then resend what was in
        // flight; sorted so the order is repeatable.
        for name in lists.keys.sorted() {
            let list = lists[name]!
            switch list.phase {
            case .failed:
                continue
            case .resyncing:
                actions.append(.send(.subscribe(Subscribe(listName: name, resumeFrom: nil, digest: nil))))
            case .subscribing, .live:
                list.phase = .subscribing
                actions.append(.send(list.subscribeMessage))
            }
            list.inFlight = nil
            list.committedUnacked = []  // Acks of the old connection never come
            actions += list.resendUnanswered()
        }
        return actions
    }

    private mutating func serverError(_ error: ErrorMessage) -> [SessionAction] {
        if let name = error.listName, !error.closesConnection {
            // Subscription errors; already-subscribed and not-subscribed are harmless
            // echoes of a resync.
            if error.code == .alreadySubscribed || error.code == .notSubscribed { return [] }
            if Self.nodeCannotServe(error.code), let leave = connection.leaveForNextEndpoint(reason: error.message) {
                return leave
            }
            return lists[name]?.fail(.listFailed(code: error.code, message: error.message)) ?? []
        }
        guard error.closesConnection else { return [] }
        return connection.serverClosed(error)
    }

    /// Whether a list-scoped refusal with `code` means "this node cannot serve the list
    /// now" rather than "this request is wrong": the server-state family (5000–5999, but
    /// not a refused backup): a list that cannot be loaded on that node (5002: damaged,
    /// or a cluster node's PostgreSQL failed), too many requests waiting for it (5003).
    /// With several endpoints the client then moves to the next one instead of failing
    /// the list or the write. With one
    /// endpoint nothing changes: the list fails (or the write is rejected) as before.
    static func nodeCannotServe(_ code: ErrorCode) -> Bool {
        (5000...5999).contains(code.rawValue) && code != .backupRefused
    }

    /// The connection went away but the client goes on: in-flight stats requests die
    /// with it, and live lists wait for their resubscription.
    private mutating func connectionLost() -> [SessionAction] {
        var actions: [SessionAction] = statsRequests.sorted().map { .stats(requestID: $0, .failure(.closed)) }
        statsRequests = []
        actions += failBackupRequests(.closed)
        for list in lists.values {
            if case .live = list.phase { list.phase = .subscribing }
        }
        return actions
    }

    private mutating func failEverything(with error: FlowSyncError) -> [SessionAction] {
        var actions: [SessionAction] = []
        for name in lists.keys.sorted() {
            for write in lists[name]!.pending where write.ackedAt == nil {
                actions.append(.complete(list: name, seq: write.seq, .failure(error)))
            }
            actions.append(.listFailed(list: name, error))
        }
        actions += statsRequests.sorted().map { .stats(requestID: $0, .failure(error)) }
        statsRequests = []
        actions += failBackupRequests(error)
        return actions
    }
}

extension ClientSession {
    /// Test hook: makes the replica of `name` drift from the server (a row the server
    /// never sent), as a bug or a bit flip would, and reports it as a change so the
    /// app's view stays consistent. The next batch's digest check must catch it.
    mutating func injectDriftForTesting(_ name: String) -> [SessionAction] {
        guard let list = lists[name] else { return [] }
        let section = Section(
            id: "drift-\(list.confirmed.sections.count)", rows: [Row(id: "drift-row-\(list.confirmed.rowCount)")])
        _ = try? list.confirmed.apply([.insertSections([section], at: list.confirmed.sections.count)])
        return list.rebuildViewChange(.remote)
    }
}

/// A list as a previous launch left it on disk (``ClientSession/subscribe(_:restoring:)``).
struct RestoredList: Sendable {
    /// The confirmed state at ``position``; empty when only writes were stored.
    var confirmed: Director
    /// `nil` when no replica file was usable.
    var position: ListVersion?
    /// The stored writes, oldest first.
    var pending: [PendingWrite]
    /// The next `seq` the previous launch would have used.
    var nextSeq: UInt64
}
