import CLibPQ
import FlowSyncLoop

#if canImport(Glibc)
import Glibc
#endif

/// One PostgreSQL connection driven by the libuv loop: libpq in non-blocking pipeline
/// mode, its socket under a ``LoopPoll``, no thread and no blocking call.
///
/// - Every statement is sent with its own sync point, so it is its own implicit
///   transaction and one failing statement aborts no other (``PipelineLedger``).
/// - Statements are pipelined: many can be in flight; results complete in order, each
///   through its completion, on the loop thread.
/// - Bytes are flushed when sent and, if the kernel pushes back, when the socket turns
///   writable (`PQflush` returns 1 until then).
/// - A lost connection fails every pending statement with
///   ``PostgresError/connection(_:)``: the outcome of each is unknown (it may have
///   committed), and the caller resolves it by reading the state back.
/// - Closing: the poll handle is closed first and `PQfinish` runs in its close callback,
///   so libpq never closes a descriptor libuv is still watching.
///
/// Loop-confined: create, use and close it on its loop's thread.
public final class PostgresConnection {
    public typealias Completion = (Result<PostgresResult, PostgresError>) -> Void

    /// The loop it runs on.
    public let loop: EventLoop
    private var conn: OpaquePointer?
    private var poll: LoopPoll?
    private var ledger = PipelineLedger<Completion>()
    private var wantsWrite = false
    /// True once the connection failed or was closed (libpq is finished then).
    var isClosed: Bool { conn == nil }
    /// Called once when the connection is lost (not after ``close()``).
    public var onLost: ((PostgresError) -> Void)?
    /// Called on the loop thread for each notification of a channel this session
    /// `LISTEN`s to (channel, payload), in the order PostgreSQL sent them: after the
    /// results read in the same wake-up, so a statement's completion runs before the
    /// notifications of transactions that committed after it.
    public var onNotification: ((String, String) -> Void)?

    private init(loop: EventLoop, conn: OpaquePointer) {
        self.loop = loop
        self.conn = conn
    }

    /// A connection released without ``close()`` still closes its poll and libpq
    /// (released on the loop thread, as everything about it).
    deinit {
        closeHandles()
    }

    /// Opens a connection (`conninfo` as libpq takes it, e.g.
    /// `host=127.0.0.1 port=5432 dbname=flowsync user=flowsync`); `completion` runs on
    /// the loop thread. Call on the loop thread.
    public static func connect(
        loop: EventLoop, conninfo: String, _ completion: @escaping (Result<PostgresConnection, PostgresError>) -> Void
    ) {
        guard let conn = PQconnectStart(conninfo) else {
            completion(.failure(.connection("out of memory")))
            return
        }
        if PQstatus(conn) == CONNECTION_BAD {
            let message = Self.message(conn)
            PQfinish(conn)
            completion(.failure(.connection(message)))
            return
        }
        let connection = PostgresConnection(loop: loop, conn: conn)
        // libpq: start as if PQconnectPoll had returned PGRES_POLLING_WRITING.
        connection.continueConnecting(PGRES_POLLING_WRITING, completion)
    }

    /// Drives `PQconnectPoll`: waits for what it asks for, on the socket it names (which
    /// may change between calls: a new address, or SSL negotiation).
    private func continueConnecting(
        _ state: PostgresPollingStatusType, pollErrors: Int = 0,
        _ completion: @escaping (Result<PostgresConnection, PostgresError>) -> Void
    ) {
        guard let conn else { return }
        switch state {
        case PGRES_POLLING_OK:
            guard PQsetnonblocking(conn, 1) == 0, PQenterPipelineMode(conn) == 1 else {
                fail(.connection("cannot enter non-blocking pipeline mode: \(Self.message(conn))"), notify: false)
                completion(.failure(.connection("cannot enter pipeline mode")))
                return
            }
            watch(readable: true, writable: false)
            completion(.success(self))
        case PGRES_POLLING_FAILED:
            let message = Self.message(conn)
            closeHandles()
            completion(.failure(.connection(message)))
        default:
            let fd = PQsocket(conn)
            guard fd >= 0 else {
                closeHandles()
                completion(.failure(.connection("no socket")))
                return
            }
            // A new poll handle at every step: with several hosts (`host=a,b`, a
            // failover pair) libpq closes a refused socket and opens the next host's,
            // which can get the same descriptor number — a handle kept because the
            // number matched would watch a registration the kernel already dropped.
            poll?.close()
            poll = nil
            do { poll = try LoopPoll(loop: loop, socket: fd) } catch {
                closeHandles()
                completion(.failure(.connection("\(error)")))
                return
            }
            let events: LoopPoll.Events = state == PGRES_POLLING_READING ? .readable : .writable
            // Strong: while connecting nobody else holds the connection; the cycle
            // (poll → callback → self → poll) ends when connected (`watch` replaces
            // the callback) or failed (`closeHandles` closes the poll).
            poll?.start(events) { [self] result in
                guard let conn = self.conn else { return }
                if case .failure(let error) = result {
                    // libpq may have closed the socket itself (a refused connection):
                    // it then fails, with a better message than the poll's EBADF, or
                    // moves on to the next host. A poll that keeps failing while libpq
                    // does not is given up after a few tries.
                    guard pollErrors < 8 else {
                        self.closeHandles()
                        completion(.failure(.connection("\(error)")))
                        return
                    }
                    self.continueConnecting(PQconnectPoll(conn), pollErrors: pollErrors + 1, completion)
                    return
                }
                self.continueConnecting(PQconnectPoll(conn), completion)
            }
        }
    }

    /// Sends `sql` with `parameters` ($1, $2, …) and its sync point; `completion` runs on
    /// the loop thread with the result, in the order statements were sent.
    public func send(_ sql: String, _ parameters: [PostgresValue] = [], _ completion: @escaping Completion) {
        guard let conn else {
            completion(.failure(.closed))
            return
        }
        let sent = Self.withParameters(parameters) { values, lengths, formats in
            PQsendQueryParams(conn, sql, Int32(parameters.count), nil, values, lengths, formats, 0)
        }
        guard sent == 1, PQpipelineSync(conn) == 1 else {
            completion(.failure(.connection(Self.message(conn))))
            fail(.connection(Self.message(conn)), notify: true)
            return
        }
        ledger.sent(completion)
        flush()
    }

    /// Statements sent and not yet complete.
    public var pendingCount: Int { ledger.count }

    /// Closes the connection; pending statements fail with ``PostgresError/closed``.
    public func close() {
        fail(.closed, notify: false)
    }

    // MARK: I/O

    private func flush() {
        guard let conn else { return }
        let result = PQflush(conn)
        if result < 0 {
            fail(.connection(Self.message(conn)), notify: true)
        } else if (result == 1) != wantsWrite {
            watch(readable: true, writable: result == 1)
        }
    }

    private func watch(readable: Bool, writable: Bool) {
        wantsWrite = writable
        var events: LoopPoll.Events = []
        if readable { events.insert(.readable) }
        if writable { events.insert(.writable) }
        poll?.start(events) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                self.socketFailed(error)
            case .success(let ready):
                if ready.contains(.writable) { self.flush() }
                if ready.contains(.readable) { self.readResults() }
            }
        }
    }

    /// The poll reported an error on the socket. libuv says `UV_EBADF` for any
    /// `EPOLLERR` — a reset connection (the server stopped, a failover), not a closed
    /// descriptor (issue #33: the nodes logged "uv_poll: EBADF" at every failover). The
    /// reason is libpq's to tell: the watcher is stopped first (libuv already did; the
    /// close makes it final), then libpq reads the socket once more — which sets its
    /// message ("server closed the connection unexpectedly", the server's FATAL) and
    /// may close the descriptor itself, now that nothing watches it — and `PQfinish`
    /// runs last, in the poll's close callback.
    private func socketFailed(_ error: UVError) {
        guard let conn else { return }
        let poll = self.poll
        self.poll = nil
        // The close callback runs on a later turn: libpq's handle outlives the read below.
        poll?.onClose = { PQfinish(conn) }
        poll?.close()
        // Bytes that arrived before the reset (a server's last notice) are read first;
        // the read after them meets the error or the end of the stream, which libpq
        // turns into its message. Bounded: a socket that keeps yielding data is not
        // drained here.
        for _ in 0..<4 {
            if PQconsumeInput(conn) == 0 { break }
        }
        let reason = Self.message(conn)
        self.conn = nil
        if poll == nil { PQfinish(conn) }
        let pending = ledger.drain()
        // `error` is libuv's name for EPOLLERR, not the cause: it is not repeated.
        _ = error
        let failure = PostgresError.connection(reason.isEmpty ? "the server reset the connection" : reason)
        for completion in pending { completion(.failure(failure)) }
        if let onLost {
            self.onLost = nil
            onLost(failure)
        }
    }

    /// Reads what arrived and completes every statement whose results are all in.
    private func readResults() {
        guard let conn else { return }
        guard PQconsumeInput(conn) == 1 else {
            fail(.connection(Self.message(conn)), notify: true)
            return
        }
        // PQgetResult only while it would not block (PQisBusy) and a result is owed:
        // with nothing pending, pipeline mode answers NULL, which is not an end.
        while self.conn != nil, ledger.expectsResults, PQisBusy(conn) == 0 {
            let event: PipelineLedger<Completion>.Event
            if let result = PQgetResult(conn) {
                event = Self.event(result)
                PQclear(result)
            } else {
                event = .endOfStatement
            }
            do {
                if case .complete(let completion, let outcome) = try ledger.receive(event) {
                    completion(outcome)
                }
            } catch {
                fail(error, notify: true)
                return
            }
        }
        if self.conn != nil, PQstatus(conn) == CONNECTION_BAD {
            fail(.connection(Self.message(conn)), notify: true)
            return
        }
        deliverNotifications()
    }

    /// Hands every notification libpq has parsed to ``onNotification``. `PQnotifies`
    /// parses what `PQconsumeInput` read, so this also finds notifications that arrived
    /// while no statement was pending.
    private func deliverNotifications() {
        while let conn = self.conn, let notify = PQnotifies(conn) {
            let channel = String(cString: notify.pointee.relname)
            let payload = String(cString: notify.pointee.extra)
            PQfreemem(notify)
            onNotification?(channel, payload)
        }
    }

    private static func event(_ result: OpaquePointer) -> PipelineLedger<Completion>.Event {
        switch PQresultStatus(result) {
        case PGRES_PIPELINE_SYNC:
            return .sync
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            let columns = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
            var rows: [[String?]] = []
            rows.reserveCapacity(Int(PQntuples(result)))
            for r in 0..<PQntuples(result) {
                rows.append(
                    (0..<PQnfields(result)).map { c in
                        PQgetisnull(result, r, c) == 1 ? nil : String(cString: PQgetvalue(result, r, c))
                    })
            }
            let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
            return .result(PostgresResult(columns: columns, rows: rows, affectedRows: affected))
        case PGRES_PIPELINE_ABORTED:
            return .result(
                PostgresResult(error: .server(sqlState: "", message: "aborted by an earlier error in the pipeline")))
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines()
            return .result(PostgresResult(error: .server(sqlState: state, message: message)))
        }
    }

    /// Fails every pending statement and tears the connection down.
    private func fail(_ error: PostgresError, notify: Bool) {
        guard !isClosed else { return }
        let pending = ledger.drain()
        closeHandles()
        for completion in pending { completion(.failure(error)) }
        if notify, let onLost {
            self.onLost = nil
            onLost(error)
        }
    }

    /// Closes the poll, then finishes libpq in its close callback (see the type's notes).
    private func closeHandles() {
        guard let conn else { return }
        self.conn = nil
        if let poll {
            self.poll = nil
            poll.onClose = { PQfinish(conn) }
            poll.close()
        } else {
            PQfinish(conn)
        }
    }

    /// libpq's last error on one line (its messages wrap with newline and tab).
    private static func message(_ conn: OpaquePointer) -> String {
        String(cString: PQerrorMessage(conn)).trimmingTrailingNewlines()
            .split(whereSeparator: { $0 == "\n" || $0 == "\t" }).joined(separator: " ")
    }

    /// Calls `body` with libpq's parameter arrays: text values NUL-terminated, bytes as
    /// binary with their length.
    private static func withParameters<R>(
        _ parameters: [PostgresValue],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        var storage: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        defer { for pointer in storage { pointer?.deallocate() } }
        for parameter in parameters {
            switch parameter {
            case .null:
                storage.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                let utf8 = Array(text.utf8CString)
                let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
                pointer.initialize(from: utf8, count: utf8.count)
                storage.append(pointer)
                lengths.append(0)
                formats.append(0)
            case .bytes(let bytes):
                let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress {
                        UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: bytes.count)
                    }
                }
                storage.append(pointer)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        let values = storage.map { UnsafePointer($0) }
        return values.withUnsafeBufferPointer { v in
            lengths.withUnsafeBufferPointer { l in
                formats.withUnsafeBufferPointer { f in body(v.baseAddress, l.baseAddress, f.baseAddress) }
            }
        }
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r" || last == " " { s = s.dropLast() }
        return String(s)
    }
}
