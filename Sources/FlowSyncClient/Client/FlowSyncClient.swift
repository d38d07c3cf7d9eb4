import Dispatch
import FlowSyncCore
import FlowSyncProtocol
import Foundation
import Logging

/// A connection to a FlowSync server holding live replicas of its lists.
///
/// ```swift
/// let client = try FlowSyncClient(host: "sync.example.com", port: 7443)   // TLS: not loopback
/// let contacts = client.director("contacts")
/// try await contacts.waitUntilLoaded()
/// try contacts.add(models: [Contact(id: "42", name: "Ada")])   // into the last section
/// contacts.observe { change in
///     MainActor.assumeIsolated { applier.apply(change) }   // FlowSyncUI's ListUpdateApplier
/// }
/// ```
///
/// The client connects at once and keeps reconnecting (with backoff and jitter) until
/// ``close()``. Every list it was asked for is resubscribed from the replica's position
/// after a reconnect, and the write in flight is resent with its `(clientID, seq)`, so
/// the server applies it once.
///
/// Thread-safe: call it from any thread. Changes are delivered on the queue chosen in
/// ``Configuration/callbackQueue`` (the main queue by default, for UI code).
public final class FlowSyncClient: Sendable {
    /// Everything that can be tuned; the defaults suit an app.
    public struct Configuration: Sendable {
        /// The servers this client may connect to, at least one: the nodes of a cluster
        /// (docs/CLUSTER.md, "Several endpoints"), or one daemon. The client is connected
        /// to one at a time; a failed connect, a lost connection, or a node that says it
        /// cannot serve a list moves it to the next, round robin, with the
        /// ``reconnect`` backoff once per round of all of them (docs/SDK.md, "Several
        /// endpoints"). After a move every list resumes from its replica's position and
        /// digest, and pending writes are resent with their `seq`, as after any reconnect.
        /// TLS (``tls``) is decided per endpoint's host. Setting it to an empty list traps.
        public var endpoints: [Endpoint] {
            didSet { precondition(!endpoints.isEmpty, "FlowSyncClient.Configuration.endpoints must not be empty") }
        }
        /// Which endpoint is tried first. Default ``EndpointOrder/randomStart`` (spreads
        /// the apps over the nodes); irrelevant with one endpoint.
        public var endpointOrder: EndpointOrder
        /// The first endpoint's host name or address (the only one's, without a cluster).
        /// Setting it changes the first endpoint.
        public var host: String {
            get { endpoints[0].host }
            set { endpoints[0].host = newValue }
        }
        /// The first endpoint's port (the only one's, without a cluster). Setting it
        /// changes the first endpoint.
        public var port: Int {
            get { endpoints[0].port }
            set { endpoints[0].port = newValue }
        }
        /// A bearer token (a JWT) sent in the Hello; see ``tokenProvider`` for tokens
        /// that expire.
        public var token: String?
        /// Called before every connection attempt (on the client's own thread, never under
        /// its lock) for the token to send; when set, it replaces ``token``. With a
        /// provider, a server's "refresh token" close (auth-required, invalid-token,
        /// token-expired: 2000–2002) makes the client fetch a new token and reconnect
        /// instead of stopping. Keep it quick: cache the token and refresh it ahead of `exp`.
        public var tokenProvider: (@Sendable () -> String?)?
        /// Consecutive "refresh token" refusals (without a Welcome in between) after which
        /// the client stops with ``FlowSyncError/connectionRefused(code:message:)``. Default 3.
        public var maxTokenRefreshes: Int
        /// With a ``tokenProvider``: refresh the token of a live connection in-band (a
        /// RefreshToken message) when its `exp` is within ``tokenRefreshMarginSeconds``,
        /// so the server never has to close it. Default true. When false, or when the
        /// token's `exp` cannot be read, the client refreshes by reconnecting after the
        /// server's token-expired close.
        public var refreshesTokenInBand: Bool
        /// How long before `exp` the in-band refresh happens, seconds. Default 30.
        public var tokenRefreshMarginSeconds: Double
        /// The writer identity. Stable across reconnects; by default a new random one
        /// per client, which is always safe (see ``firstSeq``).
        public var clientID: String
        /// Free-form, for the server's logs.
        public var clientName: String
        /// When and how often to reconnect.
        public var reconnect: ReconnectPolicy
        /// Ping after this long without a frame from the server, and reconnect after
        /// twice as long (a dead network path sends no FIN). 0 disables.
        public var pingIntervalMilliseconds: UInt64
        /// Give up a connection attempt that is not ready after this long.
        public var handshakeTimeoutMilliseconds: UInt64
        /// The first write's `seq`. It must be above every `seq` this `clientID` used
        /// before (the server remembers committed pairs), so the default derives it from
        /// the clock in microseconds: a restarted app with a fixed `clientID` stays safe.
        public var firstSeq: UInt64
        /// Where observers' closures run.
        public var callbackQueue: DispatchQueue
        /// The client's logger.
        public var logger: Logger
        /// Seed for the reconnect jitter (tests pin it).
        public var randomSeed: UInt64
        /// When the default transport uses TLS and which certificates it accepts. Default
        /// ``TLSPolicy/automatic``: TLS for every host but loopback. On Linux the default
        /// transport has no TLS, so the client refuses a non-loopback host under this
        /// default (connect through a local TLS tunnel, docs/SDK.md, "Transports and TLS").
        /// A transport passed to ``FlowSyncClient/init(configuration:transport:)`` brings
        /// its own TLS and ignores this.
        public var tls: TLSPolicy
        /// Keep lists and pending writes on disk between launches (docs/SDK.md,
        /// "Offline"). Default `nil`: everything stays in memory. With it, ``clientID``
        /// is the one stored in the directory (this value is stored on first use).
        public var persistence: PersistenceOptions?

        /// Creates a configuration for one server.
        public init(
            host: String = "127.0.0.1", port: Int = 7400, token: String? = nil,
            clientID: String = "swift-" + UUID().uuidString.lowercased(),
            clientName: String = "FlowSyncClient/1", reconnect: ReconnectPolicy = .default,
            pingIntervalMilliseconds: UInt64 = 15_000, handshakeTimeoutMilliseconds: UInt64 = 10_000,
            firstSeq: UInt64 = UInt64(Date().timeIntervalSince1970 * 1_000_000),
            callbackQueue: DispatchQueue = .main, logger: Logger = Logger(label: "FlowSyncClient"),
            randomSeed: UInt64 = UInt64.random(in: 0...UInt64.max),
            tokenProvider: (@Sendable () -> String?)? = nil, maxTokenRefreshes: Int = 3,
            refreshesTokenInBand: Bool = true, tokenRefreshMarginSeconds: Double = 30,
            tls: TLSPolicy = .automatic, persistence: PersistenceOptions? = nil
        ) {
            self.tls = tls
            self.persistence = persistence
            self.refreshesTokenInBand = refreshesTokenInBand
            self.tokenRefreshMarginSeconds = tokenRefreshMarginSeconds
            self.tokenProvider = tokenProvider
            self.maxTokenRefreshes = maxTokenRefreshes
            self.endpoints = [Endpoint(host: host, port: port)]
            self.endpointOrder = .randomStart
            self.token = token
            self.clientID = clientID
            self.clientName = clientName
            self.reconnect = reconnect
            self.pingIntervalMilliseconds = pingIntervalMilliseconds
            self.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
            self.firstSeq = firstSeq
            self.callbackQueue = callbackQueue
            self.logger = logger
            self.randomSeed = randomSeed
        }

        /// Creates a configuration for several servers (the nodes of a cluster); the
        /// other parameters are those of ``init(host:port:token:clientID:clientName:reconnect:pingIntervalMilliseconds:handshakeTimeoutMilliseconds:firstSeq:callbackQueue:logger:randomSeed:tokenProvider:maxTokenRefreshes:refreshesTokenInBand:tokenRefreshMarginSeconds:tls:persistence:)``.
        ///
        /// - Precondition: `endpoints` is not empty.
        public init(
            endpoints: [Endpoint], endpointOrder: EndpointOrder = .randomStart, token: String? = nil,
            clientID: String = "swift-" + UUID().uuidString.lowercased(),
            clientName: String = "FlowSyncClient/1", reconnect: ReconnectPolicy = .default,
            pingIntervalMilliseconds: UInt64 = 15_000, handshakeTimeoutMilliseconds: UInt64 = 10_000,
            firstSeq: UInt64 = UInt64(Date().timeIntervalSince1970 * 1_000_000),
            callbackQueue: DispatchQueue = .main, logger: Logger = Logger(label: "FlowSyncClient"),
            randomSeed: UInt64 = UInt64.random(in: 0...UInt64.max),
            tokenProvider: (@Sendable () -> String?)? = nil, maxTokenRefreshes: Int = 3,
            refreshesTokenInBand: Bool = true, tokenRefreshMarginSeconds: Double = 30,
            tls: TLSPolicy = .automatic, persistence: PersistenceOptions? = nil
        ) {
            precondition(!endpoints.isEmpty, "FlowSyncClient.Configuration needs at least one endpoint")
            self.init(
                host: endpoints[0].host, port: endpoints[0].port, token: token, clientID: clientID,
                clientName: clientName, reconnect: reconnect, pingIntervalMilliseconds: pingIntervalMilliseconds,
                handshakeTimeoutMilliseconds: handshakeTimeoutMilliseconds, firstSeq: firstSeq,
                callbackQueue: callbackQueue, logger: logger, randomSeed: randomSeed, tokenProvider: tokenProvider,
                maxTokenRefreshes: maxTokenRefreshes, refreshesTokenInBand: refreshesTokenInBand,
                tokenRefreshMarginSeconds: tokenRefreshMarginSeconds, tls: tls, persistence: persistence)
            self.endpoints = endpoints
            self.endpointOrder = endpointOrder
        }
    }

    let core: ClientCore

    /// Connects with `configuration`, over `transport`; by default ``NetworkTransport``
    /// (Network.framework, TLS per ``Configuration/tls``) on Apple platforms and
    /// ``LibUVTransport`` (plain TCP on a libuv thread) on Linux.
    ///
    /// - Throws: ``TransportError`` when the default transport cannot satisfy
    ///   ``Configuration/tls`` (TLS to a non-loopback host on Linux), or cannot start.
    public init(configuration: Configuration, transport: (any ClientTransport)? = nil) throws {
        let transport = try transport ?? Self.defaultTransport(for: configuration)
        do throws(FlowSyncError) {
            core = try ClientCore(configuration: configuration, transport: transport)
        } catch {
            transport.shutdown()
            throw error
        }
        core.start()
    }

    /// Connects to `host:port`.
    public convenience init(host: String, port: Int, token: String? = nil) throws {
        try self.init(configuration: Configuration(host: host, port: port, token: token))
    }

    /// Connects to one of `endpoints` (the nodes of a cluster), moving to the next when
    /// one fails; see ``Configuration/endpoints``.
    public convenience init(endpoints: [Endpoint], token: String? = nil) throws {
        try self.init(configuration: Configuration(endpoints: endpoints, token: token))
    }

    /// The endpoint the client is connected to, or is trying or will try next.
    public var currentEndpoint: Endpoint { core.read { $0.session.endpoint } }

    deinit { core.close() }

    /// Replaces the token: a live connection gets it at once in a RefreshToken (it stays
    /// open, and lists the new token no longer grants fail with `forbidden`); every
    /// later connection attempt sends it in its Hello. Ignored with a ``Configuration/tokenProvider``
    /// on the next attempt, which asks the provider again.
    public func refreshToken(_ token: String) {
        core.input { $0.refresh(token: token) }
    }

    /// The configuration in use.
    public var configuration: Configuration { core.configuration }
    /// The writer identity sent with every write.
    public var clientID: String { core.configuration.clientID }

    /// Reads rows of `M.flowKind` as `M` in heterogeneous reads
    /// (``SectionSnapshot/models``) — like registering a FlowKit adapter.
    public func register<M: FlowModel>(_ type: M.Type) {
        core.update { $0.registry.register(type) }
    }

    /// The live replica of the list `name`; subscribes on the first call.
    ///
    /// The handle is usable at once: edits made before the first snapshot arrives are
    /// shown on the empty list and re-applied by identity onto the server's state.
    /// With ``Configuration/persistence``, the first call loads what a previous launch
    /// stored (on the calling thread, before any network): the list is loaded at once
    /// (``ListSnapshot/isFromDisk`` until the server answers the resume) and its stored
    /// writes are resent.
    public func director(_ name: String) -> ListDirector {
        core.subscribe(name)
        return ListDirector(name: name, client: self)
    }

    /// What was written to the persistence directory so far; `nil` without one.
    public var persistenceStatistics: PersistenceStatistics? {
        core.directory?.drain()
        return core.directory?.statistics
    }

    /// The connection's status now.
    public var status: ConnectionStatus { core.read { $0.status } }

    /// Every status change, starting with the status now: for a banner ("offline,
    /// retrying in 4 s"). Ends when the client closes; buffers without limit.
    public var statusUpdates: AsyncStream<ConnectionStatus> {
        let (stream, continuation) = AsyncStream<ConnectionStatus>.makeStream()
        let id = core.update { state -> UInt64? in
            continuation.yield(state.status)
            if state.shutDown {
                state.afterUnlock.append { continuation.finish() }
                return nil
            }
            let id = state.nextObserverID
            state.nextObserverID += 1
            // Yielded in place (under the lock, in status order); a closed status ends it.
            state.statusStreams[id] = continuation
            return id
        }
        if let id {
            continuation.onTermination = { [weak core] _ in
                _ = core?.update { $0.statusStreams.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// With ``Configuration/persistence``: waits until every edit made so far and every
    /// list's confirmed state are on disk. With ``PersistenceOptions/waitsForDisk`` false,
    /// edits are written in the background, in order, each before its write is sent, so
    /// a kill of the app can lose only the newest edits, never a sent one; call this
    /// where an app must know its edits survive (an App Intent about to return, a
    /// command-line tool about to exit).
    /// ``pause()`` and ``close()`` do it too. Blocks the calling thread for the writes
    /// (a few milliseconds per queued file); does nothing without persistence.
    public func flushPersistence() {
        core.flushPersistence()
    }

    /// The app goes to the background: the connection closes (a phone must not hold
    /// a socket it cannot service), replicas are written to disk (with
    /// ``Configuration/persistence``), and nothing is tried until ``resume()``. Edits
    /// still apply locally and queue. The status becomes ``ConnectionStatus/paused``.
    public func pause() {
        core.pause()
    }

    /// The app is in the foreground again: connect now; every list resumes from its
    /// replica's position with a Diff of what it missed, and queued writes are sent.
    public func resume() {
        core.reconnectNow()
    }

    /// Connect now instead of waiting for the backoff: call it when the app comes to
    /// the foreground or a network path appears (`NWPathMonitor`). Also resumes a paused
    /// client. Nothing happens while connected or connecting.
    public func reconnectNow() {
        core.reconnectNow()
    }

    /// Calls `handler` on `queue` (default: the callback queue) at every status change.
    @discardableResult
    public func observeStatus(
        on queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (ConnectionStatus) -> Void
    ) -> ObservationToken {
        let queue = queue ?? core.configuration.callbackQueue
        let id = core.update { state -> UInt64 in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.statusObservers[id] = (queue, handler)
            return id
        }
        return ObservationToken(id: id) { [weak core] in _ = core?.update { $0.statusObservers.removeValue(forKey: id) }
        }
    }

    /// The server's statistics (``StatsReply`` entries by name), server-wide or with the
    /// entries of one list.
    ///
    /// - Throws: ``FlowSyncError/closed`` when not connected.
    public func stats(list: String? = nil) async throws(FlowSyncError) -> [String: Int64] {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<StatsReply, FlowSyncError>, Never>) in
            core.input { state -> (Void, [SessionAction]) in
                let (id, actions) = state.session.requestStats(list: list)
                state.statsWaiters[id] = continuation
                return ((), actions)
            }
        }
        let reply = try result.get()
        var entries: [String: Int64] = [:]
        for entry in reply.entries { entries[entry.name] = entry.value }
        return entries
    }

    /// Asks the server to write a consistent backup of every list into `directory`, a
    /// new (missing or empty) directory on the **server's** machine, and waits until it
    /// is on disk (docs/STORAGE.md, "Backup and restore"). Needs a token that may read
    /// every list.
    ///
    /// - Returns: the server's reply: ``BackupReply/failure`` is `nil` when the backup
    ///   was written, or says why not (the server's reason is in the message).
    /// - Throws: ``FlowSyncError/closed`` when not connected, or when the connection was
    ///   lost before the answer (the backup may then still complete on the server).
    public func backup(to directory: String) async throws(FlowSyncError) -> BackupReply {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<BackupReply, FlowSyncError>, Never>) in
            core.input { state -> (Void, [SessionAction]) in
                let (id, actions) = state.session.requestBackup(directory: directory)
                state.backupWaiters[id] = continuation
                return ((), actions)
            }
        }
        return try result.get()
    }

    /// Closes the connection and stops reconnecting. Unanswered writes fail with
    /// ``FlowSyncError/closed``; change sequences end. Idempotent.
    public func close() {
        core.close()
    }
}

/// A registration that can be cancelled (an observer, a status handler).
///
/// Named `ObservationToken`, not `Observation`: a type of that name would shadow the
/// `Observation` module in every file that imports this one, and the `@Observable`
/// macro (which expands to `Observation.Observable`) would stop compiling there.
public final class ObservationToken: Sendable {
    private let onCancel: @Sendable () -> Void
    /// The observer's ID in the client (for ``ListDirector/submit(_:withoutNotifying:)``).
    let id: UInt64

    init(id: UInt64, _ onCancel: @escaping @Sendable () -> Void) {
        self.id = id
        self.onCancel = onCancel
    }

    /// Stops the deliveries; changes already queued may still arrive.
    public func cancel() { onCancel() }
}
