import Dispatch
import FlowSyncLoop

/// The worker threads that read cold lists (docs/ARCHITECTURE.md, "Event loop", rule 15).
///
/// Why not libuv's thread pool (``EventLoop/offload(work:then:)``): its four threads
/// also build large snapshots and write compactions, and a burst of cold loads (a
/// reconnect storm after a deploy) must not queue those behind it, nor the other way
/// round. Why not Swift's cooperative pool: a load blocks in `read(2)` and `fsync(2)`,
/// and a blocked cooperative thread stalls every task of the process.
///
/// A list always loads on the same worker (by its name's hash), so two loads of one
/// name could never run at once — the server starts at most one anyway.
final class ListLoader: Sendable {
    private let workers: [DispatchQueue]
    /// Where ``run(_:on:completion:)`` runs: not a loader. A count of a million stored
    /// lists is a `readdir` of about half a second, and a cold load queued behind it on
    /// the same worker waited that long (issue #33: 600 ms for one subscribe).
    private let chores = DispatchQueue(label: "flowsync.list-loader.chores", qos: .utility)

    init(workers: Int = 2) {
        self.workers = (0..<max(1, workers)).map {
            DispatchQueue(label: "flowsync.list-loader.\($0)", qos: .userInitiated)
        }
    }

    /// Runs `job` on a worker, then `completion` with its outcome on `loop`'s thread,
    /// handed over through ``EventLoop/execute(_:)`` (a queue plus `uv_async_send`).
    /// When the loop has stopped meanwhile, the outcome is dropped: its owner is gone.
    func load(_ job: ListLoadJob, on loop: EventLoop, completion: @escaping (ListLoadOutcome) -> Void) {
        let completion = LoopBound(completion)
        workers[Int(UInt(bitPattern: job.name.hashValue) % UInt(workers.count))].async {
            let outcome = job.run()
            _ = loop.execute { completion.value(outcome) }
        }
    }

    /// Runs `work` on a worker and `completion` with its result on the loop (a stored
    /// list count: a `readdir` of every list directory, too long for the loop).
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T, on loop: EventLoop, completion: @escaping (T) -> Void) {
        let completion = LoopBound(completion)
        chores.async {
            let value = work()
            _ = loop.execute { completion.value(value) }
        }
    }
}

/// A loop-confined value carried through a worker: it is created on the loop thread
/// and used (and normally released) there again, inside a job of
/// ``EventLoop/execute(_:)``. The worker only holds it. When the loop has stopped, the
/// job — and with it this box — is released on the worker; the closures boxed here
/// capture their owners weakly, so no loop-confined object is deinitialised there.
struct LoopBound<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
