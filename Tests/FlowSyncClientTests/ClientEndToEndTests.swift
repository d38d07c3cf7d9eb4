import Dispatch
import FlowSyncCore
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// The SDK against a real daemon on loopback (and, where the network must misbehave, a
/// proxy between them). Every test also checks the UI contract: each delivered change is
/// a valid UIKit batch from the previous one, and together they give the replica.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ClientEndToEndTests {
    @Test func typedRoundTripWithMixedKinds() async throws {
        let server = try await EmbeddedServer()
        let writer = try ClientTests.client(port: server.port, id: "writer")
        let reader = try ClientTests.client(port: server.port, id: "reader")
        defer {
            writer.close()
            reader.close()
        }
        reader.register(Contact.self)
        reader.register(Group.self)

        let contacts = writer.director("contacts")
        try await contacts.waitUntilLoaded()
        let ada = Contact(id: "ada", name: "Ada Lovelace", favourite: true)
        let alan = Contact(id: "alan", name: "Alan Turing")
        let team = Group(id: 7, title: "Pioneers", members: ["ada", "alan"])
        let version = try await contacts.add(
            section: NewSection(id: "friends", header: Header(title: "Friends"), models: [ada, team, alan])
        ).committed()
        #expect(version.version >= 1)

        let mirror = reader.director("contacts")
        let recorder = LiveRecorder(mirror)
        try await mirror.waitUntilLoaded()
        #expect(await ClientTests.settled(mirror, server: server))
        let section = try #require(mirror.section(id: "friends"))
        #expect(try section.models(as: Contact.self) == [ada, alan])
        #expect(try section.header(as: Header.self) == Header(title: "Friends"))
        let mixed = try #require(mirror.snapshot.firstSection).models
        #expect(mixed.count == 3)
        #expect(mixed[0] as? Contact == ada && mixed[1] as? Group == team && mixed[2] as? Contact == alan)
        #expect(try mirror.snapshot.model(id: "7", as: Group.self) == team)

        // An edit through the typed API reaches the reader as a row update.
        try await contacts.section(at: 0)!.update(model: Contact(id: "alan", name: "Alan M. Turing")).committed()
        #expect(await ClientTests.settled(mirror, server: server))
        #expect(try mirror.section(at: 0)!.models(as: Contact.self).last?.name == "Alan M. Turing")
        #expect(recorder.failures.isEmpty, "\(recorder.failures)")
        #expect(recorder.table == mirror.snapshot.director)
        #expect(await server.stop())
    }

    @Test func twoClientsEditingConcurrentlyConverge() async throws {
        let server = try await EmbeddedServer()
        let a = try ClientTests.client(port: server.port, id: "a", seed: 1)
        let b = try ClientTests.client(port: server.port, id: "b", seed: 2)
        defer {
            a.close()
            b.close()
        }
        let la = a.director("shared"), lb = b.director("shared")
        let ra = LiveRecorder(la), rb = LiveRecorder(lb)
        try await la.waitUntilLoaded()
        try await lb.waitUntilLoaded()
        try await la.add(section: NewSection(id: "s0")).committed()

        var ga = DirectorGenerator(seed: 11, idPrefix: "a-"), gb = DirectorGenerator(seed: 12, idPrefix: "b-")
        var tickets: [WriteTicket] = []
        for round in 0..<150 {
            for (list, generator) in [(la, 0), (lb, 1)] {
                let ops =
                    generator == 0
                    ? ga.group(for: list.snapshot.director, maxOps: 3)
                    : gb.group(for: list.snapshot.director, maxOps: 3)
                if let ticket = try? list.submit(ops) { tickets.append(ticket) }
            }
            if round % 10 == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
        }
        var committed = 0, rejected = 0
        for ticket in tickets {
            do {
                _ = try await ticket.committed()
                committed += 1
            } catch { rejected += 1 }
        }
        #expect(await ClientTests.settled(la, server: server))
        #expect(await ClientTests.settled(lb, server: server))
        #expect(la.snapshot.director == lb.snapshot.director)
        #expect(committed > 100, "\(committed) committed, \(rejected) rejected")
        // The server acks at most what the clients saw succeed: a write whose every
        // operation others already did (deleting a deleted row) completes without a trip.
        let serverCommitted = await ClientTests.committedMutations(server)
        #expect(
            serverCommitted <= committed + 1 && serverCommitted > 100,
            "server acked \(serverCommitted), clients saw \(committed) + 1 commits")
        for recorder in [ra, rb] {
            #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        }
        #expect(ra.table == la.snapshot.director && rb.table == lb.snapshot.director)
        #expect(await server.stop())
    }

    @Test func optimisticEditRejectedByTheServerRollsBack() async throws {
        // The server holds at most 2 rows per list; the client does not know: the third
        // row shows, then the server refuses it (limit-exceeded) and it rolls back.
        var configuration = ServerConfiguration()
        configuration.director.maxRows = 2
        let server = try await EmbeddedServer(configuration: configuration)
        let client = try ClientTests.client(port: server.port)
        defer { client.close() }
        let list = client.director("inbox")
        let recorder = LiveRecorder(list)
        try await list.waitUntilLoaded()
        try await list.add(
            section: NewSection(id: "mail", models: [Contact(id: "1", name: "one"), Contact(id: "2", name: "two")])
        ).committed()
        let before = list.snapshot.director
        let ticket = try list.section(at: 0)!.add(model: Contact(id: "3", name: "three"))
        #expect(list.snapshot.numberOfModels == 3, "shown at once")
        await #expect(throws: FlowSyncError.self) { _ = try await ticket.committed() }
        if case .failure(let error) = ticket.result { #expect(error.code == .limitExceeded, "\(error)") }
        #expect(await ClientTests.settled(list, server: server))
        #expect(list.snapshot.director == before)
        let causes = recorder.causes
        #expect(
            causes.contains { if case .rollback(let seq, _) = $0 { seq == ticket.seq } else { false } }, "\(causes)")
        #expect(recorder.failures.isEmpty, "\(recorder.failures)")
        #expect(await server.stop())
    }

    @Test func writeOverTheServersLimitsIsRefusedLocally() async throws {
        var configuration = ServerConfiguration()
        configuration.director.maxPayloadBytes = 64
        let server = try await EmbeddedServer(configuration: configuration)
        let client = try ClientTests.client(port: server.port)
        defer { client.close() }
        let list = client.director("limits")
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "s")).committed()
        #expect {
            try list.section(at: 0)!.add(model: Contact(id: "big", name: String(repeating: "x", count: 500)))
        } throws: { error in
            (error as? FlowSyncError)?.code == .limitExceeded
        }
        #expect(list.snapshot.numberOfModels == 0, "nothing shown")
        // The connection survived: the next write goes through.
        _ = try await list.section(at: 0)!.add(model: Contact(id: "small", name: "ok")).committed()
        #expect(client.status == .connected(server: "flowsyncd"))
        #expect(await server.stop())
    }

    @Test func writeOverTheServersFrameLimitIsRolledBackNotSent() async throws {
        var configuration = ServerConfiguration()
        configuration.maxFrameBytes = 32 << 10
        configuration.preAuthMaxFrameBytes = 16 << 10
        let server = try await EmbeddedServer(configuration: configuration)
        let client = try ClientTests.client(port: server.port)
        defer { client.close() }
        let list = client.director("frames")
        let recorder = LiveRecorder(list)
        try await list.waitUntilLoaded()
        // 2,000 rows of random-ish text: far over 32 KiB even compressed.
        var random = SeededRandom(seed: 5)
        let models: [any FlowModel] = (0..<2_000).map { i in
            Contact(
                id: "c\(i)",
                name: String((0..<24).map { _ in Character(UnicodeScalar(UInt8(97 + random.int(0..<26)))) }))
        }
        let ticket = try list.add(section: NewSection(id: "big", models: models))
        await #expect(throws: FlowSyncError.self) { _ = try await ticket.committed() }
        if case .failure(let error) = ticket.result {
            #expect(error.code == .frameTooLarge, "\(error)")
        } else {
            Issue.record("not refused")
        }
        #expect(list.snapshot.numberOfSections == 0, "rolled back")
        _ = try await list.add(section: NewSection(id: "small")).committed()
        #expect(client.status == .connected(server: "flowsyncd"), "the connection was never at risk")
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(1))")
        #expect(await server.stop())
    }

    @Test func cutConnectionsResumeWithoutGapsAndWritesApplyOnce() async throws {
        let server = try await EmbeddedServer()
        let proxy = try await ChaosProxy(upstreamPort: server.port)
        let producer = try ClientTests.client(port: server.port, id: "producer")
        let flaky = try ClientTests.client(port: proxy.port, id: "flaky")
        defer {
            producer.close()
            flaky.close()
            proxy.stop()
        }
        let source = producer.director("feed"), mirror = flaky.director("feed")
        let recorder = LiveRecorder(mirror)
        try await source.waitUntilLoaded()
        try await source.add(section: NewSection(id: "items")).committed()
        try await mirror.waitUntilLoaded()
        #expect(await ClientTests.settled(mirror, server: server))

        var mine: [WriteTicket] = []
        var theirs: [WriteTicket] = []
        for round in 0..<6 {
            for k in 0..<20 {
                theirs.append(
                    try source.section(at: 0)!.add(model: Contact(id: "p\(round)-\(k)", name: "from the producer")))
            }
            mine.append(
                try mirror.perform { batch throws(FlowSyncError) in
                    try batch.section("items").add(
                        model: Contact(id: "f\(round)", name: "from the flaky client"), at: 0)
                })
            try await Task.sleep(nanoseconds: 5_000_000)
            // Cut mid-stream, then wait for the client to come back before the next round.
            let connections = await proxy.acceptedCount()
            await proxy.cutAll()
            #expect(await ClientTests.until { await proxy.acceptedCount() > connections })
        }
        // The hard case: the server commits a write but the client never hears of it
        // (no Diff, no Ack), then the connection drops. The resent Mutate must be
        // answered from the idempotency table, not applied again. Every other write is
        // committed first (the producer has one in flight at a time, so its 120 take a
        // while on a loaded machine): from here on, only the blind write moves the list.
        for ticket in theirs + mine { _ = try await ticket.committed() }
        #expect(await ClientTests.settled(mirror, server: server))
        await proxy.swallowDownstream(true)
        let before = await ClientTests.serverState(server, "feed")!.position
        let blind = try mirror.section(at: 0)!.move(from: 0, to: 3)
        #expect(await ClientTests.until { await ClientTests.serverState(server, "feed")!.position == before.next })
        await proxy.cutAll()
        await proxy.swallowDownstream(false)
        let version = try await blind.committed()
        #expect(await ClientTests.settled(mirror, server: server))
        // Nothing else writes now: one more version means the resent write applied once.
        let after = await ClientTests.serverState(server, "feed")!.position
        #expect(after == before.next, "the resent write was applied once: \(before) → \(after)")
        #expect(version.version <= mirror.snapshot.version!.version)
        #expect(mirror.snapshot.numberOfModels == 6 * 20 + 6)
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        #expect(recorder.table == mirror.snapshot.director)
        let accepted = await proxy.acceptedCount()
        #expect(accepted >= 7, "\(accepted) connections")
        #expect(await server.stop())
    }

    @Test func daemonRestartResyncsAndDeliversPendingWrites() async throws {
        let first = try await EmbeddedServer()
        let proxy = try await ChaosProxy(upstreamPort: first.port)
        let client = try ClientTests.client(port: proxy.port)
        defer {
            client.close()
            proxy.stop()
        }
        let list = client.director("board")
        let recorder = LiveRecorder(list)
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "todo", models: [Contact(id: "t1", name: "one")])).committed()
        // The daemon goes away (a memory-only server loses the list: a new epoch).
        #expect(await first.stop())
        let second = try await EmbeddedServer()
        await proxy.redirect(to: second.port)
        await proxy.cutAll()
        // Written while disconnected: shown at once, sent after the resync.
        let offline = try list.add(section: NewSection(id: "later", models: [Contact(id: "t2", name: "two")]))
        #expect(list.snapshot.numberOfSections == 2)
        _ = try await offline.committed()
        #expect(await ClientTests.settled(list, server: second))
        #expect(list.snapshot.director.sections.map(\.id) == ["later"], "the new daemon's state plus the offline write")
        #expect(recorder.causes.contains(.resync(.server(.epochChanged))), "\(recorder.causes)")
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        #expect(await second.stop())
    }

    @Test func durableDaemonRestartResumesWithADiffAndNoDuplicates() async throws {
        let directory = NSTemporaryDirectory() + "flowsync-sdk-restart-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await EmbeddedServer(storage: .file(directory: directory))
        let proxy = try await ChaosProxy(upstreamPort: first.port)
        let client = try ClientTests.client(port: proxy.port)
        defer {
            client.close()
            proxy.stop()
        }
        let list = client.director("durable")
        let recorder = LiveRecorder(list)
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "s", models: [Contact(id: "a", name: "A")])).committed()
        let before = try #require(list.snapshot.version)
        // The daemon stops (its store is on disk) and a new one starts on the same data.
        #expect(await first.stop())
        await proxy.cutAll()
        let offline = try list.section(at: 0)!.add(model: Contact(id: "b", name: "B"), at: 0)
        let second = try await EmbeddedServer(storage: .file(directory: directory))
        await proxy.redirect(to: second.port)
        let version = try await offline.committed()
        #expect(await ClientTests.settled(list, server: second))
        #expect(version == before.next, "the same epoch, the next version: history survived")
        #expect(list.snapshot.director.sections[0].rows.map(\.id) == ["b", "a"])
        #expect(
            !recorder.causes.contains { if case .resync = $0 { true } else { false } },
            "resumed, not reloaded: \(recorder.causes)")
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        #expect(await second.stop())
    }

    @Test func injectedDigestMismatchTriggersAResync() async throws {
        let server = try await EmbeddedServer()
        let writer = try ClientTests.client(port: server.port, id: "w")
        let victim = try ClientTests.client(port: server.port, id: "v")
        defer {
            writer.close()
            victim.close()
        }
        let source = writer.director("l"), replica = victim.director("l")
        let recorder = LiveRecorder(replica)
        try await source.waitUntilLoaded()
        try await replica.waitUntilLoaded()
        try await source.add(section: NewSection(id: "a")).committed()
        #expect(await ClientTests.settled(replica, server: server))
        victim.core.input { $0.injectDriftForTesting("l") }
        #expect(replica.snapshot.numberOfSections == 2, "the drift is visible")
        try await source.add(section: NewSection(id: "b")).committed()
        #expect(await ClientTests.settled(replica, server: server))
        #expect(recorder.causes.contains(.resync(.digestMismatch)), "\(recorder.causes)")
        #expect(replica.snapshot.director.sections.map(\.id) == ["a", "b"])
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        #expect(await server.stop())
    }

    @Test func changesAsAnAsyncSequence() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port)
        let list = client.director("stream")
        let changes = list.changes
        let reader = Task {
            var seen: [ListChange.Cause] = []
            for try await change in changes {
                seen.append(change.cause)
                if seen.count == 3 { break }
            }
            return seen
        }
        try await list.waitUntilLoaded()
        let t1 = try list.add(section: NewSection(id: "x"))
        let t2 = try list.add(section: NewSection(id: "y"))
        _ = try await (t1.committed(), t2.committed())
        let seen = try await reader.value
        #expect(seen == [.initial, .local(seq: t1.seq), .local(seq: t2.seq)])
        client.close()
        // After close, a new sequence ends at once and writes fail.
        var count = 0
        for try await _ in list.changes { count += 1 }
        #expect(count == 0)
        #expect(throws: FlowSyncError.self) { try list.add(section: NewSection(id: "z")) }
        #expect(await server.stop())
    }
}
