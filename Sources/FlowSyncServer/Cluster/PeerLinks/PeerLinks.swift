import FlowSyncLoop
import Logging

/// A cluster node's peer links (issue #33; docs/CLUSTER.md, "Peer links"): the peer
/// listener, one ``PeerLink`` per other live node, and which of them are ready.
/// Loop-confined; knows nothing of lists beyond the names in frames — ``ClusterStore``
/// decides what goes on a link (`ClusterStore+PeerLinks.swift`).
///
/// Rules, each with its reason:
/// 1. **One link per pair of nodes: the node whose name sorts first dials** (byte
///    order), the other accepts. A link carries frames both ways, so two would only
///    race each other.
/// 2. **Addresses come from the leases** (`fs_leases.peer`, read with the live nodes
///    every third of a lease and when a node arrives): a dialer dials the address it
///    has at each attempt, so a restarted peer on a new port is found at the next read.
/// 3. **The newest authenticated link for a peer wins**: a peer that restarted
///    authenticates a new link before this node notices the old one died; the old one
///    is stopped. A lost link is forgotten only if it is still the current one.
/// 4. **A peer that is no longer live is no longer dialed** (its lease lapsed or it
///    stopped); links it accepted end when their sockets do.
/// 5. **Unauthenticated connections are bounded**: at most
///    ``maximumPendingHandshakes`` at once, each for the handshake's deadline (5 s) and
///    1 KiB of frames (``PeerLink``), so the peer port cannot be used to hold memory.
final class PeerLinks {
    /// What `[cluster]` configures for the links.
    struct Options: Sendable, Hashable {
        var credential: PeerCredential
        /// The address the peer listener binds (the server's `host` unless
        /// `peer_host` says otherwise) and advertises.
        var host: String
        /// 0: the OS chooses; the bound port is advertised.
        var port: Int
        /// The largest frame a peer may send once authenticated.
        var frameLimit: Int
        /// Bytes libuv may hold for one link before it is dropped (``PeerLink`` rule 4).
        var maxQueuedBytes: Int
    }

    let loop: EventLoop
    let node: String
    let options: Options
    let logger: Logger
    private var listener: TCPListener?
    /// The address other nodes dial, once the listener is bound.
    private(set) var advertisedAddress: String?
    private var addresses: [String: SocketAddress] = [:]
    /// The links this node dials, by peer (rule 1).
    private var dialed: [String: PeerLink] = [:]
    /// Links accepted and not yet stopped (authenticated or not).
    private var acceptedLinks: [ObjectIdentifier: PeerLink] = [:]
    /// The ready link of each peer (rule 3).
    private var readyLinks: [String: PeerLink] = [:]

    var onReady: ((String) -> Void)?
    var onLost: ((String) -> Void)?
    var onFrame: ((String, PeerFrame) -> Void)?

    init(loop: EventLoop, node: String, options: Options, logger: Logger) {
        self.loop = loop
        self.node = node
        self.options = options
        self.logger = logger
    }

    /// Binds the peer listener; its address is what the lease advertises.
    func start() throws(UVError) {
        let listener = try TCPListener(loop: loop, address: SocketAddress(host: options.host, port: options.port))
        listener.onConnection = { [weak self] connection in self?.accept(connection) }
        self.listener = listener
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        advertisedAddress = "\(host):\(listener.port)"
        logger.info("cluster: peer links listening", metadata: ["address": "\(advertisedAddress ?? "")"])
    }

    /// Stops every link and the listener.
    func stop() {
        listener?.close()
        listener = nil
        let links = Array(dialed.values) + Array(acceptedLinks.values)
        dialed = [:]
        acceptedLinks = [:]
        readyLinks = [:]
        for link in links { link.stop() }
    }

    /// Closes every ready link, as a cut would; dialers dial again after their backoff.
    func dropReady() {
        for link in readyLinks.values { link.drop(reason: "dropped on request") }
    }

    /// The ready link to `peer`, if any.
    func link(to peer: String) -> PeerLink? { readyLinks[peer] }

    /// The peers with a ready link.
    var readyPeers: [String] { Array(readyLinks.keys) }

    /// The ready links whose peer follows `list`.
    func followers(of list: String) -> [PeerLink] {
        readyLinks.values.filter { $0.ready?.follows.contains(list) == true }
    }

    /// Whether `node` dials `peer` (rule 1).
    static func dials(_ node: String, _ peer: String) -> Bool {
        Array(node.utf8).lexicographicallyPrecedes(Array(peer.utf8))
    }

    /// The live nodes and their advertised addresses were read (rules 2, 4).
    func peersRead(_ peers: [(node: String, address: String?)]) {
        var live: Set<String> = []
        for peer in peers where peer.node != node {
            live.insert(peer.node)
            if let text = peer.address, let address = Self.parse(text) {
                addresses[peer.node] = address
            }
            guard Self.dials(node, peer.node), dialed[peer.node] == nil, addresses[peer.node] != nil else { continue }
            let link = makeLink(role: .dialer(peer: peer.node))
            let name = peer.node
            link.address = { [weak self] in self?.addresses[name] }
            dialed[peer.node] = link
            link.start()
        }
        for (peer, link) in dialed where !live.contains(peer) {
            dialed[peer] = nil
            addresses[peer] = nil
            link.stop()
        }
    }

    /// `"host:port"` or `"[v6]:port"`; `nil` when it is neither.
    static func parse(_ text: String) -> SocketAddress? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return try? SocketAddress(host: host, port: port)
    }

    /// Connections accepted and not yet authenticated, at most (rule 5).
    static let maximumPendingHandshakes = 64

    private func accept(_ connection: TCPConnection) {
        // Rule 5: anyone who reaches the port can open connections; past the cap they
        // are closed at once, before any byte is read.
        let pending = acceptedLinks.values.filter { $0.ready == nil }.count
        guard pending < Self.maximumPendingHandshakes else {
            logger.warning(
                "cluster: peer connection refused: too many handshakes pending",
                metadata: ["from": "\(connection.peer)", "pending": "\(pending)"])
            connection.close()
            return
        }
        let link = makeLink(role: .acceptor)
        acceptedLinks[ObjectIdentifier(link)] = link
        link.onStopped = { [weak self] link in self?.acceptedLinks[ObjectIdentifier(link)] = nil }
        link.adopt(connection)
    }

    private func makeLink(role: PeerLinkStateMachine.Role) -> PeerLink {
        let link = PeerLink(
            loop: loop, role: role, node: node, credential: options.credential, frameLimit: options.frameLimit,
            maxQueuedBytes: options.maxQueuedBytes, logger: logger)
        link.onReady = { [weak self] link, peer in
            guard let self else { return }
            // Rule 3: the newest authenticated link wins.
            if let old = readyLinks[peer], old !== link {
                readyLinks[peer] = nil
                old.stop()
                // What was sent on the old link may be lost: the node treats it as lost.
                onLost?(peer)
            }
            readyLinks[peer] = link
            logger.info("cluster: peer link ready", metadata: ["peer": "\(peer)"])
            onReady?(peer)
        }
        link.onLost = { [weak self] link, peer in
            guard let self, readyLinks[peer] === link else { return }
            readyLinks[peer] = nil
            logger.info(
                "cluster: peer link lost; PostgreSQL carries this peer's traffic", metadata: ["peer": "\(peer)"])
            onLost?(peer)
        }
        link.onFrame = { [weak self] link, peer, frame in
            guard let self, readyLinks[peer] === link else { return }
            onFrame?(peer, frame)
        }
        return link
    }
}
