/// A TLS 1.3 server connection's record layer after the handshake, without OpenSSL's
/// `SSL`: the userspace counterpart of kernel TLS (which this kernel lacks). OpenSSL
/// does the handshake; then ``TLSChannel`` hands the traffic secrets and the unread
/// ciphertext over (``TLSRecordHandover``, decided by ``TLSRecordSwitch``), frees the
/// `SSL`, and this object protects and opens the records (docs/SECURITY.md, "The
/// record layer").
///
/// What it keeps per connection: two ``TLSRecordProtection``s (an AEAD context each),
/// a partial record (empty, and unallocated, between records), two flags and a
/// reference to the loop's ``TLSRecordCounts``.
///
/// The rules, each with its reason:
/// 1. **One record per flush, up to 2^14 bytes of content.** A turn's frames (the
///    same buffers for every subscriber: encode once) are sealed into the loop's
///    scratch, with no BIO, and handed to the socket: short pieces are copied behind
///    the record's header and encrypted there in place, together with the type byte;
///    long ones are encrypted straight from their frame (``seal(_:output:send:)``).
/// 2. **Records are opened in order, each only when whole**; a partial one waits in
///    its own buffer, at most ``TLSRecordFraming/maxRecord`` bytes (its length is
///    checked from the header first, ``TLSRecordFraming`` rule 2).
/// 3. **A KeyUpdate from the client updates the read key at once; if it asks for an
///    answer, one KeyUpdate of ours goes out before any more data** (RFC 8446 §4.6.3:
///    one answer covers any number of requests), at the end of the read at the latest.
///    More than ``maxKeyUpdatesWithoutData`` KeyUpdates in a row without application
///    data close the connection: each costs the server two HMACs, and nothing needs so
///    many.
/// 4. **Every violation sends its fatal alert, then the connection ends**; after an
///    alert (or `close_notify`) nothing more is sealed or opened.
/// 5. **The server sends nothing else**: no tickets (the context sends none), no
///    KeyUpdate of its own accord (a sequence number of 2^64 is out of reach).
///
/// Not guaranteed: a handshake message split over records is refused
/// (``TLSRecordFraming`` rule 5); early data and post-handshake authentication are
/// never offered by this server, so never accepted.
public final class TLSRecordLayer {
    /// Rule 3's bound.
    public static let maxKeyUpdatesWithoutData = 32

    private let reader: TLSRecordProtection
    private let writer: TLSRecordProtection
    /// The loop's record counts (``TLSScratch/records``), when the owner keeps them.
    private let counts: TLSRecordCounts?
    /// A record whose rest has not arrived (rule 2).
    private var partial: [UInt8] = []
    /// Rule 3: a KeyUpdate is owed to the client.
    private var owesKeyUpdate = false
    private var keyUpdatesWithoutData = 0
    /// Rule 4: an alert was sent; nothing more is sealed or opened.
    private(set) var isFinished = false

    /// Takes over from OpenSSL at the first record after the handshake: the client's
    /// records are opened with its application traffic secret, ours sealed with the
    /// server's; both sequences start at 0 (nothing was protected with them yet:
    /// ``TLSRecordSwitch``).
    /// `counts`: the loop's record counts, one increment per record.
    public init(suite: TLSRecordSuite, clientSecret: [UInt8], serverSecret: [UInt8], counts: TLSRecordCounts? = nil) {
        reader = TLSRecordProtection(suite: suite, secret: clientSecret, encrypts: false)
        writer = TLSRecordProtection(suite: suite, secret: serverSecret, encrypts: true)
        self.counts = counts
    }

    /// Tests only: the layer seen from the client's side (it opens the server's records).
    @_spi(Testing) public init(
        suite: TLSRecordSuite, readSecret: [UInt8], writeSecret: [UInt8], readSequence: UInt64 = 0,
        writeSequence: UInt64 = 0
    ) {
        reader = TLSRecordProtection(suite: suite, secret: readSecret, encrypts: false, sequence: readSequence)
        writer = TLSRecordProtection(suite: suite, secret: writeSecret, encrypts: true, sequence: writeSequence)
        counts = nil
    }

    /// Whether part of a record waits for its rest.
    public var holdsPartialRecord: Bool { !partial.isEmpty }

    // MARK: Reading

    /// Opens the records in `ciphertext` (any split: a byte, several records), handing
    /// each record's application data to `deliver` (valid only during the call) and
    /// sending what the protocol requires (a KeyUpdate, an alert) through `send`.
    /// Stops early when `deliver` returns false (the owner closed meanwhile).
    /// - Parameter scratch: at least ``TLSRecordFraming/maxCiphertext`` bytes.
    public func received(
        _ ciphertext: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        send: (UnsafeRawBufferPointer) -> Void, output: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> TLSSession.ReadStep {
        guard !isFinished else { return .wantsMore }
        var input = ciphertext
        var step = TLSSession.ReadStep.wantsMore
        reading: do {
            // First the partial record, completed from the new bytes.
            if !partial.isEmpty {
                let needed: Int
                if partial.count < TLSRecordFraming.headerLength {
                    let take = min(TLSRecordFraming.headerLength - partial.count, input.count)
                    partial += input[..<take]
                    input = UnsafeRawBufferPointer(rebasing: input[take...])
                    guard partial.count == TLSRecordFraming.headerLength else { break reading }
                }
                switch partial.withUnsafeBytes({ TLSRecordFraming.bodyLength(ofHeader: $0) }) {
                case .failure(let violation):
                    step = fail(violation, send: send, output: output)
                    break reading
                case .success(let body): needed = TLSRecordFraming.headerLength + body - partial.count
                }
                let take = min(needed, input.count)
                partial += input[..<take]
                input = UnsafeRawBufferPointer(rebasing: input[take...])
                guard take == needed else { break reading }
                let record = partial
                // Freed, not kept: an idle connection holds no record buffer.
                partial = []
                step = record.withUnsafeBytes {
                    open($0, scratch: scratch, send: send, output: output, deliver: deliver)
                }
                guard case .wantsMore = step, !isFinished else { break reading }
            }
            // Then every whole record in place, straight from the socket's buffer.
            while input.count >= TLSRecordFraming.headerLength {
                let body: Int
                switch TLSRecordFraming.bodyLength(ofHeader: input) {
                case .failure(let violation):
                    step = fail(violation, send: send, output: output)
                    break reading
                case .success(let length): body = length
                }
                let length = TLSRecordFraming.headerLength + body
                guard input.count >= length else { break }
                step = open(
                    UnsafeRawBufferPointer(rebasing: input[..<length]), scratch: scratch, send: send, output: output,
                    deliver: deliver)
                input = UnsafeRawBufferPointer(rebasing: input[length...])
                guard case .wantsMore = step, !isFinished else { break reading }
            }
            if !input.isEmpty { partial = Array(input) }
        }
        // Rule 3: the answer leaves at the end of the read at the latest.
        if owesKeyUpdate, !isFinished { sendKeyUpdate(send: send, output: output) }
        return step
    }

    /// Opens one whole record and acts on it.
    private func open(
        _ record: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        send: (UnsafeRawBufferPointer) -> Void, output: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Bool
    ) -> TLSSession.ReadStep {
        if reader.isExhausted {
            return fail(
                .init(alert: .unexpectedMessage, detail: "the read sequence number ran out"), send: send, output: output
            )
        }
        guard let count = reader.open(record, into: scratch) else {
            return fail(
                .init(alert: .badRecordMAC, detail: "a record failed authentication"), send: send, output: output)
        }
        counts?.opened += 1
        let inner = UnsafeRawBufferPointer(rebasing: scratch[..<count])
        switch TLSRecordFraming.classify(inner) {
        case .failure(let violation):
            return fail(violation, send: send, output: output)
        case .success(.applicationData(let content)):
            keyUpdatesWithoutData = 0
            if content > 0, !deliver(UnsafeRawBufferPointer(rebasing: inner[..<content])) { isFinished = true }
            return .wantsMore
        case .success(.alert(_, let description)):
            // Rule 4 and RFC 8446 §6.1: close_notify ends the stream in order (the
            // channel answers with its own); any other alert ends it at once.
            if description == TLSRecordFraming.AlertDescription.closeNotify.rawValue { return .closeNotify }
            isFinished = true
            return .failed(.connection(.peerAlert, "the peer sent alert \(description)"))
        case .success(.keyUpdate(let requested)):
            keyUpdatesWithoutData += 1
            guard keyUpdatesWithoutData <= Self.maxKeyUpdatesWithoutData else {
                return fail(
                    .init(
                        alert: .unexpectedMessage,
                        detail: "more than \(Self.maxKeyUpdatesWithoutData) KeyUpdates without data"),
                    send: send, output: output)
            }
            reader.update()
            if requested { owesKeyUpdate = true }
            return .wantsMore
        }
    }

    /// Rule 4: the alert, then the end.
    private func fail(
        _ violation: TLSRecordFraming.Violation, send: (UnsafeRawBufferPointer) -> Void,
        output: UnsafeMutableRawBufferPointer
    ) -> TLSSession.ReadStep {
        sendAlert(violation.alert, fatal: true, send: send, output: output)
        return .failed(.connection(.badRecord, violation.detail))
    }

    // MARK: Writing

    /// Seals `frames` in order as records of up to 2^14 bytes (rule 1), through
    /// `output` (at least one whole record), each full output handed to `send`.
    ///
    /// A piece of content shorter than ``copiedPieceLimit`` is copied behind the
    /// record's header and encrypted there, in place, with the pieces after it and the
    /// content type byte in one cipher call; a longer piece is encrypted straight from
    /// its frame. So the usual delivery (one frame of a few hundred bytes) costs five
    /// OpenSSL calls (nonce, header, content with its type byte, final, tag) and one
    /// short copy, and a turn's many small frames no more.
    /// - Complexity: O(bytes); one record per 2^14 bytes of content.
    /// - Returns: false when nothing can be sealed any more (finished, or the write
    ///   sequence ran out: then the connection must close).
    public func seal(
        _ frames: [[UInt8]], output: UnsafeMutableRawBufferPointer, send: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        guard !isFinished else { return false }
        if owesKeyUpdate { sendKeyUpdate(send: send, output: output) }
        var remaining = 0
        for frame in frames { remaining += frame.count }
        guard remaining > 0 else { return true }
        let out = output.baseAddress!
        var used = 0  // bytes of `output` sealed, or encrypted in the open record
        var record = 0  // content bytes still to come in the open record
        var copied = 0  // content bytes copied behind `used`, not encrypted yet
        for frame in frames where !frame.isEmpty {
            let ok = frame.withUnsafeBytes { bytes -> Bool in
                let base = bytes.baseAddress!
                var offset = 0
                while offset < bytes.count {
                    if record == 0 {
                        guard !writer.isExhausted else { return false }
                        let content = min(remaining, TLSRecordFraming.maxPlaintext)
                        // Flush what is sealed when this record might not fit.
                        if used + TLSRecordFraming.headerLength + content + 1 + TLSRecordSuite.tagLength > output.count
                        {
                            send(UnsafeRawBufferPointer(start: out, count: used))
                            used = 0
                        }
                        used += writer.beginRecord(contentLength: content, into: out + used)
                        record = content
                    }
                    let piece = min(record, bytes.count - offset)
                    if piece < Self.copiedPieceLimit {
                        (out + used + copied).copyMemory(from: base + offset, byteCount: piece)
                        copied += piece
                    } else {
                        // The copied bytes before it first, in order.
                        used += writer.encrypt(out + used, count: copied, into: out + used)
                        copied = 0
                        used += writer.encrypt(base + offset, count: piece, into: out + used)
                    }
                    offset += piece
                    record -= piece
                    remaining -= piece
                    if record == 0 {
                        // The content type ends the inner plaintext (no padding).
                        (out + used + copied).storeBytes(
                            of: TLSRecordFraming.ContentType.applicationData.rawValue, as: UInt8.self)
                        used += writer.encrypt(out + used, count: copied + 1, into: out + used)
                        copied = 0
                        used += writer.finishRecord(into: out + used)
                        counts?.sealed += 1
                    }
                }
                return true
            }
            guard ok else {
                isFinished = true
                return false
            }
        }
        if used > 0 { send(UnsafeRawBufferPointer(start: out, count: used)) }
        return true
    }

    /// The longest piece of content ``seal(_:output:send:)`` copies to encrypt in place
    /// with its neighbours; longer ones are encrypted from their frame (a copy would
    /// cost more than the cipher call it saves).
    public static let copiedPieceLimit = 4_096

    /// Our KeyUpdate (update_not_requested) under the current key, then the new write
    /// key (RFC 8446 §4.6.3: the sender updates after sending it).
    private func sendKeyUpdate(send: (UnsafeRawBufferPointer) -> Void, output: UnsafeMutableRawBufferPointer) {
        owesKeyUpdate = false
        guard !writer.isExhausted else { return }
        let message = TLSRecordFraming.keyUpdateNotRequested
        let length = message.withUnsafeBytes {
            writer.sealRecord($0, type: .handshake, into: output.baseAddress!)
        }
        counts?.sealed += 1
        send(UnsafeRawBufferPointer(start: output.baseAddress!, count: length))
        writer.update()
    }

    /// Sends an alert (``TLSRecordFraming/AlertDescription/closeNotify`` for an
    /// orderly close); after it nothing more is sealed or opened (rule 4).
    public func sendAlert(
        _ description: TLSRecordFraming.AlertDescription, fatal: Bool, send: (UnsafeRawBufferPointer) -> Void,
        output: UnsafeMutableRawBufferPointer
    ) {
        guard !isFinished else { return }
        isFinished = true
        guard !writer.isExhausted else { return }
        let alert: [UInt8] = [fatal ? 2 : 1, description.rawValue]
        let length = alert.withUnsafeBytes { writer.sealRecord($0, type: .alert, into: output.baseAddress!) }
        counts?.sealed += 1
        send(UnsafeRawBufferPointer(start: output.baseAddress!, count: length))
    }
}
