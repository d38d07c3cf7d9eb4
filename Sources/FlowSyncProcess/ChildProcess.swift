import Subprocess
import Synchronization

#if canImport(System)
import System
#else
import SystemPackage
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with swift-subprocess, whose exit is awaited without ever
/// blocking a thread.
///
/// Why not `Foundation.Process`: on Linux its wait for the exit blocks the calling
/// thread, and on a 2-core machine Swift's cooperative pool has 2 threads. Two tests
/// blocked in it stopped every other test, and a child that had already exited sat
/// `<defunct>`, never reaped, for 14 minutes (issue #15). swift-subprocess watches the
/// child through a pidfd on a monitor thread of its own and resumes the waiting task, so
/// waiting costs no thread. Signals are sent at once with `kill(2)` while the child is
/// unreaped (``signal(_:)``), never through a task that would wait for a pool thread.
///
/// Standard output and standard error are combined (`2>&1`) into ``output``, read as the
/// child writes, so a chatty child never blocks on a full pipe. The child is started in
/// an unstructured task that outlives the call to ``start(_:arguments:environment:)``;
/// it ends when the child exits. A child is never left behind by a test that forgets
/// it: ``deinit`` sends SIGKILL to a child still running.
///
/// All members are thread-safe.
public final class ChildProcess: Sendable {
    /// How a child ended.
    public enum Termination: Sendable, Hashable, CustomStringConvertible {
        /// It called `exit` with this status.
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)
        /// Watching it failed (swift-subprocess reported an error after the start); how
        /// it ended is unknown.
        case lost(String)

        /// The exit status, or `128 + signal` the way a shell reports a signal.
        public var status: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            case .lost: -1
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signaled(let signal): "signal \(signal)"
            case .lost(let why): "lost track of it: \(why)"
            }
        }
    }

    /// The child's process ID (for `/proc` and log lines; signal it with ``signal(_:)``).
    public let pid: Int32
    /// What the executable was, for messages.
    public let executable: String
    /// Everything the child wrote to stdout (and stderr, unless it is separate) so far.
    public let log: OutputLog
    /// Its stderr, when started with `separateStandardError`.
    public let errorLog: OutputLog?
    /// Resolved when the run task ends: what ``waitForExit(timeout:)`` waits on.
    private let exit: ExitLatch

    private init(pid: Int32, executable: String, log: OutputLog, errorLog: OutputLog?, exit: ExitLatch) {
        self.pid = pid
        self.executable = executable
        self.log = log
        self.errorLog = errorLog
        self.exit = exit
    }

    deinit {
        // A child nobody waits for any more must not outlive its owner (a failed test).
        signal(SIGKILL)
    }

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - environment: changes to this process's environment (a `nil` value removes the
    ///     variable). `SWIFT_BACKTRACE=enable=no` is always set: an orphaned backtrace
    ///     helper of a crashed child once kept pipes open and hung a run.
    ///   - input: written to the child's stdin, which is then closed; `nil`: no stdin.
    ///   - separateStandardError: stderr goes to ``errorLog`` instead of being combined
    ///     with stdout in ``log``.
    /// - Throws: when the executable cannot be started.
    public static func start(
        _ executable: String, arguments: [String], environment: [String: String?] = [:],
        input: String? = nil, separateStandardError: Bool = false
    ) async throws -> ChildProcess {
        if input != nil { ignoreBrokenPipes }
        let log = OutputLog()
        let (started, startedContinuation) = AsyncStream<Int32>.makeStream()
        var changes: [Environment.Key: String?] = ["SWIFT_BACKTRACE": "enable=no"]
        for (key, value) in environment { changes[Environment.Key(rawValue: key)!] = value }
        let configuration = Configuration(
            executable: .path(FilePath(executable)), arguments: Arguments(arguments),
            environment: .inherit.updating(changes))
        let errorLog = separateStandardError ? OutputLog() : nil
        let exit = ExitLatch()
        let completion = Task.detached { () async throws -> Termination in
            var outcome: Termination = .lost("the run ended without a status")
            defer {
                startedContinuation.finish()
                log.finish()
                errorLog?.finish()
                // After the logs: whoever sees the exit sees the whole output.
                exit.resolve(outcome)
            }
            // One body for every input and error kind: reads the output until the child
            // exits (EOF, or the read cancelled by swift-subprocess when the child exits
            // while a grandchild still holds the pipe). Returning does not reap the child:
            // `run` waits for its exit after the body, so a child that closed its output
            // early still runs, unreaped, and takes signals.
            @Sendable func drive<I: InputProtocol, E: ErrorOutputProtocol>(
                _ execution: Execution<I, SequenceOutput, E>,
                errors: SubprocessOutputSequence?
            ) async throws {
                startedContinuation.yield(execution.processIdentifier.value)
                startedContinuation.finish()
                await withTaskGroup(of: Void.self) { group in
                    if let errors, let errorLog {
                        group.addTask { await drain(errors, into: errorLog) }
                    }
                    await drain(execution.standardOutput, into: log)
                    await group.waitForAll()
                }
            }
            // One call per input and error kind: their generic types differ.
            @Sendable func launch() async throws -> TerminationStatus {
                switch (input, separateStandardError) {
                case (let text?, false):
                    try await Subprocess.run(
                        configuration, input: .string(text), output: .sequence, error: .combinedWithOutput
                    ) {
                        try await drive($0, errors: nil)
                    }.terminationStatus
                case (nil, false):
                    try await Subprocess.run(configuration, input: .none, output: .sequence, error: .combinedWithOutput)
                    {
                        try await drive($0, errors: nil)
                    }.terminationStatus
                case (let text?, true):
                    try await Subprocess.run(configuration, input: .string(text), output: .sequence, error: .sequence) {
                        try await drive($0, errors: $0.standardError)
                    }.terminationStatus
                case (nil, true):
                    try await Subprocess.run(configuration, input: .none, output: .sequence, error: .sequence) {
                        try await drive($0, errors: $0.standardError)
                    }.terminationStatus
                }
            }
            let status: TerminationStatus
            do {
                status = try await launch()
            } catch {
                outcome = .lost("\(error)")
                throw error
            }
            switch status {
            case .exited(let code): outcome = .exited(code)
            case .signaled(let signal): outcome = .signaled(signal)
            }
            return outcome
        }
        for await pid in started {
            return ChildProcess(pid: pid, executable: executable, log: log, errorLog: errorLog, exit: exit)
        }
        // It never started: the task ends with the spawn error.
        _ = try await completion.value
        throw ChildProcessError("\(executable) did not start")
    }

    /// What a short-lived tool did.
    public struct Completed: Sendable, CustomStringConvertible {
        public var termination: Termination
        /// Its stdout (with stderr, unless run with `separateStandardError`).
        public var output: String
        /// Its stderr, when run with `separateStandardError`; else empty.
        public var errorOutput: String

        /// The exit status, or `128 + signal`.
        public var status: Int32 { termination.status }

        public var description: String { "\(termination)\nstdout: \(output)\nstderr: \(errorOutput)" }
    }

    /// Runs a short-lived tool to its end.
    /// - Parameter timeout: after this the tool is killed (SIGKILL) and the result says
    ///   `.signaled(SIGKILL)`; a hung tool becomes a failure, never a hang.
    public static func run(
        _ executable: String, arguments: [String], environment: [String: String?] = [:],
        input: String? = nil, separateStandardError: Bool = false,
        timeout: Duration = .seconds(60)
    ) async throws -> Completed {
        let child = try await start(
            executable, arguments: arguments, environment: environment, input: input,
            separateStandardError: separateStandardError)
        let termination = await child.stop(gracePeriod: timeout, signal: 0)
        // The termination comes from the run task after its readers ended and the logs
        // were finished, so the output is complete here.
        return Completed(termination: termination, output: child.output, errorOutput: child.errorLog?.text ?? "")
    }

    /// The output so far, as UTF-8 text (stdout and stderr interleaved as written).
    public var output: String { log.text }

    /// True once the child has exited and its output is read.
    public var hasExited: Bool { exit.isResolved }

    /// Sends `signal` to the child now, if it has not been reaped yet.
    ///
    /// Synchronous (`kill(2)`), so a signal never waits for a thread of the cooperative
    /// pool. The exit latch is resolved right after swift-subprocess reaps the child; a
    /// PID is reused only after the kernel has cycled through its whole PID space
    /// (`/proc/sys/kernel/pid_max`), which cannot happen in that window.
    public func signal(_ signal: Int32) {
        guard !exit.isResolved else { return }
        kill(pid, signal)
    }

    /// Waits for the child's exit, at most `timeout`; `nil` when it still runs then.
    /// Costs no thread while it waits, and returns at its deadline even though the child
    /// runs on (the wait is a cancellable continuation, not an `await` on the run task,
    /// which would hold a task group open until the exit).
    public func waitForExit(timeout: Duration) async -> Termination? {
        await exit.wait(timeout: timeout)
    }

    /// Ends the child: `signal` (SIGTERM by default; 0 sends none and just waits), then
    /// SIGKILL after `gracePeriod`, and waits for its exit.
    ///
    /// A cancelled caller (a test past its time limit) does not wait out the grace period:
    /// the child is killed at once, and the wait for that exit, which SIGKILL makes
    /// immediate, is not cut short, so no child outlives a cancelled test.
    @discardableResult
    public func stop(gracePeriod: Duration = .seconds(10), signal: Int32 = SIGTERM) async -> Termination {
        if signal != 0 { self.signal(signal) }
        if let termination = await waitForExit(timeout: gracePeriod) { return termination }
        self.signal(SIGKILL)
        // Unstructured: not cancelled with the caller.
        let exit = exit
        let killed = await Task { await exit.wait(timeout: .seconds(30)) }.value
        // SIGKILL cannot be ignored; only an unkillable (D-state) child gets here.
        return killed ?? .lost("pid \(pid) still runs 30 s after SIGKILL")
    }

    /// Waits until the output contains a complete line for which `matches` returns a
    /// value, at most `timeout`; `nil` if the child exits or the time passes first.
    /// Woken by each write of the child, never by polling.
    public func waitForLine<T: Sendable>(
        timeout: Duration, _ matches: @escaping @Sendable (Substring) -> T?
    ) async -> T? {
        await log.waitForLine(timeout: timeout, matches)
    }
}

/// Writing a child's stdin after it exited raises SIGPIPE, whose default action kills
/// the writer: this whole process (the test runner, a tool). The first `start` with
/// input sets SIGPIPE to ignored process-wide, so the write fails with EPIPE instead.
/// This module serves tests and command-line tools, which own their process; the SDK
/// never changes a signal disposition (docs/SDK.md).
private let ignoreBrokenPipes: Void = {
    signal(SIGPIPE, SIG_IGN)
}()

/// Reads a child's pipe into `log` until it ends (EOF, or cancelled by swift-subprocess
/// when the child exits while a grandchild still holds the pipe).
private func drain(_ sequence: SubprocessOutputSequence, into log: OutputLog) async {
    do {
        for try await buffer in sequence {
            buffer.withUnsafeBytes { log.append(Array($0)) }
        }
    } catch {}
}

/// The end of a child's run task, awaited by any number of tasks, each of which may be
/// cancelled (a timeout) without waiting for the exit.
final class ExitLatch: Sendable {
    private struct State {
        var termination: ChildProcess.Termination?
        var waiters: [UInt64: CheckedContinuation<ChildProcess.Termination?, Never>] = [:]
        var nextTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    /// True once the child's end is known.
    var isResolved: Bool { state.withLock { $0.termination != nil } }

    /// Records how the child ended and wakes every waiter.
    func resolve(_ termination: ChildProcess.Termination) {
        let waiters = state.withLock { state -> [CheckedContinuation<ChildProcess.Termination?, Never>] in
            state.termination = termination
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: termination) }
    }

    /// How the child ended; `nil` when `timeout` passes or the task is cancelled first.
    func wait(timeout: Duration) async -> ChildProcess.Termination? {
        await withDeadline(timeout) { await self.wait() }
    }

    /// How the child ended; `nil` when the waiting task is cancelled first.
    func wait() async -> ChildProcess.Termination? {
        let ticket = state.withLock { state -> UInt64 in
            state.nextTicket += 1
            return state.nextTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ChildProcess.Termination?, Never>) in
                let now = state.withLock { state -> ChildProcess.Termination?? in
                    if let termination = state.termination { return .some(termination) }
                    if Task.isCancelled { return .some(nil) }
                    state.waiters[ticket] = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: ticket) }
            waiter?.resume(returning: nil)
        }
    }
}

/// A failure to start or drive a child process.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
