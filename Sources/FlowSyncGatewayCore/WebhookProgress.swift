import FlowSyncCore
import Foundation

/// What one (hook, list) pair must remember across a crash (docs/GATEWAY.md, "Cursors"):
/// the last delivered position and, while a POST is out, the delivery itself.
///
/// Why the delivery, not only the cursor: the cursor moves only after the receiver's 2xx,
/// so a crash between that 2xx and the save used to resume from the older cursor, and the
/// daemon's resume answers with **one** catch-up Diff from there to its head. The receiver
/// then saw the delivered batch's changes again under a newer key (issue #31 asks that a
/// duplicate carry the same version). With the delivery written down before it is POSTed,
/// a restart POSTs that same body under the same key first, and resumes after it: a
/// duplicate is always the same delivery.
///
/// Cost: one durable write per delivery started, as before (a 2xx with more batches
/// waiting writes the new cursor and the next delivery together); a delivery that starts
/// from idle writes once more (the cursor after the previous 2xx, then the new delivery).
public struct WebhookProgress: Hashable, Sendable {
    /// The last delivered position; nil before the first delivery.
    public var cursor: ListVersion?
    /// The delivery POSTed or about to be, not yet answered 2xx.
    public var inFlight: WebhookBatch?

    public init(cursor: ListVersion?, inFlight: WebhookBatch? = nil) {
        self.cursor = cursor
        self.inFlight = inFlight
    }

    /// The journaled delivery, if it is still ahead of the cursor (a crash between a
    /// write of the cursor past it and the removal cannot happen — both are one write —
    /// but a hand-edited or older file might hold one behind).
    public var pending: WebhookBatch? {
        guard let batch = inFlight else { return nil }
        guard let cursor else { return batch }
        if batch.to.epoch == cursor.epoch && batch.to.version <= cursor.version { return nil }
        return batch
    }

    // MARK: The file format

    /// The bytes of a cursor file:
    ///
    /// ```
    /// EPOCH:VERSION            (or "none": nothing delivered yet)
    /// in-flight KIND FROM TO LENGTH     (only while a delivery is out; FROM "-" for a snapshot)
    /// BODY                     (LENGTH bytes: the JSON POSTed, byte for byte)
    /// ```
    ///
    /// A file of the first line alone is what the gateway wrote before the in-flight
    /// delivery was kept, and still reads.
    public func encoded() -> [UInt8] {
        var bytes = Array(((cursor.map(ListPosition.text) ?? "none") + "\n").utf8)
        if let batch = inFlight {
            let from = batch.from.map(ListPosition.text) ?? "-"
            let header =
                "in-flight \(batch.kind.rawValue) \(from) \(ListPosition.text(batch.to)) \(batch.body.count)\n"
            bytes += Array(header.utf8)
            bytes += batch.body
        }
        return bytes
    }

    /// Reads ``encoded()``'s bytes for `list`; throws on anything else, naming what is wrong.
    public init(decoding bytes: [UInt8], list: String) throws(WebhookProgressError) {
        func line(from start: Int) throws(WebhookProgressError) -> (text: String, next: Int) {
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw WebhookProgressError("a line without its end (a torn file?)")
            }
            return (String(decoding: bytes[start..<end], as: UTF8.self), end + 1)
        }
        func position(_ text: Substring) throws(WebhookProgressError) -> ListVersion {
            do {
                return try ListPosition.parse(String(text))
            } catch {
                throw WebhookProgressError("\"\(text.prefix(40))\" is not EPOCH:VERSION")
            }
        }
        let first = try line(from: 0)
        let cursorText = first.text.trimmingCharacters(in: [" ", "\r", "\t"])
        let cursor = cursorText == "none" ? nil : try position(Substring(cursorText))
        guard first.next < bytes.count else {
            self.init(cursor: cursor)
            return
        }
        let second = try line(from: first.next)
        let fields = second.text.split(separator: " ")
        guard fields.count == 5, fields[0] == "in-flight", let kind = WebhookBatch.Kind(rawValue: String(fields[1])),
            let length = Int(fields[4]), length >= 0
        else {
            throw WebhookProgressError("the second line is not \"in-flight KIND FROM TO LENGTH\"")
        }
        let from = fields[2] == "-" ? nil : try position(fields[2])
        guard (from == nil) == (kind == .snapshot) else {
            throw WebhookProgressError("a \(kind.rawValue) with from \(fields[2])")
        }
        let to = try position(fields[3])
        guard bytes.count - second.next == length else {
            throw WebhookProgressError("a body of \(bytes.count - second.next) bytes where \(length) were written")
        }
        self.init(
            cursor: cursor,
            inFlight: WebhookBatch(list: list, kind: kind, from: from, to: to, body: Array(bytes[second.next...])))
    }
}

/// A cursor file that does not read as ``WebhookProgress``.
public struct WebhookProgressError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
