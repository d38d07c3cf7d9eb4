import FlowSyncLoop
import FlowSyncTLS

/// TLS on a daemon connection (issue #32): the write side. Frames are queued in the
/// connection's ``OutboundQueue`` exactly as for a plaintext connection — the same
/// buffers every subscriber of a batch shares (encode once) — and only here, at the
/// turn's flush, are they encrypted for this one peer and written as ciphertext. The
/// read side (ciphertext in, plaintext to the decoder) is the server's:
/// `Server+TLS.swift`.
extension Connection {
    /// A ``TLSChannelIO`` for the paths that only write (the flush, the close): the
    /// ciphertext goes to the socket, and a write error or the channel's end is kept
    /// for the caller.
    struct TLSWriter: TLSChannelIO {
        let tcp: TCPConnection
        private(set) var error: UVError?
        private(set) var ended: TLSError??

        init(tcp: TCPConnection) { self.tcp = tcp }

        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) {
            guard error == nil else { return }
            do {
                try tcp.write(bytes: bytes)
            } catch {
                self.error = error
            }
        }

        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {
            preconditionFailure("Internal inconsistency in Connection: plaintext delivered on a write path")
        }

        mutating func handshakeCompleted(_ info: TLSConnectionInfo) {
            preconditionFailure("Internal inconsistency in Connection: a handshake completed on a write path")
        }

        mutating func channelEnded(_ failure: TLSError?) { ended = .some(failure) }
    }

    /// Encrypts this turn's frames and writes the ciphertext. Frames queued while the
    /// handshake is not complete (a handshake timeout's error frame) are dropped: there
    /// is no way to send them (``TLSStateMachine``, rule 3).
    /// - Returns: The bytes libuv keeps queued.
    /// - Throws: The socket's error, or `EPROTO` when the session broke.
    func encryptQueuedFrames(with channel: TLSChannel) throws(UVError) -> Int {
        var io = TLSWriter(tcp: tcp)
        channel.send(outbound.frames, &io)
        // After a burst the BIOs have grown: an idle connection keeps none of it.
        channel.releaseIdleBuffers()
        if let error = io.error { throw error }
        if case .some(let failure?) = io.ended { throw UVError(code: -71, operation: "TLS write (EPROTO): \(failure)") }
        return tcp.queuedBytes
    }

    /// The close's TLS part, before the socket's shutdown: a `close_notify` once
    /// established (nothing while the handshake runs).
    func closeTLS() {
        guard let tls else { return }
        var io = TLSWriter(tcp: tcp)
        tls.close(&io)
    }
}
