/// The buffers a loop's TLS channels work in. One per loop thread, shared by every
/// channel on it — never per connection, so an idle connection holds none of it.
/// Loop-confined: a channel uses it only inside one call, and hands out pieces valid
/// only during a callback.
///
/// Three regions, so that a callback may start another use without overwriting the
/// piece it was given: plaintext being delivered may cause a send (a reply gathered and
/// encrypted) while the rest of the record waits in ``decrypted``.
public final class TLSScratch {
    /// Plaintext decrypted from records (one record at most per piece; the own record
    /// layer decrypts a whole record's body here, up to 2^14 + 256 bytes).
    let decrypted: UnsafeMutableRawBufferPointer
    /// Small frames gathered into one write (one ``TLSSession/chunk``).
    let gathered: UnsafeMutableRawBufferPointer
    /// Ciphertext drained from a session on its way to the socket.
    let ciphertext: UnsafeMutableRawBufferPointer
    /// The records the own record layer sealed and opened on this loop.
    public let records = TLSRecordCounts()

    public init() {
        decrypted = .allocate(byteCount: 17 << 10, alignment: 16)
        gathered = .allocate(byteCount: TLSSession.chunk, alignment: 16)
        ciphertext = .allocate(byteCount: 64 << 10, alignment: 16)
    }

    deinit {
        decrypted.deallocate()
        gathered.deallocate()
        ciphertext.deallocate()
    }
}
