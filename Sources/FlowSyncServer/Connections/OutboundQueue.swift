import FlowSyncLoop

/// The frames waiting for one connection's flush, and how long its socket has held
/// unwritten bytes. Loop-confined; owned by ``Connection``.
///
/// Why a turn's frames wait here instead of being written at once: every frame queued
/// during a loop turn leaves in **one** write call at the turn's end (the check hook),
/// and the cost of fan-out is the number of write calls, not bytes (Redis'
/// `handleClientsWithPendingWrites`; docs/ARCHITECTURE.md, "The daemon").
struct OutboundQueue {
    /// Frames queued during this loop turn, in order.
    private(set) var frames: [[UInt8]] = []
    /// Their total size.
    private(set) var bytes = 0
    /// Loop time (ms) since which libuv has held unwritten bytes, for the write deadline;
    /// `nil` while the socket keeps up.
    var stalledSince: UInt64?

    /// Appends a frame for this turn's flush.
    mutating func append(_ frame: [UInt8]) {
        frames.append(frame)
        bytes += frame.count
    }

    /// Takes this turn's frames out (for a write), leaving the queue empty.
    mutating func takeAll() -> [[UInt8]] {
        defer {
            frames = []
            bytes = 0
        }
        return frames
    }

    /// Drops the queued frames (the peer is gone, or too slow to ever read them).
    mutating func discardAll() {
        frames = []
        bytes = 0
    }
}
