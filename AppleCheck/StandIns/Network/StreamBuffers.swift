import Foundation

/// Received bytes and the receives waiting for them, matched by Apple's documented rules
/// for `receive(minimumIncompleteLength:maximumLength:completion:)`. Pure: no socket.
///
/// 1. Receives complete in the order they were issued, each exactly once.
/// 2. A receive completes when at least `minimumIncompleteLength` bytes are buffered (at
///    least 1: a zero minimum is treated as 1, the stand-in never completes with no data
///    and no end), with at most `maximumLength` of them.
/// 3. After the peer's end of stream (EOF), a receive completes with whatever is buffered
///    (up to `maximumLength`), even below its minimum; `isComplete` is true on the
///    completion that hands over the last byte, or with no data once all were handed over.
struct ReceiveBuffer {
    struct Request {
        let minimum: Int
        let maximum: Int
        let ticket: Int
    }
    struct Completion: Equatable {
        let ticket: Int
        let data: Data?
        let isComplete: Bool
    }

    private var bytes: [UInt8] = []
    private var start = 0
    private(set) var endOfStream = false
    private var requests: [Request] = []
    private var requestStart = 0

    var buffered: Int { bytes.count - start }
    var hasPendingRequests: Bool { requestStart < requests.count }

    mutating func enqueue(_ request: Request) { requests.append(request) }

    mutating func append(_ data: UnsafeRawBufferPointer) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        }
        bytes.append(contentsOf: data)
    }

    mutating func markEndOfStream() { endOfStream = true }

    /// The next receive that can complete now, if any.
    mutating func nextCompletion() -> Completion? {
        guard requestStart < requests.count else { return nil }
        let request = requests[requestStart]
        let minimum = max(request.minimum, 1)
        let available = buffered
        guard available >= minimum || endOfStream else { return nil }
        requestStart += 1
        if requestStart == requests.count {
            requests.removeAll(keepingCapacity: true)
            requestStart = 0
        }
        let count = min(available, max(request.maximum, 1))
        var data: Data?
        if count > 0 {
            data = Data(bytes[start..<(start + count)])
            start += count
            if start == bytes.count {
                bytes.removeAll(keepingCapacity: true)
                start = 0
            }
        }
        return Completion(ticket: request.ticket, data: data, isComplete: endOfStream && buffered == 0)
    }

    /// Every waiting receive, removed (to fail them).
    mutating func drainRequests() -> [Request] {
        defer {
            requests.removeAll()
            requestStart = 0
        }
        return Array(requests[requestStart...])
    }
}

/// Bytes waiting to be written, in call order, each send's completion due when its last
/// byte is handed to the kernel (Apple: `.contentProcessed` is "invoked when the sent data
/// is processed by the stack"). Pure: the shell writes, this counts.
struct SendQueue {
    struct Entry {
        var bytes: [UInt8]
        var written = 0
        let ticket: Int
        /// Shut down the write side once these bytes are out (a final message, complete).
        let closesWriteSide: Bool
    }

    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    mutating func enqueue(_ entry: Entry) { entries.append(entry) }

    /// The bytes still to write of the first entry.
    var head: ArraySlice<UInt8>? {
        guard let first = entries.first else { return nil }
        return first.bytes[first.written...]
    }

    /// `count` bytes of the head were written. Returns the entry when it is now complete.
    mutating func wrote(_ count: Int) -> Entry? {
        precondition(!entries.isEmpty, "Internal inconsistency in SendQueue: wrote with no entry")
        entries[0].written += count
        guard entries[0].written == entries[0].bytes.count else { return nil }
        return entries.removeFirst()
    }

    /// Every waiting send, removed (to fail them).
    mutating func drain() -> [Entry] {
        defer { entries.removeAll() }
        return entries
    }
}
