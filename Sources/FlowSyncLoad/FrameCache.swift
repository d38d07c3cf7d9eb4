import FlowSyncCore
import FlowSyncProtocol

#if canImport(Glibc)
import Glibc
#endif

/// One decoded server frame, shared by every load client that received the same bytes.
public final class DecodedFrame {
    /// The message.
    public let message: Message
    /// Bytes on the wire (prefix included; compressed when the server compressed it).
    public let wireBytes: Int
    /// Bytes the frame would take uncompressed (prefix included).
    public let rawBytes: Int
    /// Row changes in a Diff's changeset (deletes, inserts, moves, updates over all
    /// stages); 0 for other messages.
    public let rowChanges: Int
    /// For a batch Diff: the intended send time (monotonic ns) of each mutation it
    /// carries that this process wrote, filled once by the load engine.
    public var intendedTimes: [UInt64]?

    init(message: Message, wireBytes: Int, rawBytes: Int) {
        self.message = message
        self.wireBytes = wireBytes
        self.rawBytes = rawBytes
        if case .diff(let diff) = message {
            rowChanges = diff.changeset.stages.reduce(0) {
                $0 + $1.rowDeletes.count + $1.rowInserts.count + $1.rowMoves.count + $1.rowUpdates.count
            }
        } else {
            rowChanges = 0
        }
    }
}

/// Decodes each distinct server frame once.
///
/// The daemon encodes and deflates a batch once and writes the same bytes to every
/// subscriber (docs/ARCHITECTURE.md); a load tester that inflated and decoded the frame
/// again for each of 1,000 subscribers would measure itself, not the daemon. Frames are
/// looked up by an XXH64 of their bytes and **compared byte for byte** before reuse, so a
/// subscriber that received different bytes gets its own decode: sharing never hides a
/// difference. Each subscriber still applies the decoded changeset to its own replica.
///
/// Loop-confined (one load loop thread).
public final class FrameCache {
    private struct Entry {
        let bytes: [UInt8]
        let frame: DecodedFrame
    }
    private var entries: [UInt64: Entry] = [:]
    private var order: [UInt64] = []
    private var orderStart = 0
    private let capacity: Int
    private var decoder = FrameDecoder(limits: .client)
    private let rawEncoder = FrameEncoder(configuration: .disabled)
    /// Decodes done (cache misses) and frames served from the cache.
    public private(set) var decodes = 0
    public private(set) var hits = 0

    /// A cache of at most `capacity` frames (oldest evicted first).
    public init(capacity: Int = 8_192) { self.capacity = capacity }

    /// The preset dictionary announced in the Welcome (needed for compressed frames).
    public var dictionary: CompressionDictionary? {
        get { decoder.dictionary }
        set { decoder.dictionary = newValue }
    }

    /// The decoded frame for `frame` (prefix included).
    /// - Throws: the ``ProtocolError`` the reference decoder finds.
    public func decode(_ frame: UnsafeRawBufferPointer) throws(ProtocolError) -> DecodedFrame {
        let key = XXH64.hash(frame)
        if let entry = entries[key], entry.bytes.count == frame.count,
            entry.bytes.withUnsafeBytes({ memcmp($0.baseAddress!, frame.baseAddress!, frame.count) == 0 })
        {
            hits += 1
            return entry.frame
        }
        decodes += 1
        if decoder.isPoisoned { decoder = FrameDecoder(limits: .client, dictionary: decoder.dictionary) }
        decoder.feed(frame)
        guard let message = try decoder.next() else {
            preconditionFailure("Internal inconsistency in FrameCache: a whole frame did not decode")
        }
        // Snapshots are large and each is usually read once per subscriber joining at that
        // version; Diffs are what fan out. Both are cached (same rule for all).
        let raw: Int
        switch message {
        case .diff, .snapshot: raw = decoder.lastFrameWasCompressed ? rawEncoder.encode(message).count : frame.count
        default: raw = frame.count
        }
        let decoded = DecodedFrame(message: message, wireBytes: frame.count, rawBytes: raw)
        insert(key, Entry(bytes: Array(frame), frame: decoded))
        return decoded
    }

    private func insert(_ key: UInt64, _ entry: Entry) {
        if entries.updateValue(entry, forKey: key) == nil { order.append(key) }
        while entries.count > capacity, orderStart < order.count {
            entries[order[orderStart]] = nil
            orderStart += 1
        }
        if orderStart > capacity {
            order.removeFirst(orderStart)
            orderStart = 0
        }
    }
}
