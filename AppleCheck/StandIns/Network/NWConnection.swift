import Dispatch
import Foundation
import Security

#if canImport(Glibc)
import Glibc
#endif

/// /documentation/Network/NWConnection — `final class NWConnection`, iOS 12.0+, macOS 10.14+
///
/// The stand-in runs a real TCP connection: a non-blocking socket whose Dispatch sources
/// run on the queue given to ``start(queue:)``; its lifecycle is NWConnectionStateMachine,
/// the receive/send bookkeeping ReceiveBuffer and SendQueue (StreamBuffers.swift).
///
/// Threading, as Apple documents it: every handler and completion runs on the connection's
/// queue, in order. The public methods may be called from any thread; they hand their work
/// to that queue (or, before start, keep it until start). Everything below `Core` is
/// touched only on the queue, except what `Core.lock` guards.
///
/// Lifetime: once started, the connection keeps itself alive (its sources hold it) until it
/// is cancelled — as Apple's does; a failed or waiting connection must still be cancelled.
// STAND-IN: not declared Sendable — the page's conformance list was not retrieved. Code
// that captures an NWConnection in a @Sendable closure compiles against it only under
// `@preconcurrency import Network`, as the project's does (the stricter choice).
public final class NWConnection {
    /// /documentation/Network/NWConnection/parameters — `final let parameters: NWParameters`
    public final let parameters: NWParameters
    let endpoint: NWEndpoint
    private let core: Core

    /// /documentation/Network/NWConnection/init(host:port:using:) —
    /// `convenience init(host: NWEndpoint.Host, port: NWEndpoint.Port, using: NWParameters)`
    public convenience init(host: NWEndpoint.Host, port: NWEndpoint.Port, using: NWParameters) {
        self.init(to: .hostPort(host: host, port: port), using: using)
    }

    /// /documentation/Network/NWConnection/init(to:using:) — `init(to: NWEndpoint, using: NWParameters)`
    public init(to: NWEndpoint, using: NWParameters) {
        endpoint = to
        parameters = using
        core = Core(endpoint: to, usesTLS: using.tls != nil)
        NetworkStandIn.connectionCreated(self)
    }

    /// /documentation/Network/NWConnection/stateUpdateHandler —
    /// `@preconcurrency final var stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)? { get set }`
    @preconcurrency public final var stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)? {
        get { core.stateUpdateHandler }
        set { core.stateUpdateHandler = newValue }
    }

    /// /documentation/Network/NWConnection/state-swift.property — `final var state: NWConnection.State { get }`
    public final var state: NWConnection.State { core.currentState }

    /// /documentation/Network/NWConnection/start(queue:) — `final func start(queue: DispatchQueue)`
    public final func start(queue: DispatchQueue) { core.start(queue: queue) }

    /// /documentation/Network/NWConnection/cancel() — `final func cancel()`
    public final func cancel() { core.cancel() }

    /// /documentation/Network/NWConnection/forceCancel() — `final func forceCancel()`
    // STAND-IN: same as cancel(); the stand-in's cancel already drops unsent bytes.
    public final func forceCancel() { core.cancel() }

    /// /documentation/Network/NWConnection/send(content:contentContext:isComplete:completion:)-5ecuz —
    /// `@preconcurrency final func send(content: Data?, contentContext: NWConnection.ContentContext = .defaultMessage, isComplete: Bool = true, completion: NWConnection.SendCompletion)`
    ///
    /// Sends are written in call order; `.contentProcessed` runs once all of `content` is in
    /// the kernel's send buffer (or with the error that stopped it). `.finalMessage` with
    /// `isComplete` shuts down the write side after the bytes (TCP FIN).
    @preconcurrency public final func send(
        content: Data?, contentContext: NWConnection.ContentContext = .defaultMessage,
        isComplete: Bool = true, completion: NWConnection.SendCompletion
    ) {
        core.send(
            bytes: content.map { [UInt8]($0) } ?? [], closesWriteSide: isComplete && contentContext.isFinal,
            completion: completion)
    }

    /// /documentation/Network/NWConnection/receive(minimumIncompleteLength:maximumLength:completion:) —
    /// `@preconcurrency final func receive(minimumIncompleteLength: Int, maximumLength: Int, completion: @escaping @Sendable (Data?, NWConnection.ContentContext?, Bool, NWError?) -> Void)`
    ///
    /// Completes once (ReceiveBuffer's rules): with data when at least the minimum is in;
    /// with `isComplete` at the peer's end of stream; with an error when the connection
    /// fails or is cancelled first.
    @preconcurrency public final func receive(
        minimumIncompleteLength: Int, maximumLength: Int,
        completion: @escaping @Sendable (Data?, NWConnection.ContentContext?, Bool, NWError?) -> Void
    ) {
        core.receive(minimum: minimumIncompleteLength, maximum: maximumLength, completion: completion)
    }

    /// /documentation/Network/NWConnection/State-swift.enum — `enum State`
    // STAND-IN: conformances not declared (the page's list was not retrieved).
    public enum State {
        /// /documentation/Network/NWConnection/State-swift.enum/setup — `case setup`
        case setup
        /// /documentation/Network/NWConnection/State-swift.enum/waiting(_:) — `case waiting(NWError)`
        case waiting(NWError)
        /// /documentation/Network/NWConnection/State-swift.enum/preparing — `case preparing`
        case preparing
        /// /documentation/Network/NWConnection/State-swift.enum/ready — `case ready`
        case ready
        /// /documentation/Network/NWConnection/State-swift.enum/failed(_:) — `case failed(NWError)`
        case failed(NWError)
        /// /documentation/Network/NWConnection/State-swift.enum/cancelled — `case cancelled`
        case cancelled
    }

    /// /documentation/Network/NWConnection/SendCompletion — `enum SendCompletion`
    public enum SendCompletion {
        /// /documentation/Network/NWConnection/SendCompletion/contentProcessed(_:) —
        /// `@preconcurrency case contentProcessed(@Sendable (NWError?) -> Void)`
        // STAND-IN: without `@preconcurrency`, which an enum case cannot carry in source.
        case contentProcessed(@Sendable (NWError?) -> Void)
        /// /documentation/Network/NWConnection/SendCompletion/idempotent
        case idempotent
    }

    /// /documentation/Network/NWConnection/ContentContext — `class ContentContext`
    // STAND-IN: no metadata, expiration, priority or antecedent; its initializer is internal.
    public class ContentContext {
        let identifier: String
        let isFinal: Bool
        init(identifier: String, isFinal: Bool) {
            self.identifier = identifier
            self.isFinal = isFinal
        }

        /// /documentation/Network/NWConnection/ContentContext/defaultMessage —
        /// `static let defaultMessage: NWConnection.ContentContext`
        // STAND-IN: `nonisolated(unsafe)` — the stand-in is built in Swift 6 mode and the class
        // declares no Sendable conformance; the contexts are immutable.
        nonisolated(unsafe) public static let defaultMessage = ContentContext(
            identifier: "defaultMessage", isFinal: false)

        /// /documentation/Network/NWConnection/ContentContext/finalMessage
        // STAND-IN: declaration assumed of the same form as `defaultMessage` (linked from the
        // ContentContext page: "the final message in a connection").
        nonisolated(unsafe) public static let finalMessage = ContentContext(identifier: "finalMessage", isFinal: true)

        /// The context the stand-in hands to receive completions (a byte stream). Not Apple API.
        nonisolated(unsafe) static let receivedStream = ContentContext(identifier: "stream", isFinal: false)
    }
}

// MARK: - The I/O shell

extension NWConnection {
    /// Everything of one connection. Queue-confined after start, except the lock's fields.
    final class Core: @unchecked Sendable {
        typealias ReceiveCompletion = @Sendable (Data?, NWConnection.ContentContext?, Bool, NWError?) -> Void

        private let endpoint: NWEndpoint
        private let usesTLS: Bool

        // Guarded by `lock`.
        private let lock = NSLock()
        private var _stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)?
        private var _currentState: NWConnection.State = .setup
        private var queue: DispatchQueue?
        private var heldUntilStart: [@Sendable () -> Void] = []
        private var cancelledBeforeStart = false

        // On the queue only.
        private var machine = NWConnectionStateMachine()
        private var receives = ReceiveBuffer()
        private var receiveCompletions: [Int: ReceiveCompletion] = [:]
        private var sends = SendQueue()
        private var sendCompletions: [Int: NWConnection.SendCompletion] = [:]
        private var nextTicket = 0
        private var socket: TCPSocket?
        private var connector: Connector?

        init(endpoint: NWEndpoint, usesTLS: Bool) {
            self.endpoint = endpoint
            self.usesTLS = usesTLS
        }

        var stateUpdateHandler: (@Sendable (NWConnection.State) -> Void)? {
            get { lock.withLock { _stateUpdateHandler } }
            set { lock.withLock { _stateUpdateHandler = newValue } }
        }

        var currentState: NWConnection.State { lock.withLock { _currentState } }

        // MARK: Public entry points (any thread)

        func start(queue: DispatchQueue) {
            lock.withLock {
                guard self.queue == nil, !cancelledBeforeStart else { return }
                self.queue = queue
                let held = heldUntilStart
                heldUntilStart = []
                // Enqueued under the lock: nothing submitted after this can run before it.
                queue.async {
                    self.perform(self.machine.start(usesTLS: self.usesTLS))
                    for work in held { work() }
                }
            }
        }

        func cancel() {
            let handled: Bool = lock.withLock {
                if queue == nil {
                    // Never started: Apple has no queue to report on, so nothing is reported
                    // and queued operations are dropped with it.
                    cancelledBeforeStart = true
                    _currentState = .cancelled
                    heldUntilStart = []
                    return true
                }
                return false
            }
            if !handled { submit { self.perform(self.machine.cancel()) } }
        }

        func send(bytes: [UInt8], closesWriteSide: Bool, completion: NWConnection.SendCompletion) {
            let box = UncheckedBox(completion)
            submit {
                let ticket = self.takeTicket()
                if let error = self.machine.terminalError {
                    self.complete(send: box.value, error)
                    return
                }
                self.sendCompletions[ticket] = box.value
                self.sends.enqueue(.init(bytes: bytes, ticket: ticket, closesWriteSide: closesWriteSide))
                if self.machine.isReady { self.flush() }
            }
        }

        func receive(minimum: Int, maximum: Int, completion: @escaping ReceiveCompletion) {
            submit {
                if let error = self.machine.terminalError {
                    completion(nil, nil, false, error)
                    return
                }
                let ticket = self.takeTicket()
                self.receiveCompletions[ticket] = completion
                self.receives.enqueue(.init(minimum: minimum, maximum: maximum, ticket: ticket))
                if self.machine.isReady { self.serveReceives() }
            }
        }

        /// Runs `work` on the queue, or keeps it until start.
        private func submit(_ work: @escaping @Sendable () -> Void) {
            lock.withLock {
                if cancelledBeforeStart { return }
                if let queue { queue.async(execute: work) } else { heldUntilStart.append(work) }
            }
        }

        private func takeTicket() -> Int {
            nextTicket += 1
            return nextTicket
        }

        // MARK: On the queue

        private func perform(_ actions: [NWConnectionStateMachine.Action]) {
            for action in actions {
                switch action {
                case .report(let state):
                    let handler = lock.withLock { () -> (@Sendable (NWConnection.State) -> Void)? in
                        _currentState = state
                        return _stateUpdateHandler
                    }
                    handler?(state)
                case .connect:
                    startConnecting()
                case .startIO:
                    serveReceives()
                    flush()
                case .closeSocket:
                    connector?.abandon()
                    connector = nil
                    socket?.close()
                    socket = nil
                case .failPendingOperations(let error):
                    for request in receives.drainRequests() {
                        receiveCompletions.removeValue(forKey: request.ticket)?(nil, nil, false, error)
                    }
                    for entry in sends.drain() {
                        if let completion = sendCompletions.removeValue(forKey: entry.ticket) {
                            complete(send: completion, error)
                        }
                    }
                }
            }
        }

        private func complete(send completion: NWConnection.SendCompletion, _ error: NWError?) {
            if case .contentProcessed(let body) = completion { body(error) }
        }

        private func startConnecting() {
            guard case .hostPort(let host, let port) = endpoint, let queue = lock.withLock({ self.queue }) else {
                return
            }
            let connector = Connector(host: host.text, port: port.rawValue, queue: queue) { [self] result in
                self.connector = nil
                switch result {
                case .success(let socket):
                    self.socket = socket
                    socket.onReadable = { [unowned self] in self.readable() }
                    socket.onWritable = { [unowned self] in self.flush() }
                    self.perform(self.machine.connected())
                case .failure(let error):
                    self.perform(self.machine.connectFailed(error))
                }
            }
            self.connector = connector
            connector.begin()
        }

        /// Completes every receive the buffer can satisfy; keeps the read source armed until
        /// end of stream, within the read-ahead limit (TCPSocket rule 1).
        private func serveReceives() {
            while let completion = receives.nextCompletion() {
                receiveCompletions.removeValue(forKey: completion.ticket)?(
                    completion.data, .receivedStream, completion.isComplete, nil)
            }
            let wanted = !receives.endOfStream && receives.buffered < TCPSocket.readAheadLimit
            if socket?.wantsRead(wanted) == true {
                readable()  // try, then wait
            }
        }

        private func readable() {
            guard let socket, machine.isReady else { return }
            switch socket.readAvailable(into: &receives) {
            case .ok: break
            case .failed(let code): perform(machine.ioFailed(.posix(POSIXErrorCode(rawValue: code) ?? .EIO)))
            }
            if machine.isReady { serveReceives() }
        }

        /// Writes what the kernel takes, in order; arms the write source only while bytes remain.
        private func flush() {
            guard let socket, machine.isReady else { return }
            while let head = sends.head {
                let result = head.isEmpty ? .wrote(0) : socket.write(head)
                switch result {
                case .wrote(let count):
                    if let done = sends.wrote(count) {
                        if done.closesWriteSide { socket.shutdownWriteSide() }
                        if let completion = sendCompletions.removeValue(forKey: done.ticket) {
                            complete(send: completion, nil)
                        }
                    }
                case .wouldBlock:
                    socket.wantsWrite(true)
                    return
                case .failed(let code):
                    perform(machine.ioFailed(.posix(POSIXErrorCode(rawValue: code) ?? .EIO)))
                    return
                }
            }
            socket.wantsWrite(false)
        }
    }
}

/// A value that crosses to the connection's queue unchanged (completions are called there
/// only). Not Apple API.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
