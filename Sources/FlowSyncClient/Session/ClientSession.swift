import FlowSyncCore
import FlowSyncProtocol

/// The client's protocol logic as a pure state machine: inputs (a message arrived, the
/// connection closed, the app edited a list, a timer fired) in, ``SessionAction``s out.
///
/// No sockets, no clock, no threads: the shell (``FlowSyncClient``) owns those and
/// serialises the inputs. Tests drive it message by message.
///
/// Protocol rules it follows (docs/PROTOCOL.md):
/// - Hello first; nothing else before the Welcome.
/// - One Mutate in flight per list, the next one based on the confirmed version that
///   contains the previous one — so its indices mean what the app meant.
/// - After a reconnect: Subscribe with the replica's position and digest, then resend the
///   Mutate that was in flight unchanged (same `seq`), so the server's idempotency table
///   answers it if it was already committed: nothing applies twice.
/// - After every batch the replica's digest is compared with the server's; a mismatch,
///   a gap or a batch that does not apply asks for a fresh snapshot (Unsubscribe, then a
///   Subscribe without position), and the reload is delivered as a change.
struct ClientSession: Sendable {
    /// Connection phases.
    enum Phase: Sendable, Equatable {
        case idle
        case connecting
        /// Hello sent, Welcome awaited.
        case handshaking
        case ready
        /// Waiting for the reconnect timer.
        case backingOff
        /// Put in the background by the app: no connection until ``ClientSession/resume(now:)``.
        case paused
        case closed
    }

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
    }

    let settings: Settings
    private(set) var phase: Phase = .idle
    private(set) var lists: [String: ListReplica] = [:]
    private var nextSeq: UInt64
    private var failedAttempts = 0
    /// The token the next Hello carries (the shell replaces it before each connect when
    /// a token provider is configured).
    private(set) var token: String?
    /// "Refresh token" closes since the last Welcome.
    private var tokenRefusals = 0
    /// A delay the server asked for (an Error's back-off, a Notice).
    private var serverDelay: UInt64 = 0
    /// Set when the server refused the connection for good.
    private var refusal: FlowSyncError?
    private var phaseSince: UInt64 = 0
    private var lastReceived: UInt64 = 0
    private var lastPing: UInt64 = 0
    private var pingNonce: UInt64 = 0
    private var heartbeat: UInt64
    /// Set when this session dropped a connection it found dead: the reconnect then
    /// starts at once, without a backoff (the server is fine; the path was not).
    private var reconnectAtOnce = false

    /// The heartbeat in force (the smaller of this client's and the server's), ms; 0 none.
    var heartbeatMilliseconds: UInt64 { heartbeat }
    private var nextRequestID: UInt64 = 1
    private var statsRequests: Set<UInt64> = []
    /// BackupRequests sent and not answered (they fail like stats requests).
    private var backupRequests: Set<UInt64> = []
    private var random: SplitMix64
    private(set) var serverLimits: ServerLimits?

    /// The server's limits on one write, as director limits (counts stay unlimited:
    /// the server judges those against the whole list).
    var writeLimits: DirectorLimits? {
        guard let limits = serverLimits else { return nil }
        return DirectorLimits(maxIDBytes: Int(limits.maxIDBytes), maxKindBytes: ListReplica.limits.maxKindBytes,
                              maxPayloadBytes: Int(limits.maxPayloadBytes), maxSections: .max, maxRows: .max,
                              maxOpsPerMutation: Int(limits.maxOpsPerMutation))
    }

    init(settings: Settings) {
        self.settings = settings
        self.nextSeq = settings.firstSeq
        self.token = settings.token
        self.heartbeat = settings.pingIntervalMilliseconds
        self.random = SplitMix64(seed: settings.randomSeed)
    }

    // MARK: App inputs

    /// Starts connecting.
    mutating func start(now: UInt64) -> [SessionAction] {
        guard phase == .idle else { return [] }
        return beginConnect(now: now)
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
                actions.append(deliver(list, .initial, Changeset.diff(from: Director(limits: ListReplica.limits), to: list.view)))
            }
        }
        guard phase == .ready else { return actions }
        actions.append(.send(.subscribe(Subscribe(listName: name, resumeFrom: list.position,
                                                  digest: list.position == nil ? nil : list.confirmed.digest))))
        return actions + resendUnanswered(list)
    }

    /// Resends, unchanged, the write that was sent on an earlier connection (or by an
    /// earlier launch) and not answered. After a relaunch it may follow writes acked
    /// before the kill whose commit the replica does not hold yet, so it is the first
    /// write without an Ack, not the first write.
    private func resendUnanswered(_ list: ListReplica) -> [SessionAction] {
        guard let first = list.pending.first(where: { $0.ackedAt == nil }), let mutate = first.sent else { return [] }
        list.inFlight = first.seq
        return [.send(.mutate(mutate))]
    }

    /// Applies `operations` to the list's view at once and queues them as one write.
    ///
    /// - Returns: The write's `seq` and the actions (the local change, maybe the Mutate).
    /// - Throws: ``FlowSyncError/invalidEdit(_:)`` when they do not apply to the view.
    mutating func submit(_ operations: [Operation], to name: String) throws(FlowSyncError) -> (seq: UInt64, actions: [SessionAction]) {
        if phase == .closed { throw refusal ?? .closed }
        guard var list = lists[name] else { throw .closed }
        if case .failed(let error) = list.phase { throw error }
        let seq = nextSeq
        let changeset: Changeset
        do {
            changeset = try list.edit(operations, seq: seq, limits: writeLimits)
        } catch {
            throw .invalidEdit(error)
        }
        nextSeq += 1
        var actions: [SessionAction] = [deliver(list, .local(seq: seq), changeset)]
        actions += sendNext(&list)
        lists[name] = list
        return (seq, actions)
    }

    /// Stops following `name`: Unsubscribe when ready; its unanswered writes fail with
    /// ``FlowSyncError/closed`` and its observers end. Subscribing again starts afresh
    /// (from disk, with persistence, where its writes wait).
    mutating func unsubscribe(_ name: String) -> [SessionAction] {
        guard let list = lists.removeValue(forKey: name) else { return [] }
        var actions: [SessionAction] = phase == .ready ? [.send(.unsubscribe(Unsubscribe(listName: name)))] : []
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
        switch phase {
        case .closed, .paused, .idle:
            return []
        case .backingOff:
            phase = .paused
            return [.status(.paused)]
        case .connecting, .handshaking, .ready:
            phase = .paused
            phaseSince = now
            var actions: [SessionAction] = statsRequests.sorted().map { .stats(requestID: $0, .failure(.closed)) }
            statsRequests = []
            actions += failBackupRequests(.closed)
            for list in lists.values {
                if case .live = list.phase { list.phase = .subscribing }
            }
            actions.append(.disconnect(reason: "paused by the app"))
            actions.append(.status(.paused))
            return actions
        }
    }

    /// The app is back in the foreground: connect now.
    mutating func resume(now: UInt64) -> [SessionAction] {
        guard phase == .paused else { return [] }
        failedAttempts = 0
        return beginConnect(now: now)
    }

    /// Skip the backoff and connect now (a network path appeared, the app came to the
    /// foreground); resumes a paused session too. Nothing when connected or connecting.
    mutating func reconnectNow(now: UInt64) -> [SessionAction] {
        switch phase {
        case .backingOff:
            failedAttempts = 0
            return beginConnect(now: now)
        case .paused:
            return resume(now: now)
        case .idle, .connecting, .handshaking, .ready, .closed:
            return []
        }
    }

    /// Asks the server for its statistics (of one list, when named).
    mutating func requestStats(list: String?) -> (requestID: UInt64, actions: [SessionAction]) {
        let id = nextRequestID
        nextRequestID += 1
        guard phase == .ready else {
            return (id, [.stats(requestID: id, .failure(refusal ?? .closed))])
        }
        statsRequests.insert(id)
        return (id, [.send(.statsRequest(StatsRequest(requestID: id, listName: list)))])
    }

    /// Asks the server for a backup of every list into `directory` (on its machine).
    mutating func requestBackup(directory: String) -> (requestID: UInt64, actions: [SessionAction]) {
        let id = nextRequestID
        nextRequestID += 1
        guard phase == .ready else {
            return (id, [.backup(requestID: id, .failure(refusal ?? .closed))])
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
        guard phase != .closed else { return [] }
        let wasConnected = phase != .idle && phase != .backingOff && phase != .paused
        phase = .closed
        var actions = failEverything(with: .closed)
        if wasConnected { actions.append(.disconnect(reason: "closed by the app")) }
        actions.append(.status(.closed(nil)))
        return actions
    }

    // MARK: Transport inputs

    /// The connection is open: say Hello.
    mutating func connected(now: UInt64) -> [SessionAction] {
        guard phase == .connecting else { return [] }
        phase = .handshaking
        phaseSince = now
        lastReceived = now
        lastPing = now
        return [.send(.hello(Hello(minVersion: 1, maxVersion: 1, clientName: settings.clientName,
                                   clientID: settings.clientID, authToken: token)))]
    }

    /// The connection closed (or never opened): back off, then reconnect — unless the
    /// app closed the client or the server refused it for good.
    mutating func transportClosed(reason: String, now: UInt64) -> [SessionAction] {
        switch phase {
        case .closed, .idle, .backingOff, .paused:
            return []
        case .connecting, .handshaking, .ready:
            break
        }
        if let refusal {
            phase = .closed
            return failEverything(with: refusal) + [.status(.closed(refusal))]
        }
        failedAttempts = phase == .ready ? 0 : failedAttempts + 1
        if let max = settings.reconnect.maxAttempts, failedAttempts >= max {
            phase = .closed
            let error = FlowSyncError.connectionRefused(code: .internalError, message: "gave up after \(failedAttempts) attempts: \(reason)")
            return failEverything(with: error) + [.status(.closed(error))]
        }
        phase = .backingOff
        phaseSince = now
        // In-flight stats requests die with the connection.
        var actions: [SessionAction] = statsRequests.sorted().map { .stats(requestID: $0, .failure(.closed)) }
        statsRequests = []
        actions += failBackupRequests(.closed)
        for name in lists.keys {
            guard case .live = lists[name]!.phase else { continue }
            lists[name]!.phase = .subscribing
        }
        var delay = settings.reconnect.delay(attempt: failedAttempts, minimum: serverDelay, unit: nextUnit())
        if reconnectAtOnce && serverDelay == 0 { delay = 0 }
        reconnectAtOnce = false
        serverDelay = 0
        actions.append(.status(.disconnected(reason: reason, retryInMilliseconds: delay)))
        actions.append(.scheduleReconnect(milliseconds: delay))
        return actions
    }

    /// The token for the next Hello (fetched by the shell from the token provider,
    /// outside the lock, before each connection attempt).
    mutating func useToken(_ token: String?) {
        self.token = token
    }

    /// Replaces the token: sent at once in a RefreshToken when ready (in-band refresh,
    /// the connection stays), and used by every later Hello.
    mutating func refresh(token: String) -> [SessionAction] {
        self.token = token
        guard phase == .ready else { return [] }
        return [.send(.refreshToken(RefreshToken(token: token)))]
    }

    /// The reconnect timer fired.
    mutating func reconnectDue(now: UInt64) -> [SessionAction] {
        guard phase == .backingOff else { return [] }
        return beginConnect(now: now)
    }

    /// Periodic check (the shell calls it at least four times per heartbeat, and at
    /// least every second): handshake deadline, heartbeat pings, dead-connection detection.
    ///
    /// A ready connection gets a Ping every heartbeat, whatever else flows: the server
    /// counts only what it *receives* (a subscriber that only reads would look silent),
    /// and the Pong proves the path both ways. Nothing received for twice the heartbeat
    /// means a dead path (a phone that lost its network sees no FIN): the connection is
    /// dropped and the reconnect starts at once, resuming every list.
    mutating func tick(now: UInt64) -> [SessionAction] {
        switch phase {
        case .connecting, .handshaking:
            if now &- phaseSince >= settings.handshakeTimeoutMilliseconds {
                return [.disconnect(reason: "no Welcome within \(settings.handshakeTimeoutMilliseconds) ms")]
            }
        case .ready where heartbeat > 0:
            let silent = now &- lastReceived
            if silent >= 2 * heartbeat {
                reconnectAtOnce = true
                return [.disconnect(reason: "nothing received for \(silent) ms (heartbeat \(heartbeat) ms): dead connection")]
            }
            if now &- lastPing >= heartbeat {
                lastPing = now
                pingNonce += 1
                return [.send(.ping(Ping(nonce: pingNonce)))]
            }
        default:
            break
        }
        return []
    }

    /// A frame could not be decoded: framing cannot be trusted any more, so close and
    /// reconnect (protocol rule 5).
    mutating func decodingFailed(_ error: ProtocolError) -> [SessionAction] {
        [.disconnect(reason: "bad frame from server: \(error)")]
    }

    /// A message arrived.
    mutating func received(_ message: Message, now: UInt64) -> [SessionAction] {
        lastReceived = now
        if phase == .handshaking {
            switch message {
            case .welcome(let welcome): return welcomed(welcome)
            case .error(let error): return serverError(error)
            default: return [.disconnect(reason: "unexpected \(message.type) before Welcome")]
            }
        }
        guard phase == .ready else { return [] }
        switch message {
        case .snapshot(let snapshot): return received(snapshot)
        case .diff(let diff): return received(diff)
        case .ack(let ack): return received(ack)
        case .reject(let reject): return received(reject)
        case .error(let error): return serverError(error)
        case .ping(let ping): return [.send(.pong(Pong(nonce: ping.nonce)))]
        case .pong: return []
        case .notice(let notice):
            // Reconnect after the delay the server asked for (the close follows).
            serverDelay = max(serverDelay, UInt64(notice.delayMilliseconds))
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

    // MARK: Handshake

    private mutating func beginConnect(now: UInt64) -> [SessionAction] {
        phase = .connecting
        phaseSince = now
        return [.status(.connecting), .connect]
    }

    private mutating func welcomed(_ welcome: Welcome) -> [SessionAction] {
        phase = .ready
        tokenRefusals = 0
        serverLimits = welcome.limits
        let serverBeat = UInt64(welcome.heartbeatMilliseconds)
        heartbeat = [settings.pingIntervalMilliseconds, serverBeat].filter { $0 > 0 }.min() ?? 0
        var actions: [SessionAction] = [
            .useDictionary(CompressionDictionary(welcomeBytes: welcome.dictionary)),
            .status(.connected(server: welcome.serverName)),
        ]
        // Resubscribe every list from where its replica is, then resend what was in
        // flight; sorted so the order is repeatable.
        for name in lists.keys.sorted() {
            var list = lists[name]!
            switch list.phase {
            case .failed:
                continue
            case .resyncing:
                actions.append(.send(.subscribe(Subscribe(listName: name, resumeFrom: nil, digest: nil))))
            case .subscribing, .live:
                list.phase = .subscribing
                actions.append(.send(.subscribe(Subscribe(listName: name, resumeFrom: list.position,
                                                          digest: list.position == nil ? nil : list.confirmed.digest))))
            }
            list.inFlight = nil
            list.committedUnacked = []   // Acks of the old connection never come
            actions += resendUnanswered(list)
            lists[name] = list
        }
        return actions
    }

    // MARK: Batches

    private mutating func received(_ snapshot: Snapshot) -> [SessionAction] {
        guard var list = lists[snapshot.listName] else { return [] }
        let cause: ListChange.Cause
        switch list.phase {
        case .failed: return []
        case .resyncing(let reason): cause = .resync(reason)
        case .subscribing where list.position == nil: cause = .initial
        case .subscribing, .live: cause = .resync(.server(snapshot.reason))
        }
        guard let state = try? Director(sections: snapshot.sections, limits: ListReplica.limits),
              state.digest == snapshot.digest else {
            // The server's own snapshot does not add up: framing or the server is broken.
            return [.disconnect(reason: "snapshot of \(snapshot.listName) does not match its digest")]
        }
        list.confirmed = state
        list.position = snapshot.position
        list.phase = .live
        list.isRestored = false
        // Writes acked in an older epoch are either in this state or lost with the
        // server's history; either way they are no longer pending.
        list.pending.removeAll { write in write.ackedAt.map { $0.epoch != snapshot.position.epoch } ?? false }
        list.dropConfirmed(seqs: [])
        let old = list.rebuildView()
        var actions: [SessionAction] = []
        let changeset = ListReplica.change(from: old, to: list.view)
        if !changeset.isEmpty || cause == .initial {
            actions.append(deliver(list, cause, changeset))
        }
        actions += sendNext(&list)
        lists[snapshot.listName] = list
        return actions
    }

    private mutating func received(_ diff: Diff) -> [SessionAction] {
        guard var list = lists[diff.listName], let position = list.position else { return [] }
        switch list.phase {
        case .live, .subscribing: break
        case .resyncing, .failed: return []   // a stale batch of the old subscription
        }
        guard diff.from == position else {
            return resync(&list, .gap)
        }
        list.phase = .live
        list.isRestored = false
        if diff.from == diff.to {
            // The resume answer for a replica that is current: nothing to apply.
            let actions = sendNext(&list)
            lists[diff.listName] = list
            return actions
        }
        let viewWasConfirmed = list.viewIsConfirmed
        do {
            try diff.changeset.apply(to: &list.confirmed)
        } catch {
            return resync(&list, .gap)
        }
        guard list.confirmed.digest == diff.digest else {
            return resync(&list, .digestMismatch)
        }
        list.position = diff.to
        let clientID = settings.clientID
        let mine = Set(diff.mutations.filter { $0.clientID == clientID }.map(\.seq))
        var actions: [SessionAction] = []
        // Complete the writes the batch contains now: their Acks follow on this
        // connection, but a cut could lose them, and the write is no longer pending
        // (nothing would be resent to get a new Ack).
        for seq in list.dropConfirmed(seqs: mine) {
            list.committedUnacked.insert(seq)
            actions.append(.complete(list: list.name, seq: seq, .success(diff.to)))
        }
        if viewWasConfirmed {   // (then nothing is pending now either)
            // Nothing of ours on top: the server's changeset is the visible change.
            list.view = list.confirmed
            actions.append(deliver(list, .remote, diff.changeset))
        } else {
            actions += rebuildView(list, .remote)
        }
        actions += sendNext(&list)
        lists[diff.listName] = list
        return actions
    }

    // MARK: Write answers

    private mutating func received(_ ack: Ack) -> [SessionAction] {
        guard var list = lists[ack.listName] else {
            return [.complete(list: ack.listName, seq: ack.seq, .success(ack.committed))]
        }
        var actions: [SessionAction] = []
        if list.committedUnacked.remove(ack.seq) == nil {
            actions.append(.complete(list: ack.listName, seq: ack.seq, .success(ack.committed)))
        }
        if list.inFlight == ack.seq { list.inFlight = nil }
        if let index = list.pending.firstIndex(where: { $0.seq == ack.seq }) {
            list.pending[index].ackedAt = ack.committed
            let before = list.pending.count
            list.dropConfirmed(seqs: [])
            if list.pending.count != before {
                actions += rebuildView(list, .remote)
            }
        }
        actions += sendNext(&list)
        lists[ack.listName] = list
        return actions
    }

    private mutating func received(_ reject: Reject) -> [SessionAction] {
        let error = FlowSyncError.rejected(code: reject.code, message: reject.message)
        var actions: [SessionAction] = [.complete(list: reject.listName, seq: reject.seq, .failure(error))]
        guard var list = lists[reject.listName] else { return actions }
        if list.inFlight == reject.seq { list.inFlight = nil }
        if let index = list.pending.firstIndex(where: { $0.seq == reject.seq }) {
            list.pending.remove(at: index)
            actions += rebuildView(list, .rollback(seq: reject.seq, error: error))
        }
        actions += sendNext(&list)
        lists[reject.listName] = list
        return actions
    }

    private mutating func serverError(_ error: ErrorMessage) -> [SessionAction] {
        if let name = error.listName, !error.closesConnection {
            // Subscription errors; already-subscribed and not-subscribed are harmless
            // echoes of a resync.
            if error.code == .alreadySubscribed || error.code == .notSubscribed { return [] }
            guard var list = lists[name] else { return [] }
            let failure = FlowSyncError.listFailed(code: error.code, message: error.message)
            list.phase = .failed(failure)
            var actions: [SessionAction] = list.pending.map { .complete(list: name, seq: $0.seq, .failure(failure)) }
            list.pending = []
            list.inFlight = nil
            actions += rebuildView(list, .remote)
            actions.append(.listFailed(list: name, failure))
            lists[name] = list
            return actions
        }
        guard error.closesConnection else { return [] }
        switch error.reaction {
        case .refreshToken where settings.refreshesTokens && tokenRefusals < settings.maxTokenRefreshes:
            // Expired or refused token: the shell asks the provider for a new one before
            // the reconnect (bounded: a provider that keeps handing out bad tokens ends
            // the client after maxTokenRefreshes tries).
            tokenRefusals += 1
        case .giveUp, .refreshToken:
            refusal = .connectionRefused(code: error.code, message: error.message)
        case .backoff(let ms):
            serverDelay = max(serverDelay, UInt64(ms))
        case .retry, .resync:
            break
        }
        return [.disconnect(reason: "server error \(error.code.rawValue) \(error.code): \(error.message)")]
    }

    // MARK: Helpers

    /// Sends the oldest pending write when nothing is in flight and every earlier write
    /// is in the confirmed state — so its base is a version that contains them.
    private mutating func sendNext(_ list: inout ListReplica) -> [SessionAction] {
        guard phase == .ready, list.phase == .live, list.inFlight == nil, let position = list.position else { return [] }
        var actions: [SessionAction] = []
        while let first = list.pending.first, first.sent == nil {
            // Re-express the write in the confirmed state: the operations the server
            // will apply as written (their base is current) or rebase like we did.
            var base = list.confirmed
            let operations: [Operation]
            do {
                operations = try base.applyResolving(first.anchored)
            } catch {
                // It conflicts with what others committed: the server would refuse it.
                let failure = FlowSyncError.rejected(code: ErrorCode(for: error.reason), message: "\(error.message) (found before sending)")
                list.pending.removeFirst()
                actions.append(.complete(list: list.name, seq: first.seq, .failure(failure)))
                actions += rebuildView(list, .rollback(seq: first.seq, error: failure))
                continue
            }
            if operations.isEmpty {
                // Everything it did is already done (it deleted what others deleted).
                list.pending.removeFirst()
                actions.append(.complete(list: list.name, seq: first.seq, .success(position)))
                continue
            }
            // Anchor again in the confirmed state, as the server will if it rebases.
            var anchorState = list.confirmed
            if let reanchored = try? anchorState.anchor(operations) { list.pending[0].anchored = reanchored }
            let mutate = Mutate(listName: list.name, clientID: settings.clientID, seq: first.seq, base: position, operations: operations)
            list.pending[0].sent = mutate
            list.inFlight = first.seq
            actions.append(.send(.mutate(mutate)))
            break
        }
        return actions
    }

    /// Asks for a fresh snapshot of a list whose replica cannot be trusted.
    private mutating func resync(_ list: inout ListReplica, _ reason: ListChange.ResyncReason) -> [SessionAction] {
        list.phase = .resyncing(reason)
        lists[list.name] = list
        return [
            .send(.unsubscribe(Unsubscribe(listName: list.name))),
            .send(.subscribe(Subscribe(listName: list.name, resumeFrom: nil, digest: nil))),
        ]
    }

    /// Rebuilds the list's view on its confirmed state and reports the visible change,
    /// if there is one.
    private func rebuildView(_ list: ListReplica, _ cause: ListChange.Cause) -> [SessionAction] {
        let old = list.rebuildView()
        let changeset = ListReplica.change(from: old, to: list.view)
        return changeset.isEmpty ? [] : [deliver(list, cause, changeset)]
    }

    private func deliver(_ list: ListReplica, _ cause: ListChange.Cause, _ changeset: Changeset) -> SessionAction {
        .deliver(list: list.name, cause: cause, changeset: changeset, view: list.view, version: list.position, pending: list.pending.count)
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

    /// A uniform number in 0..<1, for jitter.
    private mutating func nextUnit() -> Double {
        random.nextUnit()
    }
}

extension ClientSession {
    /// Test hook: makes the replica of `name` drift from the server (a row the server
    /// never sent), as a bug or a bit flip would, and reports it as a change so the
    /// app's view stays consistent. The next batch's digest check must catch it.
    mutating func injectDriftForTesting(_ name: String) -> [SessionAction] {
        guard var list = lists[name] else { return [] }
        let section = Section(id: "drift-\(list.confirmed.sections.count)", rows: [Row(id: "drift-row-\(list.confirmed.rowCount)")])
        _ = try? list.confirmed.apply([.insertSections([section], at: list.confirmed.sections.count)])
        let old = list.rebuildView()
        lists[name] = list
        return [deliver(list, .remote, ListReplica.change(from: old, to: list.view))]
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
