import FlowSyncCore
import Testing

@testable import FlowSyncServer

/// The server's lifecycle machine without a loop or a socket (issue #16): every event in
/// every state. Completions are counted, not run by a server.
@Suite(.timeLimit(.minutes(2))) struct ServerLifecycleTests {
    /// Counts the completions it hands out.
    final class Completions {
        var ran: [String] = []
        func make(_ name: String) -> () -> Void { { [self] in ran.append(name) } }
    }

    static let failure = StoreError.io("fdatasync", path: "/data/lists/a/log", errno: 5)

    func running(at now: UInt64 = 10) -> ServerLifecycle {
        var lifecycle = ServerLifecycle()
        lifecycle.recovered()
        lifecycle.started(now: now)
        return lifecycle
    }

    @Test func createdRecoveredRunning() {
        var lifecycle = ServerLifecycle()
        #expect(lifecycle.name == "created" && !lifecycle.hasRecovered && lifecycle.startedAt == 0)
        lifecycle.recovered()
        #expect(lifecycle.name == "recovered" && lifecycle.hasRecovered && lifecycle.startedAt == 0)
        lifecycle.started(now: 42)
        #expect(lifecycle.name == "running" && lifecycle.startedAt == 42)
        #expect(lifecycle.storageFailure == nil && !lifecycle.isShuttingDown && lifecycle.shutdownDeadline == nil)
        #expect(lifecycle.drained(connections: 0, offloads: 0) == nil, "nothing to finish while running")
    }

    @Test func aShutdownFinishesWhenNothingIsLeft() {
        let completions = Completions()
        var lifecycle = running(at: 10)
        #expect(lifecycle.shutdownRequested(now: 100, grace: 5_000, completion: completions.make("first")) == .begin)
        #expect(lifecycle.name == "shutting down" && lifecycle.isShuttingDown && lifecycle.shutdownDeadline == 5_100)
        #expect(lifecycle.startedAt == 10, "uptime still counts")
        #expect(lifecycle.shutdownRequested(now: 200, grace: 5_000, completion: completions.make("second")) == .none)
        #expect(lifecycle.shutdownDeadline == 5_100, "the first deadline stays")
        #expect(lifecycle.drained(connections: 1, offloads: 0) == nil)
        #expect(lifecycle.drained(connections: 0, offloads: 1) == nil, "offloaded work may still install a compaction")
        let finish = lifecycle.drained(connections: 0, offloads: 0)
        #expect(finish?.closeStore == true)
        finish?.completion()
        #expect(completions.ran == ["first"])
        #expect(lifecycle.name == "stopped" && !lifecycle.isShuttingDown && lifecycle.startedAt == 0)
        #expect(lifecycle.drained(connections: 0, offloads: 0) == nil, "finishes once")
        #expect(lifecycle.shutdownRequested(now: 300, grace: 1, completion: completions.make("late")) == .completeNow)
    }

    @Test func aShutdownBeforeStartFinishesToo() {
        var lifecycle = ServerLifecycle()
        #expect(lifecycle.shutdownRequested(now: 0, grace: 10, completion: {}) == .begin)
        #expect(lifecycle.drained(connections: 0, offloads: 0)?.closeStore == true)
    }

    @Test func aStorageFailureIsReportedOnceAndClosesEverythingOnce() {
        var lifecycle = running(at: 10)
        let reported1 = lifecycle.storageFailed(Self.failure)
        #expect(reported1)
        #expect(lifecycle.name == "failed" && lifecycle.storageFailure == Self.failure && lifecycle.startedAt == 10)
        let reported2 = lifecycle.storageFailed(StoreError.io("write", path: "x", errno: 28))
        #expect(!reported2, "only the first failure is reported")
        #expect(lifecycle.storageFailure == Self.failure)
        let reported3 = lifecycle.closeAfterFailure()
        #expect(reported3)
        let reported4 = lifecycle.closeAfterFailure()
        #expect(!reported4, "once")
        #expect(
            !lifecycle.isShuttingDown && lifecycle.drained(connections: 0, offloads: 0) == nil,
            "no shutdown asked for: nothing to finish")
    }

    @Test func aShutdownAfterAFailureAbandonsTheStore() {
        let completions = Completions()
        var lifecycle = running()
        _ = lifecycle.storageFailed(Self.failure)
        #expect(lifecycle.shutdownRequested(now: 50, grace: 100, completion: completions.make("shutdown")) == .begin)
        #expect(lifecycle.shutdownDeadline == 150 && lifecycle.isShuttingDown)
        #expect(lifecycle.shutdownRequested(now: 60, grace: 100, completion: completions.make("again")) == .none)
        let finish = lifecycle.drained(connections: 0, offloads: 0)
        #expect(finish?.closeStore == false)
        finish?.completion()
        #expect(completions.ran == ["shutdown"])
        #expect(lifecycle.name == "stopped" && lifecycle.storageFailure == Self.failure)
    }

    @Test func aFailureDuringAShutdownKeepsItsDeadlineAndCompletion() {
        let completions = Completions()
        var lifecycle = running()
        _ = lifecycle.shutdownRequested(now: 0, grace: 1_000, completion: completions.make("shutdown"))
        let reported5 = lifecycle.storageFailed(Self.failure)
        #expect(reported5)
        #expect(lifecycle.name == "failed" && lifecycle.shutdownDeadline == 1_000)
        let reported6 = lifecycle.closeAfterFailure()
        #expect(reported6)
        let finish = lifecycle.drained(connections: 0, offloads: 0)
        #expect(finish?.closeStore == false)
        finish?.completion()
        #expect(completions.ran == ["shutdown"])
    }

    @Test func closingTheStoreCanStillFail() {
        var lifecycle = running()
        _ = lifecycle.shutdownRequested(now: 0, grace: 1, completion: {})
        _ = lifecycle.drained(connections: 0, offloads: 0)
        #expect(lifecycle.storageFailure == nil)
        let reported7 = lifecycle.storageFailed(Self.failure)
        #expect(reported7, "reported: the clean-stop mark was not written")
        #expect(lifecycle.name == "stopped" && lifecycle.storageFailure == Self.failure)
        let reported8 = lifecycle.storageFailed(Self.failure)
        #expect(!reported8)
        let reported9 = lifecycle.closeAfterFailure()
        #expect(!reported9, "nothing left to close")
    }

    @Test func aFailureBetweenRecoveryAndStartStillRecordsTheStart() {
        var lifecycle = ServerLifecycle()
        lifecycle.recovered()
        _ = lifecycle.storageFailed(Self.failure)
        lifecycle.started(now: 7)
        #expect(lifecycle.name == "failed" && lifecycle.startedAt == 7)
    }
}
