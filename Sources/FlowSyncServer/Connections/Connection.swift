import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncRing
import FlowSyncTLS
import Logging

/// The I/O shell of one client connection: the socket, its incremental decoder, its
/// outbound queue and the verifier it was admitted under, beside the
/// ``ConnectionStateMachine`` that owns everything else (the handshake, the grant, the
/// subscriptions and their flows, the close). ``Server``
/// feeds the machine and carries out its actions; the connection decides nothing about
/// the protocol itself. Loop-confined.
final class Connection {
    let id: Int
    /// The socket (`Connection+TLS.swift` writes its ciphertext to it).
    let tcp: TCPConnection
    /// TLS on this connection (issue #32): `nil` on a plaintext listener. Ciphertext in
    /// goes through it to the decoder (`Server+TLS.swift`); frames out through it at the
    /// flush (`Connection+TLS.swift`).
    var tls: TLSChannel?
    var machine: ConnectionStateMachine
    let decoder: FrameDecoder
    let logger: Logger
    let peer: String
    /// The verifier in force when the connection was accepted: it checks this
    /// connection's tokens (a RefreshToken's too) and its clock says when the grant
    /// expires. A reload's new keys apply to new connections; `nil` with auth off.
    let verifier: TokenVerifier?
    /// This turn's frames and the write-deadline clock.
    private(set) var outbound = OutboundQueue()
    /// In the server's list of connections to flush this turn (`Server.toFlush`): a
    /// flag instead of a set lookup per delivery.
    var isQueuedForFlush = false
    /// Removed from the server's table (`Server.forget`): a flush still listing it
    /// skips it.
    var isForgotten = false

    init(
        id: Int, tcp: TCPConnection, machine: ConnectionStateMachine, decoder: FrameDecoder, verifier: TokenVerifier?,
        logger: Logger
    ) {
        self.id = id
        self.verifier = verifier
        self.tcp = tcp
        self.machine = machine
        self.decoder = decoder
        self.peer = tcp.peer
        var logger = logger
        logger[metadataKey: "flowsync.conn"] = "\(id)"
        self.logger = logger
    }

    /// Bytes queued for this peer: this turn's frames plus what libuv still holds.
    var queuedBytes: Int { outbound.bytes + tcp.queuedBytes }

    /// Whether the connection is going away (the machine is closing).
    var isClosing: Bool { machine.isClosing }

    /// Queues a frame for this turn's flush. Returns `false` when closing.
    @discardableResult
    func enqueue(_ frame: [UInt8]) -> Bool {
        guard !machine.isClosing else { return false }
        outbound.append(frame)
        return true
    }

    /// Queues the last frame of a closing connection (its error): after it, nothing.
    func enqueueFinal(_ frame: [UInt8]) {
        precondition(machine.isClosing, "Internal inconsistency in Connection: a final frame before the close")
        outbound.append(frame)
    }

    /// Writes this turn's frames in one call (`uv_try_write` first, see
    /// `TCPConnection.write`). Returns the error when the socket is broken.
    func flush(now: UInt64) -> UVError? {
        guard !outbound.frames.isEmpty, !tcp.isClosing else { return nil }
        if let tls {
            return writeThenClear(now: now) { () throws(UVError) in try encryptQueuedFrames(with: tls) }
        }
        // Written from the queue's own array, which is then emptied in place (its
        // storage is reused next turn: no allocation per delivery).
        return writeThenClear(now: now) { () throws(UVError) in try tcp.write(outbound.frames) }
    }

    /// Runs one libuv write of queued frames (`write` returns the bytes libuv kept
    /// queued), empties the queue either way, and marks the connection stalled when
    /// libuv kept bytes. Returns the error when the socket is broken.
    private func writeThenClear(now: UInt64, _ write: () throws(UVError) -> Int) -> UVError? {
        let left: Int
        do {
            left = try write()
        } catch {
            outbound.clearAfterWrite()
            return error
        }
        outbound.clearAfterWrite()
        if left > 0 && outbound.stalledSince == nil { outbound.stalledSince = now }
        return nil
    }

    // MARK: The io_uring flush (Server+RingFlush.swift)

    /// Decides, with `machine`, the route of this turn's frames: through the ring, or
    /// libuv (bytes queued in libuv must not be overtaken, see ``RingSendStateMachine``).
    func startRingFlush(_ machine: inout RingSendStateMachine, maxFrames: Int) -> RingSendStateMachine.FlushAction {
        // Ciphertext is made per connection at the flush: a TLS connection is written
        // through libuv (``flush(now:)``), never by the ring, which sends frames as queued.
        if tls != nil { return outbound.frames.isEmpty ? .nothing : .writeWithLibuv }
        return machine.flushStarted(
            frameSizes: outbound.frames.lazy.map(\.count), libuvQueuedBytes: tcp.queuedBytes,
            socketClosing: tcp.isClosing, maxFrames: maxFrames)
    }

    /// Queues one send of the first `frames` queued frames on `ring`. The frames stay in
    /// this connection's queue, untouched, until ``ringSendCompleted(_:result:now:)``:
    /// the ring borrows their bytes (``SendRing``, rule 3).
    func queueRingSend(frames: Int, on ring: SendRing, tag: UInt64) {
        ring.queueSend(fd: tcp.fileDescriptor, chunks: outbound.frames[..<frames], tag: tag)
    }

    /// The ring's send completed with `result`: hands what it left to libuv (in order,
    /// from the exact byte), then empties the queue. Returns the error when the socket
    /// is broken.
    func ringSendCompleted(_ machine: inout RingSendStateMachine, result: Int32, now: UInt64) -> UVError? {
        switch machine.sendCompleted(result: result, frameSizes: outbound.frames.lazy.map(\.count)) {
        case .done:
            outbound.clearAfterWrite()
            return nil
        case .writeRemainderWithLibuv(let from):
            // Only now may the queue change: the completion was collected, the kernel
            // no longer reads these bytes. libuv tries them at once and queues the rest
            // (copied) behind nothing, since it held nothing (the route's condition).
            return writeThenClear(now: now) { () throws(UVError) in
                try tcp.write(outbound.frames[from.frame...], skipping: from.offset)
            }
        case .fail(let errno):
            outbound.clearAfterWrite()
            // libuv's codes are the negative errno on Linux: one error type.
            return UVError(code: errno, operation: "io_uring send")
        }
    }

    /// libuv wrote everything it held: the write deadline starts over.
    func drained() {
        outbound.stalledSince = nil
    }

    /// What libuv still holds for this peer (the socket's part of ``queuedBytes``).
    var socketQueuedBytes: Int { tcp.queuedBytes }

    /// Sends what was written, then closes (`uv_shutdown`, then close in its callback:
    /// `uv_close` alone would cancel the pending writes); `closed` runs once the socket is
    /// closed. Reads stop now. Does nothing when the socket is already closing.
    func shutdownAfterWrites(closed: @escaping () -> Void) {
        guard !tcp.isClosing else { return }
        tcp.onRead = nil
        closeTLS()
        tcp.shutdownAndClose()
        tcp.onClose = closed
    }

    /// Closes the socket at once, dropping what libuv holds (a peer gone, a stuck
    /// close, the end of a shutdown's grace period).
    func cut() {
        tcp.close()
    }

    /// Drops queued frames (used when the peer is gone or too slow to ever read them).
    func discardPending() {
        outbound.discardAll()
    }
}
