/// The TLS 1.3 record format as pure functions (RFC 8446 §5.1, §5.2, §5.4, §4.6.3): what
/// a protected record's header allows, what its decrypted inner plaintext holds, and
/// the few post-handshake messages the own record layer (``TLSRecordLayer``) accepts.
/// No cipher, no socket: `TLSRecordFramingTests` checks every rule byte by byte.
///
/// The rules, each with its reason:
/// 1. **After the handshake every record is `application_data` (23) on the outside**
///    (§5.2: the true type is inside). A change_cipher_spec after the peer's Finished,
///    or any other outer type, is `unexpected_message` (§5).
/// 2. **A record is at most 2^14 + 256 bytes of ciphertext** (§5.2); more is
///    `record_overflow`, read from the header, before any byte of the body is held:
///    this bounds the partial-record buffer of a connection to 16,645 bytes.
/// 3. **A record shorter than its tag plus the type byte cannot be authentic**:
///    `bad_record_mac` without decrypting.
/// 4. **The inner plaintext ends with its content type, after zero padding** (§5.4):
///    a record of only zeros is `unexpected_message`; more than 2^14 bytes of content is
///    `record_overflow`.
/// 5. **A handshake record after the handshake carries one whole KeyUpdate.** A
///    KeyUpdate changes the key, so it must end its record (§5.1); FlowSync servers
///    send no tickets and ask for no post-handshake authentication, so a
///    NewSessionTicket, a CertificateRequest answer or any other message from a client
///    is `unexpected_message`. A handshake message split over records is refused too
///    (a 5-byte KeyUpdate never is in practice: documented, not guaranteed).
/// 6. **Alerts are two bytes**: `close_notify` ends the connection in order; any other
///    alert ends it (§6).
///
/// Not guaranteed: the legacy record version is ignored, as §5.1 requires.
public enum TLSRecordFraming {
    /// The header of every record.
    public static let headerLength = 5
    /// The most plaintext one record carries (2^14).
    public static let maxPlaintext = 1 << 14
    /// The most ciphertext one record may carry (2^14 + 256, §5.2).
    public static let maxCiphertext = (1 << 14) + 256
    /// The largest record on the wire.
    public static let maxRecord = headerLength + maxCiphertext

    /// Content types (§5.1).
    public enum ContentType: UInt8, Sendable {
        case changeCipherSpec = 20
        case alert = 21
        case handshake = 22
        case applicationData = 23
    }

    /// Alert descriptions used here (§6).
    public enum AlertDescription: UInt8, Sendable {
        case closeNotify = 0
        case unexpectedMessage = 10
        case badRecordMAC = 20
        case recordOverflow = 22
        case illegalParameter = 47
        case decodeError = 50
        case internalError = 80
    }

    /// Why a record was refused: the alert to send and the text for the logs.
    public struct Violation: Error, Hashable, Sendable {
        public let alert: AlertDescription
        public let detail: String
    }

    /// Rules 1–3 on a header (its first five bytes): the length of the body to wait for.
    public static func bodyLength(ofHeader header: UnsafeRawBufferPointer) -> Result<Int, Violation> {
        precondition(header.count >= headerLength, "Internal inconsistency in TLSRecordFraming: a short header")
        let type = header[0]
        let length = Int(header[3]) << 8 | Int(header[4])
        guard type == ContentType.applicationData.rawValue else {
            return .failure(
                Violation(alert: .unexpectedMessage, detail: "a record of outer type \(type) after the handshake"))
        }
        guard length <= maxCiphertext else {
            return .failure(
                Violation(alert: .recordOverflow, detail: "a record of \(length) bytes (limit \(maxCiphertext))"))
        }
        guard length >= TLSRecordSuite.tagLength + 1 else {
            return .failure(Violation(alert: .badRecordMAC, detail: "a record of \(length) bytes cannot hold a tag"))
        }
        return .success(length)
    }

    /// The header of a record of `bodyLength` bytes (type 23, version 0x0303).
    public static func header(bodyLength: Int) -> (UInt8, UInt8, UInt8, UInt8, UInt8) {
        (ContentType.applicationData.rawValue, 3, 3, UInt8(bodyLength >> 8), UInt8(bodyLength & 0xff))
    }

    /// What a decrypted record holds.
    public enum Inner: Hashable, Sendable {
        /// Application data: the first `count` bytes of the inner plaintext.
        case applicationData(count: Int)
        /// An alert (level, description).
        case alert(level: UInt8, description: UInt8)
        /// A KeyUpdate; `requested`: the peer asks for ours (§4.6.3).
        case keyUpdate(requested: Bool)
    }

    /// Rules 4–6 on a decrypted inner plaintext.
    public static func classify(_ inner: UnsafeRawBufferPointer) -> Result<Inner, Violation> {
        // Rule 4: the content type is the last non-zero byte.
        var end = inner.count
        while end > 0, inner[end - 1] == 0 { end -= 1 }
        guard end > 0 else {
            return .failure(Violation(alert: .unexpectedMessage, detail: "a record without a content type"))
        }
        let type = inner[end - 1]
        let content = end - 1
        guard content <= maxPlaintext else {
            return .failure(Violation(alert: .recordOverflow, detail: "\(content) bytes of plaintext in one record"))
        }
        switch ContentType(rawValue: type) {
        case .applicationData:
            return .success(.applicationData(count: content))
        case .alert:
            guard content == 2 else {
                return .failure(Violation(alert: .decodeError, detail: "an alert of \(content) bytes"))
            }
            return .success(.alert(level: inner[0], description: inner[1]))
        case .handshake:
            return keyUpdate(UnsafeRawBufferPointer(rebasing: inner[..<content]))
        case .changeCipherSpec, nil:
            return .failure(Violation(alert: .unexpectedMessage, detail: "a protected record of type \(type)"))
        }
    }

    /// Rule 5: the handshake message of one record, a whole KeyUpdate ending it.
    static func keyUpdate(_ message: UnsafeRawBufferPointer) -> Result<Inner, Violation> {
        guard message.count >= 4 else {
            return .failure(Violation(alert: .unexpectedMessage, detail: "a handshake message split over records"))
        }
        let type = message[0]
        let length = Int(message[1]) << 16 | Int(message[2]) << 8 | Int(message[3])
        guard type == 24 else {  // key_update
            return .failure(
                Violation(alert: .unexpectedMessage, detail: "a handshake message of type \(type) after the handshake"))
        }
        guard length == 1 else {
            return .failure(Violation(alert: .decodeError, detail: "a KeyUpdate of \(length) bytes"))
        }
        guard message.count == 5 else {
            return .failure(
                Violation(
                    alert: .unexpectedMessage,
                    detail: message.count < 5
                        ? "a KeyUpdate split over records" : "bytes after a KeyUpdate in its record"))
        }
        switch message[4] {
        case 0: return .success(.keyUpdate(requested: false))  // update_not_requested
        case 1: return .success(.keyUpdate(requested: true))  // update_requested
        default:
            return .failure(Violation(alert: .illegalParameter, detail: "a KeyUpdate request of \(message[4])"))
        }
    }

    /// Our KeyUpdate message (update_not_requested).
    public static let keyUpdateNotRequested: [UInt8] = [24, 0, 0, 1, 0]
}
