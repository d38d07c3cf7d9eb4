import FlowSyncCore

/// Reads the protocol's primitive types from a message body, bounds-checking every
/// read and every count before anything is allocated.
///
/// It reads through an `UnsafeRawBufferPointer` (valid only inside the decoder's
/// `withUnsafeBytes` scope) for speed; every access goes through ``need(_:)``, which
/// checks the bytes left, so no input can read out of bounds or trap.
struct WireReader {
    /// Largest index or count on the wire, 2³¹−1: fits an `Int32` in every client
    /// language, and far above any list a UI can show.
    static let maxIndex = Int(Int32.max)

    private let base: UnsafeRawBufferPointer
    private(set) var offset: Int
    let limits: DecoderLimits

    // Per-message element budgets (totals, so nesting cannot multiply the limits).
    private var sectionsLeft: Int
    private var rowsLeft: Int
    private var changesLeft: Int

    init(_ base: UnsafeRawBufferPointer, limits: DecoderLimits) {
        self.base = base
        self.offset = 0
        self.limits = limits
        self.sectionsLeft = limits.maxSectionsPerMessage
        self.rowsLeft = limits.maxRowsPerMessage
        self.changesLeft = limits.maxChangesPerMessage
    }

    /// Bytes not read yet.
    var remaining: Int { base.count - offset }

    static func malformed(_ message: String) -> ProtocolError {
        ProtocolError(code: .malformedFrame, message: message)
    }

    @inline(__always) private mutating func need(_ n: Int, _ what: @autoclosure () -> String) throws(ProtocolError) {
        guard n <= remaining else {
            throw Self.malformed("truncated \(what()): needs \(n) bytes, \(remaining) left")
        }
    }

    @inline(__always) mutating func u8(_ what: @autoclosure () -> String = "byte") throws(ProtocolError) -> UInt8 {
        try need(1, what())
        let v = base[offset]
        offset += 1
        return v
    }

    mutating func u16(_ what: String) throws(ProtocolError) -> UInt16 {
        try need(2, what)
        let v = UInt16(base[offset]) << 8 | UInt16(base[offset + 1])
        offset += 2
        return v
    }

    mutating func u64(_ what: String) throws(ProtocolError) -> UInt64 {
        try need(8, what)
        var v: UInt64 = 0
        for k in 0..<8 { v = v << 8 | UInt64(base[offset + k]) }
        offset += 8
        return v
    }

    /// Unsigned LEB128, at most 10 bytes, shortest form only (so every value has exactly
    /// one encoding and re-encoding a decoded frame gives the same bytes).
    @inline(__always) mutating func varint(_ what: @autoclosure () -> String) throws(ProtocolError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < base.count else { throw Self.malformed("truncated varint (\(what()))") }
            let byte = base[offset]
            offset += 1
            if shift == 63 && byte > 1 {
                throw Self.malformed("varint overflows 64 bits (\(what()))")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 { throw Self.malformed("non-minimal varint (\(what()))") }
                return result
            }
            shift += 7
        }
    }

    mutating func u32Varint(_ what: String) throws(ProtocolError) -> UInt32 {
        let v = try varint(what)
        guard v <= UInt64(UInt32.max) else { throw Self.malformed("\(what) \(v) exceeds 2³²−1") }
        return UInt32(v)
    }

    mutating func u16Varint(_ what: String) throws(ProtocolError) -> UInt16 {
        let v = try varint(what)
        guard v <= UInt64(UInt16.max) else { throw Self.malformed("\(what) \(v) exceeds 2¹⁶−1") }
        return UInt16(v)
    }

    /// An index (a position in a list): a varint up to ``maxIndex``.
    @inline(__always) mutating func index(_ what: @autoclosure () -> String) throws(ProtocolError) -> Int {
        let v = try varint(what())
        guard v <= UInt64(Self.maxIndex) else { throw Self.malformed("\(what()) \(v) exceeds 2³¹−1") }
        return Int(v)
    }

    /// A count of elements that each take at least `minBytes` bytes: checked against the
    /// bytes left first (a count the frame cannot hold is malformed), then against
    /// `limit` (a policy violation with `code`). Only then may the caller reserve.
    mutating func count(_ what: String, minBytes: Int = 1, limit: Int, code: ErrorCode) throws(ProtocolError) -> Int {
        let n = try index("\(what) count")
        guard n <= remaining / minBytes else {
            throw Self.malformed("\(what) count \(n) exceeds the \(remaining) bytes left")
        }
        guard n <= limit else {
            throw ProtocolError(code: code, message: "\(n) \(what) exceed the limit of \(limit)")
        }
        return n
    }

    mutating func sectionCount(_ what: String, minBytes: Int = 1) throws(ProtocolError) -> Int {
        let n = try count(what, minBytes: minBytes, limit: sectionsLeft, code: .tooManyElements)
        sectionsLeft -= n
        return n
    }

    /// Counts sections that are not preceded by a count of their own (a section insert
    /// of a changeset) against the per-message budget.
    mutating func chargeSections(_ n: Int) throws(ProtocolError) {
        guard n <= sectionsLeft else {
            throw ProtocolError(
                code: .tooManyElements, message: "more sections than the limit of \(limits.maxSectionsPerMessage)")
        }
        sectionsLeft -= n
    }

    mutating func rowCount(_ what: String, minBytes: Int = 1) throws(ProtocolError) -> Int {
        let n = try count(what, minBytes: minBytes, limit: rowsLeft, code: .tooManyElements)
        rowsLeft -= n
        return n
    }

    mutating func changeCount(_ what: String, minBytes: Int = 1) throws(ProtocolError) -> Int {
        let n = try count(what, minBytes: minBytes, limit: changesLeft, code: .tooManyElements)
        changesLeft -= n
        return n
    }

    /// A flag byte that must be exactly 0 or 1.
    mutating func bool(_ what: String) throws(ProtocolError) -> Bool {
        switch try u8(what) {
        case 0: return false
        case 1: return true
        case let v: throw Self.malformed("\(what) flag is \(v), not 0 or 1")
        }
    }

    /// Length-prefixed bytes, the length checked against `maxBytes` before copying.
    mutating func blob(_ what: String, maxBytes: Int, code: ErrorCode) throws(ProtocolError) -> [UInt8] {
        let n = try varint("\(what) length")
        guard n <= UInt64(remaining) else {
            throw Self.malformed("\(what) length \(n) exceeds the \(remaining) bytes left")
        }
        guard n <= UInt64(maxBytes) else {
            throw ProtocolError(code: code, message: "\(what) of \(n) bytes exceeds the limit of \(maxBytes)")
        }
        let bytes = [UInt8](UnsafeRawBufferPointer(rebasing: base[offset..<offset + Int(n)]))
        offset += Int(n)
        return bytes
    }

    /// Length-prefixed UTF-8; invalid UTF-8 is malformed (never repaired, so the bytes
    /// re-encode identically).
    mutating func string(_ what: String, maxBytes: Int, code: ErrorCode) throws(ProtocolError) -> String {
        let n = try varint("\(what) length")
        guard n <= UInt64(remaining) else {
            throw Self.malformed("\(what) length \(n) exceeds the \(remaining) bytes left")
        }
        guard n <= UInt64(maxBytes) else {
            throw ProtocolError(code: code, message: "\(what) of \(n) bytes exceeds the limit of \(maxBytes)")
        }
        let slice = UnsafeRawBufferPointer(rebasing: base[offset..<offset + Int(n)])
        guard let s = String(validating: slice.assumingMemoryBound(to: UInt8.self), as: UTF8.self) else {
            throw Self.malformed("\(what) is not valid UTF-8")
        }
        offset += Int(n)
        return s
    }

    mutating func optionalString(_ what: String, maxBytes: Int, code: ErrorCode) throws(ProtocolError) -> String? {
        try bool("\(what) presence") ? try string(what, maxBytes: maxBytes, code: code) : nil
    }

    mutating func optionalBlob(_ what: String, maxBytes: Int, code: ErrorCode) throws(ProtocolError) -> [UInt8]? {
        try bool("\(what) presence") ? try blob(what, maxBytes: maxBytes, code: code) : nil
    }

    mutating func listVersion(_ what: String) throws(ProtocolError) -> ListVersion {
        let epoch = try varint("\(what) epoch")
        let version = try varint("\(what) version")
        return ListVersion(epoch: epoch, version: version)
    }

    /// Fails unless every byte was read: trailing bytes mean sender and receiver
    /// disagree about the layout.
    func expectEnd(_ what: String) throws(ProtocolError) {
        guard remaining == 0 else { throw Self.malformed("\(remaining) trailing bytes after the \(what) body") }
    }
}
