import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// The I/O shell of one client connection: the socket, the incremental decoder, the
/// lifecycle state machine, per-list flow control and the frames waiting for this
/// turn's flush. It carries out the state machine's actions through the ``Server``;
/// it decides nothing about the protocol itself. Loop-confined.
final class Connection {
    let id: Int
    let tcp: TCPConnection
    var machine: ConnectionStateMachine
    let decoder: FrameDecoder
    let logger: Logger
    let peer: String

    /// Flow control per subscribed list.
    var flows: [String: SubscriptionFlow] = [:]

    /// Frames queued during this loop turn, written in one call at the turn's end.
    private(set) var pending: [[UInt8]] = []
    private(set) var pendingBytes = 0

    /// Loop time (ms) of the last bytes read, for the heartbeat check.
    var lastReceivedAt: UInt64 = 0
    /// Loop time (ms) since which libuv has held unwritten bytes, for the write deadline.
    var stalledSince: UInt64?
    /// Set once the connection is being closed: nothing more is queued to it.
    private(set) var closingSince: UInt64?
    /// Why the server closed it (for the log and the statistics).
    var closeReason: ErrorCode?
    /// Counted in the server's pending handshakes until its Welcome (or its end).
    var countsAsPendingHandshake = true

    init(id: Int, tcp: TCPConnection, machine: ConnectionStateMachine, decoder: FrameDecoder, logger: Logger) {
        self.id = id
        self.tcp = tcp
        self.machine = machine
        self.decoder = decoder
        self.peer = tcp.peer
        var logger = logger
        logger[metadataKey: "flowsync.conn"] = "\(id)"
        self.logger = logger
    }

    /// Bytes queued for this peer: this turn's frames plus what libuv still holds.
    var queuedBytes: Int { pendingBytes + tcp.queuedBytes }

    var isClosing: Bool { closingSince != nil }

    /// Queues a frame for this turn's flush. Returns `false` when closing.
    @discardableResult
    func enqueue(_ frame: [UInt8]) -> Bool {
        guard closingSince == nil else { return false }
        pending.append(frame)
        pendingBytes += frame.count
        return true
    }

    /// Writes this turn's frames in one call (`uv_try_write` first, see
    /// `TCPConnection.write`). Returns the error when the socket is broken.
    func flush(now: UInt64) -> UVError? {
        guard !pending.isEmpty, !tcp.isClosing else { return nil }
        let frames = pending
        pending = []
        pendingBytes = 0
        do {
            let left = try tcp.write(frames)
            if left > 0 && stalledSince == nil { stalledSince = now }
            return nil
        } catch {
            return error
        }
    }

    /// Marks the connection closing: after `final` frames (typically an error) are
    /// flushed, the socket is shut down. Frames queued earlier this turn still go.
    func beginClosing(now: UInt64, final frames: [[UInt8]]) {
        guard closingSince == nil else { return }
        for frame in frames { enqueue(frame) }
        closingSince = now
    }

    /// Drops queued frames (used when the peer is gone or too slow to ever read them).
    func discardPending() {
        pending = []
        pendingBytes = 0
    }
}
