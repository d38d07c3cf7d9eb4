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

    /// Empties the queue after its frames were handed to the socket, keeping the array's
    /// storage for the next turn: a subscriber gets a frame nearly every turn under
    /// load, and a fresh array would cost an allocation per delivery. A queue that grew
    /// past a few frames (a catch-up burst) lets its storage go, so an idle connection
    /// holds none of it.
    mutating func clearAfterWrite() {
        frames.removeAll(keepingCapacity: frames.capacity <= Self.retainedFrames)
        bytes = 0
    }

    /// Most frames whose storage an emptied queue keeps.
    static let retainedFrames = 8

    /// Drops the queued frames (the peer is gone, or too slow to ever read them).
    mutating func discardAll() {
        frames = []
        bytes = 0
    }
}
