import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport

@testable import FlowSyncClient

/// A whole deployment without sockets: one server list (the real ``Sequencer``), several
/// ``ClientSession``s, and in-order message channels between them that a seeded random
/// schedule drives — delivering, sealing batches, cutting connections, firing timers.
///
/// The server side follows the reference server's rules (docs/PROTOCOL.md): a Subscribe
/// ends the batch early; a batch's Diff is queued to every subscriber before its Acks
/// and Rejects; a resume gets a Diff or a Snapshot with the documented reason.
struct SimulatedNetwork {
    static let list = "sim"

    struct Client {
        var session: ClientSession
        var recorder: ChangeRecorder
        var connected = false
        var connecting = false
        var reconnectDue = false
        /// Client → server, in order.
        var up: [Message] = []
        /// Server → client, in order.
        var down: [Message] = []
        /// Server side: handshake done, subscribed.
        var ready = false
        var subscribed = false
        var completions: [UInt64: Result<ListVersion, FlowSyncError>] = [:]
        /// The life (``lives``) in which each write was last answered.
        var completedInLife: [UInt64: Int] = [:]
        var submitted: Set<UInt64> = []
        var generator: DirectorGenerator
        /// Server side: the connection's number; answers for an older one are dropped
        /// (they would go to a closed socket).
        var generation = 0
        /// With persistence (``SimulatedNetwork/enablePersistence(_:)``): what decides the
        /// writes, the "disk" (file → bytes, generation), and — like the shell's
        /// directory queue — the file writes and outgoing frames queued in order behind
        /// them, which a kill loses.
        var persistence: ReplicaPersistence?
        var disk: [String: (bytes: [UInt8], generation: UInt64)] = [:]
        var queued: [Queued] = []
        /// Writes whose Mutate reached the server (a kill cannot lose those).
        var reachedServer: Set<UInt64> = []
        /// Writes a kill lost before they were on disk (never sent, so never committed).
        var lostAtKills = 0
        var nextGeneration: UInt64 = 0
        var lives = 1
    }

    /// Work on a client's directory queue (``ClientCore``'s order: files, and frames
    /// behind the files captured before them).
    enum Queued {
        case file(generation: UInt64, ReplicaPersistence.Action)
        /// A frame for connection `connection`; dropped if that one is gone.
        case frame(Message, connection: Int)
    }

    var sequencer = Sequencer(position: ListVersion(epoch: 7, version: 0))
    var clients: [Client] = []
    var random: SeededRandom
    var now: UInt64 = 0
    /// Every committed mutation, to prove none committed twice.
    var committed: [MutationID: ListVersion] = [:]
    var failures: [String] = []

    init(seed: UInt64, clients count: Int) {
        random = SeededRandom(seed: seed)
        for index in 0..<count {
            let settings = ClientSession.Settings(
                clientID: "c\(index)", clientName: "sim", token: nil,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 10, maxDelayMilliseconds: 100),
                pingIntervalMilliseconds: 0, handshakeTimeoutMilliseconds: 1_000_000,
                firstSeq: 1, randomSeed: seed &+ UInt64(index))
            var client = Client(
                session: ClientSession(settings: settings), recorder: ChangeRecorder(),
                generator: DirectorGenerator(seed: seed &* 31 &+ UInt64(index), idPrefix: "c\(index)-"))
            let start = client.session.start(now: 0)
            clients.append(client)
            apply(start, client: index)
            _ = client
            let subscribe = clients[index].session.subscribe(Self.list)
            apply(subscribe, client: index)
        }
    }

    // MARK: Client side

    mutating func apply(_ actions: [SessionAction], client i: Int) {
        // Like the shell: every verdict is known to the persistence before anything of
        // the list persists mid-way (a Mutate's "sent" mark).
        for case .complete(_, let seq, let result) in actions {
            clients[i].persistence?.completed(list: Self.list, seq: seq, result)
        }
        for action in actions {
            switch action {
            case .connect:
                clients[i].connecting = true
            case .send(let message):
                guard clients[i].connected else { break }
                if clients[i].persistence != nil {
                    // The Mutate's "sent" mark is queued first; the frame behind it.
                    if case .mutate = message { persist(i) }
                    clients[i].queued.append(.frame(message, connection: clients[i].generation))
                } else {
                    clients[i].up.append(message)
                }
            case .disconnect:
                cut(i)
            case .scheduleReconnect:
                clients[i].reconnectDue = true
            case .useDictionary, .status, .stats, .backup:
                break
            case .deliver(_, let cause, let changeset, let view, let version, _):
                if let problem = clients[i].recorder.record(
                    cause: cause, changeset: changeset, view: view, version: version)
                {
                    failures.append("client \(i): \(problem)")
                }
            case .complete(_, let seq, let result):
                if let first = clients[i].completions[seq] {
                    if clients[i].completedInLife[seq] == clients[i].lives {
                        failures.append("client \(i): write \(seq) completed twice: \(first), then \(result)")
                    } else if (try? first.get()) == nil && (try? result.get()) != nil
                        || (try? first.get()) != nil && (try? result.get()) == nil
                    {
                        // A relaunch may answer again a write whose answer the killed
                        // app had (its file update died in the queue), never otherwise.
                        failures.append("client \(i): write \(seq) answered \(first), then after a relaunch \(result)")
                    }
                }
                clients[i].completions[seq] = result
                clients[i].completedInLife[seq] = clients[i].lives
            case .listFailed(_, let error):
                failures.append("client \(i): list failed: \(error)")
            }
        }
        persist(i)
    }

    // MARK: Persistence, kills and relaunches

    /// Gives every client a persistence layer writing to its simulated disk.
    mutating func enablePersistence(_ options: PersistenceOptions) {
        for i in clients.indices {
            clients[i].persistence = ReplicaPersistence(options: options)
            persist(i)
        }
    }

    /// Like the shell: every file write goes to the directory's queue, in order.
    mutating func persist(_ i: Int, flush: Bool = false) {
        guard clients[i].persistence != nil else { return }
        for action in clients[i].persistence!.observe(clients[i].session, now: now, flush: flush) {
            clients[i].nextGeneration += 1
            clients[i].queued.append(.file(generation: clients[i].nextGeneration, action))
        }
    }

    private mutating func store(_ file: String, _ bytes: [UInt8], _ generation: UInt64, client i: Int) {
        guard generation > clients[i].disk[file]?.generation ?? 0 else { return }
        clients[i].disk[file] = (bytes, generation)
    }

    /// The directory's queue does its oldest work: a file write (a replica's pending
    /// file first), or a frame sent if its connection is still there.
    mutating func writeQueued(_ i: Int) {
        guard !clients[i].queued.isEmpty else { return }
        let generation: UInt64
        let action: ReplicaPersistence.Action
        switch clients[i].queued.removeFirst() {
        case .frame(let message, let connection):
            guard clients[i].connected && clients[i].generation == connection else { return }
            if case .mutate(let mutate) = message { clients[i].reachedServer.insert(mutate.seq) }
            clients[i].up.append(message)
            return
        case .file(let g, let a):
            generation = g
            action = a
        }
        let replica: PersistedReplica
        let pending: PersistedPending
        switch action {
        case .writePending(let p):
            store("pending", ReplicaFileFormat.encode(p), generation, client: i)
            return
        case .writeReplica(let r, let p):
            replica = r
            pending = p
        }
        store("pending", ReplicaFileFormat.encode(pending), generation, client: i)
        guard generation > clients[i].disk["replica"]?.generation ?? 0 else { return }
        store("replica", ReplicaFileFormat.encode(replica), generation, client: i)
        clients[i].persistence!.replicaWritten(list: Self.list, at: replica.position)
    }

    /// The app of client `i` is killed: its connection drops, its queued file writes are
    /// lost. A new session starts on the same disk, with the same client ID, and
    /// `firstSeq` 1 again (so only the stored `nextSeq` keeps seqs unique).
    mutating func kill(_ i: Int) {
        let settings = clients[i].session.settings
        clients[i].queued = []
        clients[i].reconnectDue = false
        dropConnection(i)
        clients[i].lives += 1
        clients[i].recorder = ChangeRecorder()
        let (restored, discarded) = ReplicaFileFormat.restore(
            list: Self.list, replica: clients[i].disk["replica"]?.bytes,
            pending: clients[i].disk["pending"]?.bytes)
        if !discarded.isEmpty { failures.append("client \(i): intact files discarded: \(discarded)") }
        // What the relaunch shows must hold every write the app made that was not
        // refused: in the stored replica (committed at or before its position) or in
        // the stored pending writes. A write missing from both would be missing from the
        // view, and the app's next edits would be anchored without it.
        // A write may be missing only if the kill lost it before it was on disk: then it
        // never reached the server, and every write the files hold is older.
        let stored = Set(restored?.pending.map(\.seq) ?? [])
        var missing: [UInt64] = []
        var held: [UInt64] = []
        for seq in clients[i].submitted.sorted() {
            let at = committed[MutationID(clientID: settings.clientID, seq: seq)]
            // Refused, or found to be a no-op before sending (answered, never committed).
            if !stored.contains(seq) && clients[i].completions[seq] != nil && at == nil { continue }
            if stored.contains(seq) {
                held.append(seq)
                continue
            }
            if let at, let position = restored?.position, at.epoch == position.epoch, at <= position {
                held.append(seq)
                continue
            }
            missing.append(seq)
        }
        for seq in missing {
            if clients[i].reachedServer.contains(seq) {
                failures.append(
                    "client \(i): write \(seq) reached the server but is neither in the stored replica (at \(String(describing: restored?.position))) nor in the stored pending writes \(stored.sorted())"
                )
            } else if let newestHeld = held.max(), seq < newestHeld {
                failures.append("client \(i): write \(seq) was lost though the newer write \(newestHeld) is on disk")
            } else {
                // Lost as a kill may lose it. Its seq may be used again (the stored
                // nextSeq is older): harmless, as the server never saw it.
                clients[i].submitted.remove(seq)
                clients[i].completions[seq] = nil
                clients[i].lostAtKills += 1
            }
        }
        var persistence = ReplicaPersistence(options: clients[i].persistence!.options)
        if let restored {
            persistence.restored(list: Self.list, position: restored.position, pending: restored.pending)
        }
        clients[i].persistence = persistence
        clients[i].session = ClientSession(settings: settings)
        now += 1
        apply(clients[i].session.start(now: now), client: i)
        apply(clients[i].session.subscribe(Self.list, restoring: restored), client: i)
    }

    /// Forgets client `i`'s connection on both sides: what was in flight either way is
    /// lost, and the server's answers for it are dropped.
    private mutating func dropConnection(_ i: Int) {
        clients[i].connected = false
        clients[i].connecting = false
        clients[i].up = []
        clients[i].down = []
        clients[i].ready = false
        clients[i].subscribed = false
        clients[i].generation += 1
    }

    /// The connection of client `i` breaks: whatever was in flight either way is lost.
    mutating func cut(_ i: Int) {
        guard clients[i].connected || clients[i].connecting else { return }
        dropConnection(i)
        now += 1
        let actions = clients[i].session.transportClosed(reason: "cut", now: now)
        apply(actions, client: i)
    }

    /// One local edit by client `i`, valid against its view.
    mutating func edit(_ i: Int) {
        let view = clients[i].session.lists[Self.list]!.view
        let ops = clients[i].generator.group(for: view, maxOps: 4)
        do {
            let (seq, actions) = try clients[i].session.submit(ops, to: Self.list)
            clients[i].submitted.insert(seq)
            apply(actions, client: i)
        } catch {
            // The generator's groups are valid only most of the time; a refused one
            // must really not apply, and must change nothing.
            var copy = view
            if (try? copy.apply(ops)) != nil {
                failures.append("client \(i): a valid edit was refused locally: \(error)")
            }
            if clients[i].session.lists[Self.list]!.view != view {
                failures.append("client \(i): a refused edit changed the view")
            }
        }
    }

    // MARK: Server side

    mutating func serverReceive(_ i: Int) {
        guard !clients[i].up.isEmpty else { return }
        let message = clients[i].up.removeFirst()
        switch message {
        case .hello:
            clients[i].ready = true
            send(
                .welcome(
                    Welcome(
                        version: 1, serverName: "sim", limits: ServerLimits(), heartbeatMilliseconds: 0, dictionary: [])
                ), to: i)
        case .subscribe(let subscribe):
            seal()  // a Subscribe ends the batch early
            clients[i].subscribed = true
            send(answer(to: subscribe), to: i)
        case .unsubscribe:
            clients[i].subscribed = false
        case .mutate(let mutate):
            sequencer.submit(
                MutationRequest(
                    clientID: mutate.clientID, seq: mutate.seq, base: mutate.base, operations: mutate.operations),
                tag: i * 1_000_000 + clients[i].generation)
        default:
            failures.append("server: unexpected \(message.type) from client \(i)")
        }
    }

    func answer(to subscribe: Subscribe) -> Message {
        let position = sequencer.position
        func snapshot(_ reason: Snapshot.Reason) -> Message {
            .snapshot(
                Snapshot(
                    listName: Self.list, position: position, digest: sequencer.director.digest, reason: reason,
                    sections: sequencer.director.sections))
        }
        guard let from = subscribe.resumeFrom else { return snapshot(.freshSubscribe) }
        if from.epoch != position.epoch { return snapshot(.epochChanged) }
        if let digest = subscribe.digest, let past = sequencer.state(at: from), past.digest != digest {
            return snapshot(.resyncRequested)
        }
        switch sequencer.catchUp(from: from) {
        case .upToDate:
            return .diff(
                Diff(
                    listName: Self.list, epoch: position.epoch, fromVersion: from.version, toVersion: from.version,
                    digest: sequencer.director.digest, changeset: Changeset()))
        case .changeset(let changeset):
            return .diff(
                Diff(
                    listName: Self.list, epoch: position.epoch, fromVersion: from.version, toVersion: position.version,
                    digest: sequencer.director.digest, changeset: changeset))
        case .snapshot:
            return snapshot(.resumeTooOld)
        }
    }

    /// The end of a server loop turn: one batch, its Diff to every subscriber, then the
    /// answers in arrival order.
    mutating func seal() {
        guard sequencer.hasPending else { return }
        let batch = sequencer.seal()
        if let commit = batch.commit {
            for id in commit.mutations {
                if committed[id] != nil { failures.append("server: \(id) committed twice") }
                committed[id] = commit.to
            }
            let diff = Diff(
                listName: Self.list, epoch: commit.to.epoch, fromVersion: commit.from.version,
                toVersion: commit.to.version,
                digest: commit.digest, changeset: commit.changeset, mutations: commit.mutations)
            for i in clients.indices where clients[i].subscribed { send(.diff(diff), to: i) }
        }
        for outcome in batch.outcomes {
            let i = outcome.tag / 1_000_000
            guard outcome.tag % 1_000_000 == clients[i].generation else { continue }
            switch outcome.result {
            case .success(let version):
                send(.ack(Ack(listName: Self.list, seq: outcome.id.seq, committed: version)), to: i)
            case .failure(let rejection):
                let code: ErrorCode
                if case .invalid(let error) = rejection {
                    code = ErrorCode(for: error.reason)
                } else {
                    code = .staleBaseVersion
                }
                send(
                    .reject(Reject(listName: Self.list, seq: outcome.id.seq, code: code, message: "\(rejection)")),
                    to: i)
            }
        }
    }

    mutating func send(_ message: Message, to i: Int) {
        if clients[i].connected { clients[i].down.append(message) }
    }

    mutating func clientReceive(_ i: Int) {
        guard !clients[i].down.isEmpty else { return }
        let message = clients[i].down.removeFirst()
        now += 1
        apply(clients[i].session.received(message, now: now), client: i)
    }

    // MARK: Schedule

    /// One random step.
    mutating func step(editChance: Double, cutChance: Double, killChance: Double = 0) {
        let i = random.int(0..<clients.count)
        let roll = random.int(0..<100)
        now += 1
        if killChance > 0 && random.chance(killChance) {
            kill(i)
        } else if !clients[i].queued.isEmpty && random.chance(0.2) {
            writeQueued(i)
        } else if clients[i].connecting && roll < 30 {
            clients[i].connecting = false
            clients[i].connected = true
            apply(clients[i].session.connected(now: now), client: i)
        } else if clients[i].reconnectDue && roll < 40 {
            clients[i].reconnectDue = false
            apply(clients[i].session.reconnectDue(now: now), client: i)
        } else if random.chance(editChance) {
            edit(i)
        } else if random.chance(cutChance) {
            cut(i)
        } else if roll < 45 {
            serverReceive(i)
        } else if roll < 55 {
            seal()
        } else {
            clientReceive(i)
        }
    }

    /// Runs until every message is delivered, every client is connected and nothing is
    /// pending, with no more edits or cuts. Bounded.
    mutating func settle() -> Bool {
        for _ in 0..<100_000 {
            var busy = false
            for i in clients.indices {
                now += 1
                if clients[i].reconnectDue {
                    clients[i].reconnectDue = false
                    apply(clients[i].session.reconnectDue(now: now), client: i)
                    busy = true
                }
                if clients[i].connecting {
                    clients[i].connecting = false
                    clients[i].connected = true
                    apply(clients[i].session.connected(now: now), client: i)
                    busy = true
                }
                while !clients[i].queued.isEmpty {
                    writeQueued(i)
                    busy = true
                }
                while !clients[i].up.isEmpty {
                    serverReceive(i)
                    busy = true
                }
            }
            if sequencer.hasPending {
                seal()
                busy = true
            }
            for i in clients.indices {
                while !clients[i].down.isEmpty {
                    clientReceive(i)
                    busy = true
                }
            }
            let quiet = clients.allSatisfy { client in
                let list = client.session.lists[Self.list]!
                return list.pending.isEmpty && list.phase == .live && client.connected
            }
            if !busy && quiet { return true }
        }
        return false
    }
}
