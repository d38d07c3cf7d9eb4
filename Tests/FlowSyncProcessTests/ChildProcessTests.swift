import FlowSyncProcess
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The child-process launcher every test, benchmark and `flowsync-load --spawn` uses:
/// exits are awaited without a blocked thread, hung children become results, and no
/// child outlives its owner.
@Suite(.timeLimit(.minutes(2))) struct ChildProcessTests {
    @Test func exitStatusAndCombinedOutput() async throws {
        let done = try await ChildProcess.run("/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 3"])
        #expect(done.termination == .exited(3))
        #expect(done.output.contains("out\n") && done.output.contains("err\n"), "\(done)")
        #expect(done.errorOutput.isEmpty)
    }

    @Test func separateStandardError() async throws {
        let done = try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", "echo out; echo err >&2"], separateStandardError: true)
        #expect(done.termination == .exited(0))
        #expect(done.output == "out\n" && done.errorOutput == "err\n", "\(done)")
    }

    @Test func inputReachesStandardInputAndIsClosed() async throws {
        let done = try await ChildProcess.run("/bin/cat", arguments: [], input: "hello\nworld\n")
        #expect(done.termination == .exited(0) && done.output == "hello\nworld\n", "\(done)")
    }

    @Test func environmentChangesApply() async throws {
        setenv("FLOWSYNC_PROCESS_TEST_REMOVED", "present", 1)
        // In a literal, `nil` is the value: "remove this variable".
        let changes: [String: String?] = ["FLOWSYNC_PROCESS_TEST_SET": "yes", "FLOWSYNC_PROCESS_TEST_REMOVED": nil]
        let done = try await ChildProcess.run(
            "/bin/sh",
            arguments: [
                "-c", "echo \"[$FLOWSYNC_PROCESS_TEST_SET][$FLOWSYNC_PROCESS_TEST_REMOVED][$SWIFT_BACKTRACE]\"",
            ],
            environment: changes)
        #expect(done.output == "[yes][][enable=no]\n", "\(done)")
    }

    /// A hung tool is killed at its timeout: a failure with a cause, never a hung suite.
    @Test func aHungToolIsKilledAtItsTimeout() async throws {
        // The verdict is the proof, not a stopwatch on this task (the pool may run it
        // late under load): without the kill, sleep would have exited 0 after 30 s.
        let done = try await ChildProcess.run("/bin/sleep", arguments: ["30"], timeout: .milliseconds(200))
        #expect(done.termination == .signaled(SIGKILL))
    }

    @Test func signalsReachTheChild() async throws {
        let child = try await ChildProcess.start("/bin/sleep", arguments: ["30"])
        #expect(await child.waitForExit(timeout: .milliseconds(50)) == nil, "still running")
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(20)) == .signaled(SIGTERM))
        #expect(child.hasExited)
        child.signal(SIGKILL)  // after the exit: ignored, never sent to a reused PID
    }

    /// A child that closes its output and runs on still takes signals: the reader of
    /// signal requests lives until the exit, not until the end of the output.
    @Test func signalsReachAChildThatClosedItsOutput() async throws {
        let child = try await ChildProcess.start("/bin/sh", arguments: ["-c", "exec >&- 2>&-; exec sleep 30"])
        #expect(await child.waitForExit(timeout: .milliseconds(300)) == nil, "still running")
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(20)) == .signaled(SIGTERM))
    }

    /// A wait that times out returns at its deadline while the child runs on.
    @Test func aTimedOutWaitReturnsAtItsDeadline() async throws {
        let child = try await ChildProcess.start("/bin/sleep", arguments: ["30"])
        // nil proves it: a wait that missed its deadline would return sleep's exit.
        #expect(await child.waitForExit(timeout: .milliseconds(100)) == nil)
        #expect(await child.stop(gracePeriod: .seconds(10)) == .signaled(SIGTERM))
    }

    /// A grandchild that keeps the pipe open must not keep the caller waiting for EOF
    /// (the orphaned `swift-backtrace` helper once hung a run for 10 minutes).
    @Test func aGrandchildHoldingThePipeDoesNotBlockTheExit() async throws {
        // The grandchild holds the pipe for 120 s, past the 30 s timeout: a run that
        // waited for EOF would end killed at its timeout, not with the child's own exit.
        // (No stopwatch on this task: the pool may run it late under load.)
        let done = try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", "sleep 120 & echo \"grandchild $!\""], timeout: .seconds(30))
        let pid = done.output.split(separator: "\n").first { $0.hasPrefix("grandchild ") }.flatMap {
            Int32($0.dropFirst("grandchild ".count))
        }
        if let pid { kill(pid, SIGKILL) }
        #expect(done.termination == .exited(0), "waited for the grandchild: \(done)")
        #expect(pid != nil, "\(done)")
    }

    @Test func waitForLineIsWokenByOutput() async throws {
        let child = try await ChildProcess.start(
            "/bin/sh",
            arguments: ["-c", "echo first; sleep 0.2; printf 'listening on 127.0.0.1:4242\\n'; exec sleep 30"])
        let port = await child.waitForLine(timeout: .seconds(20)) { line -> Int? in
            line.hasPrefix("listening on 127.0.0.1:") ? Int(line.split(separator: ":").last!) : nil
        }
        #expect(port == 4242)
        #expect(await child.stop(gracePeriod: .seconds(10)) == .signaled(SIGTERM))
    }

    @Test func waitForLineEndsWhenTheChildExits() async throws {
        let child = try await ChildProcess.start(
            "/bin/sh", arguments: ["-c", "echo nothing to see; printf 'no newline'"])
        let started = ContinuousClock.now
        // A partial last line never matches: it may not be whole yet.
        let found = await child.waitForLine(timeout: .seconds(20)) { $0.contains("no newline") ? true : nil }
        #expect(found == nil)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(await child.waitForExit(timeout: .seconds(10)) == .exited(0))
    }

    @Test func aMissingExecutableThrows() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await ChildProcess.start("/nonexistent/flowsync-tool", arguments: [])
        }
    }

    /// A child whose owner lets go of it (a failed test) is killed, not left running.
    @Test func aReleasedChildIsKilled() async throws {
        var child: ChildProcess? = try await ChildProcess.start("/bin/sleep", arguments: ["30"])
        let pid = child!.pid
        #expect(kill(pid, 0) == 0)
        child = nil
        // Reaped by the run task once SIGKILL lands: /proc/PID disappears.
        var gone = false
        for _ in 0..<400 {
            if !FileManager.default.fileExists(atPath: "/proc/\(pid)") {
                gone = true
                break
            }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(gone, "pid \(pid) still exists")
    }

    /// Many children at once, all reaped and reported: the monitor is shared, not a
    /// blocked thread per child.
    @Test func manyChildrenAtOnce() async throws {
        let codes = try await withThrowingTaskGroup(of: ChildProcess.Termination.self) { group in
            for k in 0..<40 {
                group.addTask { try await ChildProcess.run("/bin/sh", arguments: ["-c", "exit \(k % 7)"]).termination }
            }
            var all: [ChildProcess.Termination] = []
            for try await code in group { all.append(code) }
            return all
        }
        #expect(codes.count == 40)
        #expect(
            codes.sorted { $0.status < $1.status }
                == (0..<40).map { ChildProcess.Termination.exited(Int32($0 % 7)) }.sorted { $0.status < $1.status })
    }
}

@Suite(.timeLimit(.minutes(2))) struct OutputLogTests {
    @Test func outputLogWaitersSeeOnlyCompleteLines() async {
        let log = OutputLog()
        let waiter = Task { await log.waitForLine(timeout: .seconds(20)) { $0 == "ready" ? 1 : nil } }
        log.append(Array("rea".utf8))
        log.append(Array("dy".utf8))
        log.append(Array("\n".utf8))
        #expect(await waiter.value == 1)
        let ended = Task { await log.waitForLine(timeout: .seconds(20)) { $0 == "never" ? 1 : nil } }
        log.finish()
        #expect(await ended.value == nil)
    }
}
