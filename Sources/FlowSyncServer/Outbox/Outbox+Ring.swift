import FlowSyncLoop
import FlowSyncRing
import Logging

/// One connection's send in this turn's ring batch: the connection (kept alive, with
/// the frames the ring borrows in its queue), its machine, and what it counts.
struct RingFlushEntry {
    let connection: Connection
    var machine: RingSendStateMachine
    let frames: Int
    let bytes: Int
    /// The completion's result (bytes sent, or a negative errno), once collected.
    var result: Int32? = nil
}

/// The end-of-turn flush through io_uring (`[server] write_path`, issue #20): one send
/// per connection, every send of the turn submitted with one system call; libuv writes
/// what the ring cannot (a socket with libuv writes in flight, a short send's rest).
/// The decisions are ``RingSendStateMachine``'s; this is the shell.
///
/// Ordering and lifetime rules of the shell:
/// 1. While sends are queued in the ring and not collected, **nothing** that could
///    close a socket or change a queue runs: connections routed to libuv are written
///    only after the ring's batch was collected, and a completion's consequences (a
///    broken socket's `peerEnded`, which discards its queue and closes its fd) are
///    carried out only after every completion of the batch was collected.
/// 2. `submitAndCollect` returns only when every send completed (``SendRing``), so no
///    buffer is borrowed past it and no send completes after a connection closed.
/// 3. A connection's ring send and its libuv remainder never overlap: the remainder is
///    handed to libuv after the completion, and a connection is routed to the ring
///    only while libuv holds nothing for it.
extension Outbox {
    /// Most frames (iovecs) in one connection's send; the rest follow through libuv
    /// after it, in order. A subscriber under load gets one or two frames a turn, a
    /// catch-up burst more.
    static let framesPerRingSend = 64
    /// Sends per submission: 1,024 subscribers' sends go out in one `io_uring_enter`.
    static let ringSends = 1_024
    /// Buffers per submission (4 frames a send on average before an early submit).
    static let ringBuffers = 4_096

    /// Creates the ring `wanted` asks for, or logs why the flush stays on libuv.
    func startWritePath(_ wanted: WritePath, logger: Logger) {
        guard wanted != .libuv else {
            logger.info("write path: libuv")
            return
        }
        do {
            ring = try SendRing(sends: ringSize.sends, buffers: ringSize.buffers)
            logger.info("write path: io_uring", metadata: ["sends_per_submit": "\(ringSize.sends)"])
        } catch {
            // A kernel without io_uring (ENOSYS), a sandbox that forbids it (EPERM), or
            // the locked-memory limit (ENOMEM): libuv writes everything, as before.
            let level: Logger.Level = wanted == .ioUring ? .warning : .info
            logger.log(
                level: level, "write path: io_uring unavailable, writing with libuv",
                metadata: ["error": "\(error)", "write_path": "\(wanted.rawValue)"])
        }
    }

    /// Writes the connections `queued` once each: through `ring` where the machine says
    /// so, through libuv otherwise, in the order of the rules above. `queued` is
    /// ``flush(now:sliced:finish:)``'s list (unretained; its lifetime rule is there).
    func flushThroughRing(
        _ queued: ArraySlice<Unmanaged<Connection>>, ring: SendRing, now: UInt64, report: inout FlushReport,
        finish: (Connection, Int, Int, UVError?) -> Void
    ) {
        precondition(
            ringBatch.isEmpty && libuvRoute.isEmpty,
            "Internal inconsistency in Outbox: a ring flush inside a ring flush")
        for entry in queued {
            let connection = entry.takeUnretainedValue()
            connection.isQueuedForFlush = false
            guard !connection.isForgotten else { continue }
            var machine = RingSendStateMachine()
            switch connection.startRingFlush(&machine, maxFrames: Self.framesPerRingSend) {
            case .nothing, .writeWithLibuv:
                // Rule 1: written after the ring's batch (it may end the connection).
                libuvRoute.append(connection)
            case .submit(let frames, _):
                if ring.freeSends == 0 || ring.freeBuffers < frames {
                    collect(ring, now: now, report: &report, finish: finish)
                }
                connection.queueRingSend(frames: frames, on: ring, tag: UInt64(ringBatch.count))
                ringBatch.append(
                    RingFlushEntry(
                        connection: connection, machine: machine, frames: connection.outbound.frames.count,
                        bytes: connection.outbound.bytes))
            }
        }
        if !ringBatch.isEmpty { collect(ring, now: now, report: &report, finish: finish) }
        for connection in libuvRoute {
            // A connection ended by a completion above is gone from the table.
            guard !connection.isForgotten else { continue }
            let frames = connection.outbound.frames.count
            let bytes = connection.outbound.bytes
            finish(connection, frames, bytes, connection.flush(now: now))
        }
        libuvRoute.removeAll(keepingCapacity: true)
    }

    /// Submits the queued sends, collects every completion, and only then carries each
    /// out (rule 1): the remainder to libuv, or the end of a broken connection.
    private func collect(
        _ ring: SendRing, now: UInt64, report: inout FlushReport, finish: (Connection, Int, Int, UVError?) -> Void
    ) {
        report.ringSubmissions += 1
        report.ringSends += ringBatch.count
        ring.submitAndCollect { tag, result in
            // Only the results are recorded here; nothing may act yet (rule 1).
            let k = Int(tag)
            precondition(
                k < ringBatch.count && ringBatch[k].result == nil,
                "Internal inconsistency in Outbox: an unexpected completion (tag \(tag) of \(ringBatch.count))")
            ringBatch[k].result = result
        }
        for k in ringBatch.indices {
            guard let result = ringBatch[k].result else {
                preconditionFailure("Internal inconsistency in Outbox: a ring send without its completion")
            }
            let connection = ringBatch[k].connection
            // Short, EAGAIN, frames past one send's limit, or a broken socket.
            if result != Int32(ringBatch[k].bytes) { report.ringRemaindersToLibuv += 1 }
            let error = connection.ringSendCompleted(&ringBatch[k].machine, result: result, now: now)
            finish(connection, ringBatch[k].frames, ringBatch[k].bytes, error)
        }
        ringBatch.removeAll(keepingCapacity: true)
    }
}

/// The ring (module `FlowSyncRing`, which knows nothing of lists) under the name the
/// server's code and its tests use.
typealias SendRing = FlowSyncRing.SendRing
