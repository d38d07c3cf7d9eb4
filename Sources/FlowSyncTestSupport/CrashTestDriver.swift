import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTLS
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The crash test of docs/STORAGE.md: a real `flowsyncd` under load from writers and
/// subscribers is killed with SIGKILL at random moments and restarted, and after every
/// restart the driver checks:
/// 1. every acknowledged mutation is present (each inserts a row with a unique ID);
/// 2. versions are contiguous: each subscriber resumes from its last seen
///    `(epoch, version)` with its digest and gets a diff from exactly there (not a
///    snapshot: the epoch did not change and its history survived), and applies it;
/// 3. every subscriber's last seen version exists with the same digest (the server
///    would answer a drifted digest with a snapshot);
/// 4. retrying a writer's last mutation (same `clientID`, `seq`) after the restart
///    gets its original ack if it had been committed: the idempotency table survived.
///
/// Used by `Tests/FlowSyncStoreTests/CrashTests.swift` (20+ cycles) and by
/// `flowsync-server-bench --crash-test --cycles N` (`scripts/crash-test.sh`).
public final class CrashTestDriver: @unchecked Sendable {
    public struct Options: Sendable {
        public var binary: String
        public var dataDirectory: String
        public var cycles = 20
        public var writers = 3
        public var subscribers = 3
        public var lists = ["crash-a", "crash-b"]
        /// The lists the resuming subscribers follow (`nil`: all of ``lists``). Lists
        /// nobody follows can go idle — with `lists.on_demand`, be unloaded mid-cycle.
        public var subscribedLists: [String]?
        /// Writer `w` writes list `lists[(w + cycle) % lists.count]`, so with more lists
        /// than writers a different list rests each cycle (default: always `w % count`).
        public var rotateWriterLists = false
        /// Counted in each daemon's output at the end of its cycle (``Result/outputMatches``),
        /// e.g. a log line that shows the run did what the variant is about.
        public var countInOutput: String?
        /// More flowsyncd arguments (after the standard ones: a later `--log-level` wins).
        public var daemonArguments: [String] = []
        /// Each cycle runs the load for a random time in this range before SIGKILL.
        public var loadMilliseconds: ClosedRange<Int> = 40...250
        public var seed: UInt64 = 1
        /// Extra TOML for the daemon (small snapshots and history exercise compaction).
        public var extraConfiguration = "[storage]\nsnapshot_every_batches = 64\n[history]\nmax_batches = 48\n"
        public var log: @Sendable (String) -> Void = { _ in }
        /// The clients' TLS context (issue #32): the daemon's `[tls]` goes in
        /// ``extraConfiguration``; `nil`: plaintext.
        public var tls: TLSContext?
        public init(binary: String, dataDirectory: String) {
            self.binary = binary
            self.dataDirectory = dataDirectory
        }
    }

    /// What a run found.
    public struct Result: Sendable, CustomStringConvertible {
        public var cycles = 0
        public var ackedMutations = 0
        public var retriedAfterRestart = 0
        public var retriesAnsweredWithOriginalAck = 0
        public var resumesAsDiff = 0
        /// Resumes answered with a snapshot because it was the smaller frame
        /// (docs/PROTOCOL.md, `resumeTooOld`): allowed only where the daemon's rule
        /// allows it, so a lost history still shows up as a problem.
        public var resumesAsSmallerSnapshot = 0
        /// Resumes of a list the subscriber saw only as created, empty at version 0:
        /// nothing was ever committed to it, so the store holds nothing and the
        /// restarted daemon creates it afresh under a new epoch — a snapshot, rightly.
        public var resumesOfNeverWrittenList = 0
        public var problems: [String] = []
        /// Occurrences of ``Options/countInOutput`` in the daemons' output.
        public var outputMatches = 0
        public var elapsedSeconds = 0.0
        public var finalVersions: [String: ListVersion] = [:]
        public var description: String {
            "\(cycles) cycles, \(ackedMutations) acknowledged mutations checked, \(resumesAsDiff) resumes served as diffs, "
                + "\(resumesAsSmallerSnapshot) as smaller snapshots, \(resumesOfNeverWrittenList) of never-written lists, "
                + "\(retriesAnsweredWithOriginalAck)/\(retriedAfterRestart) in-flight retries after a restart answered from the idempotency table, "
                + "\(problems.count) problems, \(String(format: "%.1f", elapsedSeconds)) s"
        }
    }

    let options: Options
    var random: SeededRandom
    /// Row IDs acknowledged, per list.
    var acked: [String: Set<String>] = [:]
    /// Per writer: the next sequence number, and the mutation in flight when the daemon died.
    var nextSeq: [Int: UInt64] = [:]
    var inFlight: [Int: Mutate] = [:]
    /// "writer/list" pairs whose section the writer created (acknowledged).
    var sectionsCreated: Set<String> = []
    /// Per subscriber and list: the replica it holds.
    var replicas: [Int: [String: Replica]] = [:]
    var result = Result()

    public init(_ options: Options) {
        self.options = options
        random = SeededRandom(seed: options.seed)
    }

    // MARK: Running

    public func run() async throws -> Result {
        let started = ContinuousClock.now
        let config = options.dataDirectory + ".toml"
        try options.extraConfiguration.write(toFile: config, atomically: true, encoding: .utf8)
        defer { unlink(config) }
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        for cycle in 0..<options.cycles {
            let daemon = try await DaemonProcess.start(
                binary: options.binary, dataDirectory: options.dataDirectory, config: config,
                extraArguments: options.daemonArguments)
            do {
                try await runCycle(cycle, daemon: daemon, thread: thread)
            } catch {
                await daemon.kill9()
                result.problems.append("cycle \(cycle): \(error)")
                options.log("cycle \(cycle): \(error)\n\(daemon.output.suffix(2_000))")
                break
            }
            result.cycles += 1
            if let needle = options.countInOutput {
                result.outputMatches += daemon.output.components(separatedBy: needle).count - 1
            }
            if (cycle + 1) % 10 == 0 || cycle + 1 == options.cycles {
                options.log(
                    "cycle \(cycle + 1)/\(options.cycles): \(acked.values.map(\.count).reduce(0, +)) acked rows, problems \(result.problems.count)"
                )
            }
            if result.problems.count > 5 { break }
        }
        result.ackedMutations = acked.values.map(\.count).reduce(0, +)
        result.elapsedSeconds =
            Double((ContinuousClock.now - started).components.seconds)
            + Double((ContinuousClock.now - started).components.attoseconds) / 1e18
        return result
    }

    /// True when a snapshot answering a resume from `replica` is one the daemon may send
    /// although its history reaches back: same epoch, newer, and a catch-up so large
    /// (changes × 2 > rows + sections, `ListHost.catchUpFrame`) that the snapshot can be the
    /// smaller frame. Anything else answering a resume with a snapshot is lost history.
    static func isSmallerThanTheDiff(_ snapshot: Snapshot, resumingFrom replica: Replica?) -> Bool {
        guard let replica, let position = replica.position, snapshot.reason == .resumeTooOld,
            snapshot.position.epoch == position.epoch, snapshot.position.version > position.version,
            let now = try? Director(sections: snapshot.sections, limits: replica.director.limits)
        else { return false }
        let changes = Changeset.diff(from: replica.director, to: now).changeCount
        return changes * 2 > now.rowCount + now.sections.count
    }

    /// Whether the subscriber saw the list only as created: version 0, empty. Nothing
    /// committed means nothing stored, so a restart may give the list a new epoch.
    static func neverWritten(_ replica: Replica) -> Bool {
        replica.position?.version == 0 && replica.director.sections.isEmpty
    }

    private func problem(_ text: String) {
        result.problems.append(text)
        options.log("PROBLEM: \(text)")
    }

    private func runCycle(_ cycle: Int, daemon: DaemonProcess, thread: EventLoopThread) async throws {
        // 1. Check: a fresh snapshot of every list holds every acknowledged row.
        let checker = try await TestClient.connect(port: daemon.port, on: thread, clientID: "checker", tls: options.tls)
        for list in options.lists {
            checker.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot(let snapshot)? = await checker.waitFor(
                    timeout: 10, { if case .snapshot(let s) = $0 { return s.listName == list } else { return false } })
            else {
                throw CrashTestError("no snapshot of \(list) after restart")
            }
            let present = Set(snapshot.sections.flatMap { $0.rows.map(\.id) })
            let missing = (acked[list] ?? []).subtracting(present)
            if !missing.isEmpty {
                problem(
                    "cycle \(cycle): \(missing.count) acknowledged rows of \(list) missing, e.g. \(missing.sorted().prefix(3))"
                )
            }
            result.finalVersions[list] = snapshot.position
            for (_, byList) in replicas {
                if let replica = byList[list], let position = replica.position, !Self.neverWritten(replica),
                    position.epoch != snapshot.position.epoch || position.version > snapshot.position.version
                {
                    problem(
                        "cycle \(cycle): a subscriber saw \(position) of \(list), the restarted daemon is at \(snapshot.position)"
                    )
                }
            }
        }
        checker.close()

        // 2. Subscribers resume from what they saw.
        var subscribers: [TestClient] = []
        for k in 0..<options.subscribers {
            let client = try await TestClient.connect(
                port: daemon.port, on: thread, clientID: "subscriber-\(k)", tls: options.tls)
            subscribers.append(client)
            for list in options.subscribedLists ?? options.lists {
                let replica = replicas[k]?[list]
                if let replica, let position = replica.position {
                    client.send(
                        .subscribe(Subscribe(listName: list, resumeFrom: position, digest: replica.director.digest)))
                } else {
                    client.send(.subscribe(Subscribe(listName: list)))
                }
            }
            for list in options.subscribedLists ?? options.lists {
                let first = await client.waitFor(timeout: 10) { message in
                    switch message {
                    case .snapshot(let s): return s.listName == list
                    case .diff(let d): return d.listName == list
                    default: return false
                    }
                }
                if let position = replicas[k]?[list]?.position {
                    switch first {
                    case .diff(let d)? where d.from == position: result.resumesAsDiff += 1
                    case .snapshot(let s)? where Self.isSmallerThanTheDiff(s, resumingFrom: replicas[k]?[list]):
                        result.resumesAsSmallerSnapshot += 1
                    case .snapshot(let s)?
                    where replicas[k]?[list].map(Self.neverWritten) == true && s.position.epoch != position.epoch:
                        result.resumesOfNeverWrittenList += 1
                    case .snapshot(let s)?:
                        problem(
                            "cycle \(cycle): subscriber \(k) resuming \(list) from \(position) got a snapshot (\(s.reason)) at \(s.position)"
                        )
                    default:
                        problem(
                            "cycle \(cycle): subscriber \(k) resuming \(list) from \(position) got \(first.map { "\($0)" } ?? "nothing")"
                        )
                    }
                }
            }
        }

        // 3. Writers: first the mutation that was in flight at the kill (a retry), then
        // new ones, one in flight each, until the kill.
        let stop = Shared(false)
        let killAfter = random.int(options.loadMilliseconds)
        let tls = options.tls
        let writerClients = try await withThrowingTaskGroup(of: TestClient.self) { group in
            for w in 0..<options.writers {
                group.addTask {
                    try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer-\(w)", tls: tls)
                }
            }
            var clients: [TestClient] = []
            for try await c in group { clients.append(c) }
            return clients.sorted { $0.clientID < $1.clientID }
        }
        let ackedThisCycle = Shared<[(list: String, row: String)]>([])
        let retryOutcome = Shared<(retried: Int, original: Int)>((0, 0))
        var plans: [(client: TestClient, retry: Mutate?, first: UInt64, list: String, needsSection: Bool)] = []
        for (w, client) in writerClients.enumerated() {
            let list = options.lists[(w + (options.rotateWriterLists ? cycle : 0)) % options.lists.count]
            plans.append((client, inFlight[w], nextSeq[w] ?? 1, list, !sectionsCreated.contains("\(w)/\(list)")))
        }
        let sectionsAcked = Shared<[String]>([])
        let versionsAtStart = result.finalVersions
        let inFlightAtKill = Shared<[Int: Mutate]>([:])
        let nextSeqAfter = Shared<[Int: UInt64]>([:])
        await withTaskGroup(of: Void.self) { group in
            for (w, plan) in plans.enumerated() {
                group.addTask {
                    var seq = plan.first
                    var pending: Mutate? = plan.retry
                    var isRetry = plan.retry != nil
                    if pending == nil && plan.needsSection {
                        // The writer's section in this list, created at head (once per
                        // writer and list; rows go into whichever section is first).
                        pending = Mutate(
                            listName: plan.list, clientID: plan.client.clientID, seq: seq,
                            base: ListVersion(epoch: 0, version: 0),
                            operations: [.insertSections([Section(id: "s-\(w)")], at: 0)])
                    }
                    while !stop.get() {
                        let mutate =
                            pending
                            ?? Mutate(
                                listName: plan.list, clientID: plan.client.clientID, seq: seq,
                                base: ListVersion(epoch: 0, version: 0),
                                operations: [
                                    .insertRows(
                                        [
                                            Row(
                                                id: "w\(w)-\(seq)", kind: "t",
                                                payload: Array("mutation \(seq) of writer \(w)".utf8))
                                        ],
                                        in: .index(0), at: 0)
                                ])
                        pending = mutate
                        inFlightAtKill.update { $0[w] = mutate }
                        plan.client.send(.mutate(mutate))
                        let reply = await plan.client.waitFor(timeout: 1) { m in
                            switch m {
                            case .ack(let a): return a.seq == mutate.seq
                            case .reject(let r): return r.seq == mutate.seq
                            default: return false
                            }
                        }
                        _ = plan.client.drain()
                        guard let reply else { break }  // the daemon died (or stalled): stop here
                        if isRetry { retryOutcome.update { $0.retried += 1 } }
                        if case .ack(let ack) = reply {
                            if case .insertSections = mutate.operations[0] {
                                sectionsAcked.update { $0.append("\(w)/\(mutate.listName)") }
                            }
                            if case .insertRows(let rows, _, _) = mutate.operations[0] {
                                ackedThisCycle.update { $0.append((mutate.listName, rows[0].id)) }
                            }
                            // Committed before the kill: answered from the idempotency table
                            // with its original version, which the restarted daemon already had.
                            // (A retry may be of another list than this cycle's, when lists rotate.)
                            if isRetry && ack.committed.version <= (versionsAtStart[mutate.listName]?.version ?? 0) {
                                retryOutcome.update { $0.original += 1 }
                            }
                        }
                        isRetry = false
                        pending = nil
                        seq = mutate.seq + 1
                        inFlightAtKill.update { $0[w] = nil }
                        nextSeqAfter.update { $0[w] = seq }
                    }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(killAfter))
                await daemon.kill9()
                stop.set(true)
            }
        }
        for (list, row) in ackedThisCycle.get() { acked[list, default: []].insert(row) }
        sectionsCreated.formUnion(sectionsAcked.get())
        for w in 0..<options.writers {
            // Retried first in the next cycle; new mutations continue after the last ack.
            inFlight[w] = inFlightAtKill.get()[w]
            if let next = nextSeqAfter.get()[w] { nextSeq[w] = next }
        }
        result.retriedAfterRestart += retryOutcome.get().retried
        result.retriesAnsweredWithOriginalAck += retryOutcome.get().original
        for client in writerClients { client.close() }

        // 4. What each subscriber saw, applied to its replica (digests checked).
        for (k, client) in subscribers.enumerated() {
            let messages = client.drain()
            for list in options.subscribedLists ?? options.lists {
                var replica = replicas[k]?[list] ?? Replica()
                replica.problems = []
                replica.apply(messages, list: list)
                for p in replica.problems { problem("cycle \(cycle): subscriber \(k), \(list): \(p)") }
                replicas[k, default: [:]][list] = replica
            }
            client.close()
        }
    }
}

/// Why a crash-test cycle could not run.
public struct CrashTestError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
