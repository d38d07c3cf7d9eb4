/// One server a client may connect to: a host and a port.
///
/// Several endpoints (``FlowSyncClient/Configuration/endpoints``) name the nodes of a
/// cluster (docs/CLUSTER.md, "Several endpoints"); the client is connected to one at a
/// time and moves to the next when that one fails (``EndpointRotation``).
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// The host name or address (an IPv6 address without brackets).
    public var host: String
    /// The TCP port.
    public var port: Int

    /// Creates an endpoint.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host`, `host:port`, `[v6]` or `[v6]:port`; a bare IPv6 address (two
    /// colons or more) is a host without a port. The port, when missing, is
    /// `defaultPort`. `nil` when the host is empty or the port is not in 1...65535
    /// (0 is refused: a client cannot connect to port 0).
    public init?(parsing text: String, defaultPort: Int) {
        var host = Substring(text)
        var port = defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()) else { return nil }
                port = value
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            guard let value = Int(host[host.index(after: colon)...]) else { return nil }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65_535).contains(port) else { return nil }
        self.init(host: String(host), port: port)
    }

    /// `host:port`, with brackets around an IPv6 address.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Which endpoint a client with several tries first.
public enum EndpointOrder: Hashable, Sendable {
    /// The first endpoint of the list, then the others in order: a primary with
    /// fallbacks, and what the `flowsync` CLI does ("try them in order until one answers").
    case listed
    /// An endpoint picked from ``FlowSyncClient/Configuration/randomSeed``, then the
    /// others in list order from there (the default). Every installed app carries the
    /// same list; starting each at a random place spreads the connections over the
    /// nodes instead of loading the first with all of them, and a seeded pick stays
    /// repeatable in tests.
    case randomStart
}

/// Which endpoint to try next, and when: a pure, platform-neutral state machine with no
/// sockets or clock (``EndpointRotationTests`` drive it over thousands of seeded cases).
///
/// Rules:
/// 1. Round robin: every attempt that ends (a failed connect, a lost connection, a node
///    that refused a list) moves to the next endpoint in list order, wrapping around.
/// 2. A **round** is one attempt at each endpoint. Within a round the next endpoint is
///    tried at once (no backoff: another node is expected to be fine when one is down);
///    the ``ReconnectPolicy`` delay comes only when a round ends, so it is applied once
///    per round, never per endpoint.
/// 3. A connection that served (it reached the Welcome and did not end with a refusal)
///    starts a new round and clears the failure count: the round's backoff is then the
///    policy's first delay, as a single-endpoint client's after a drop. A round in which
///    nothing served counts as failed; the delay grows with the failed rounds, and
///    ``ReconnectPolicy/maxAttempts`` counts failed rounds.
/// 4. With one endpoint every attempt is a round, so the behaviour (delays, give-up) is
///    exactly that of a client without rotation.
/// 5. A delay the server asked for (a Notice, an Error's back-off) is a minimum on the
///    next attempt, whichever endpoint it goes to; a dead path found by the heartbeat
///    skips the round's backoff (the node may be fine; the path was not).
struct EndpointRotation: Sendable, Equatable {
    /// How an attempt ended.
    enum Outcome: Sendable, Equatable {
        /// The endpoint served: a ready connection that then dropped.
        case served
        /// It never became ready (refused, timed out, closed in the handshake), or it
        /// refused a list this client needs (a cluster node that does not own it).
        case failed
    }

    /// What to do after an attempt ended.
    enum Next: Sendable, Equatable {
        /// Connect to `endpoint` (an index into the list) after `milliseconds`.
        case connect(endpoint: Int, afterMilliseconds: UInt64, endsRound: Bool)
        /// ``ReconnectPolicy/maxAttempts`` rounds failed in a row: stop.
        case giveUp(failedRounds: Int)
    }

    /// How many endpoints there are (at least one).
    let count: Int
    /// The endpoint in use or being tried.
    private(set) var current: Int
    /// Attempts that ended in this round.
    private(set) var endedInRound = 0
    /// Whether an endpoint served in this round.
    private(set) var servedInRound = false
    /// Rounds in a row in which nothing served.
    private(set) var failedRounds = 0

    /// - Parameter first: the endpoint tried first (see ``EndpointOrder``).
    init(count: Int, first: Int) {
        precondition(
            count > 0 && (0..<count).contains(first),
            "Internal inconsistency in EndpointRotation: first \(first) of \(count)")
        self.count = count
        self.current = first
    }

    /// The attempt at ``current`` ended with `outcome`: where and when to connect next.
    ///
    /// - Parameters:
    ///   - minimumMilliseconds: a delay the server asked for.
    ///   - skipBackoff: the connection was dropped as dead by this client (heartbeat).
    ///   - unit: a random number in 0..<1 for the policy's jitter.
    mutating func attemptEnded(
        _ outcome: Outcome, policy: ReconnectPolicy, minimumMilliseconds: UInt64 = 0,
        skipBackoff: Bool = false, unit: Double
    ) -> Next {
        switch outcome {
        case .served:
            // The round restarts at the endpoint that served; it counts as tried.
            failedRounds = 0
            servedInRound = true
            endedInRound = 1
        case .failed:
            endedInRound += 1
        }
        current = (current + 1) % count
        guard endedInRound >= count else {
            return .connect(endpoint: current, afterMilliseconds: minimumMilliseconds, endsRound: false)
        }
        let attempt: Int
        if servedInRound {
            attempt = 0
        } else {
            failedRounds += 1
            if let max = policy.maxAttempts, failedRounds >= max {
                endedInRound = 0  // the client stops; the rotation is left consistent
                return .giveUp(failedRounds: failedRounds)
            }
            attempt = failedRounds
        }
        endedInRound = 0
        servedInRound = false
        var delay = policy.delay(attempt: attempt, minimum: minimumMilliseconds, unit: unit)
        if skipBackoff && minimumMilliseconds == 0 { delay = 0 }
        return .connect(endpoint: current, afterMilliseconds: delay, endsRound: true)
    }

    /// The app asked to connect now (``FlowSyncClient/reconnectNow()``, resume): a fresh
    /// round from the endpoint that is next anyway.
    mutating func restart() {
        endedInRound = 0
        servedInRound = false
        failedRounds = 0
    }

    #if DEBUG
    /// Checks the invariants (tests call it after every event).
    func checkInvariants() {
        precondition(
            (0..<count).contains(current), "Internal inconsistency in EndpointRotation: endpoint \(current) of \(count)"
        )
        precondition(
            (0..<count).contains(endedInRound),
            "Internal inconsistency in EndpointRotation: \(endedInRound) ended in a round of \(count)")
        precondition(failedRounds >= 0)
    }
    #endif
}
