import FlowSyncLoop
import FlowSyncTLS

/// The daemon's TLS room (issue #32): the context new connections are made from, the
/// scratch buffers every channel on the loop shares, and what is counted. Present only
/// when the TCP listener speaks TLS (`[tls] mode`, ``TLSConfiguration``).
///
/// Lifetime: a reload replaces ``context``; each connection's `SSL` holds a reference
/// to the context it was made from, so the old certificate serves its connections
/// until they close, and only new handshakes see the new one. Nothing is dropped.
final class ServerTLS {
    /// The context of new handshakes.
    private(set) var context: TLSContext
    /// The per-connection limits (`tls.max_handshake_bytes`).
    var channelConfiguration: TLSStateMachine.Configuration
    /// One per loop, never per connection (``TLSScratch``).
    let scratch = TLSScratch()
    var events = TLSEvents()
    /// Handshake work per loop turn (``HandshakePacer``).
    var pacer = HandshakePacer(budgetNanoseconds: ServerTLS.handshakeSliceNanoseconds)
    /// Before every poll: the pacer's budget is renewed and the waiting handshakes run
    /// (``HandshakePacer``, rule 2). Set by ``start(loop:_:)``.
    private var hook: LoopHook?
    /// Active while handshakes wait: the loop then polls without sleeping (rule 3).
    private var idle: LoopIdle?

    /// Handshake steps one loop turn may start: 1 ms, about 3 to 10 handshakes.
    static let handshakeSliceNanoseconds: UInt64 = 1_000_000

    init(context: TLSContext, configuration: TLSConfiguration) {
        self.context = context
        self.channelConfiguration = TLSStateMachine.Configuration(handshakeByteLimit: configuration.maxHandshakeBytes)
        events.loaded(expiry: context.certificateExpiry)
    }

    /// Starts the room's handles; `everyTurn` runs before each poll.
    func start(loop: EventLoop, _ everyTurn: @escaping () -> Void) {
        hook = LoopHook(loop: loop, kind: .prepare, everyTurn)
        idle = LoopIdle(loop: loop)
    }

    /// Keeps the loop from sleeping while handshakes wait.
    func keepsTurning(_ active: Bool) {
        idle?.setActive(active)
    }

    /// Closes the room's handles (the end of a shutdown).
    func close() {
        hook?.close()
        idle?.close()
        hook = nil
        idle = nil
    }

    /// Serves `context` to new handshakes from now on.
    func replace(_ context: TLSContext, configuration: TLSConfiguration) {
        self.context = context
        channelConfiguration = TLSStateMachine.Configuration(handshakeByteLimit: configuration.maxHandshakeBytes)
        events.loaded(expiry: context.certificateExpiry)
    }
}
