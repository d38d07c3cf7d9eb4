import FlowSyncTLS
import Metrics

/// TLS counters of a running server (``Server/tlsStatistics``).
public struct TLSStatistics: Sendable, Hashable {
    /// Handshakes completed, in all and by protocol version (`TLSv1.3`).
    public var handshakes = 0
    public var handshakesByVersion: [String: Int] = [:]
    /// Connections whose TLS failed, by ``TLSError/Reason`` raw value.
    public var failuresByReason: [String: Int] = [:]
    /// Certificate pairs loaded (start and reloads), and reloads refused.
    public var loads = 0
    public var refusedLoads = 0
    /// Connections that an mTLS certificate authenticated (`[[tls.principals]]`).
    public var certificatePrincipals = 0
    /// The served certificate's `notAfter`, seconds since 1970.
    public var certificateExpiry: Double?
    /// Records the own record layer sealed and opened (``TLSRecordCounts``); OpenSSL's
    /// record layer's are not counted.
    public var recordsSealed = 0
    public var recordsOpened = 0
}

/// What the daemon counts about TLS (issue #32), statistics and metrics together, one
/// method per event (as ``ServerEvents``, in a room of its own). Loop-confined.
///
/// | metric | what |
/// | --- | --- |
/// | `flowsync_tls_handshakes_total{version}` | handshakes completed, by protocol version |
/// | `flowsync_tls_failures_total{reason}` | connections whose TLS failed, by ``TLSError/Reason``: in the handshake (`not_tls`, `protocol_version`, `certificate_required`, `timeout`, …) or after it (`truncated`, `bad_record`, `renegotiation`); a peer that leaves without `close_notify` between records (`eof`) is not counted |
/// | `flowsync_tls_certificate_expiry_timestamp_seconds` | the served certificate's `notAfter` (alert: config/prometheus) |
/// | `flowsync_tls_certificate_loads_total{result}` | certificate pairs loaded at start and reload: `ok`, or `refused` (the old pair kept) |
/// | `flowsync_tls_records_total{direction}` | records the own record layer `sealed` and `opened` (``TLSRecordCounts``; brought up to date by the 100 ms sweep); OpenSSL's record layer's are not counted |
struct TLSEvents {
    private(set) var statistics = TLSStatistics()
    private var handshakesByVersion: [String: Counter] = [:]
    private var failuresByReason: [String: Counter] = [:]
    private let loadsOK = Counter(label: "flowsync_tls_certificate_loads_total", dimensions: [("result", "ok")])
    private let loadsRefused = Counter(
        label: "flowsync_tls_certificate_loads_total", dimensions: [("result", "refused")])
    private let expiry = Gauge(label: "flowsync_tls_certificate_expiry_timestamp_seconds")
    private let recordsSealed = Counter(label: "flowsync_tls_records_total", dimensions: [("direction", "sealed")])
    private let recordsOpened = Counter(label: "flowsync_tls_records_total", dimensions: [("direction", "opened")])
    /// What ``recordsCounted(_:)`` last brought the counters to.
    private var recordsReported = (sealed: 0, opened: 0)

    /// A handshake completed with `version` (`TLSv1.3`, …).
    mutating func handshakeCompleted(version: String) {
        statistics.handshakes += 1
        statistics.handshakesByVersion[version, default: 0] += 1
        if handshakesByVersion[version] == nil {
            handshakesByVersion[version] = Counter(
                label: "flowsync_tls_handshakes_total", dimensions: [("version", version)])
        }
        handshakesByVersion[version]!.increment()
    }

    /// A connection's TLS failed for `reason` (``TLSError/Reason/endedWithoutCloseNotify``
    /// is not a failure: nothing is counted).
    mutating func failed(_ reason: TLSError.Reason) {
        guard reason != .endedWithoutCloseNotify else { return }
        let key = reason.rawValue
        statistics.failuresByReason[key, default: 0] += 1
        if failuresByReason[key] == nil {
            failuresByReason[key] = Counter(label: "flowsync_tls_failures_total", dimensions: [("reason", key)])
        }
        failuresByReason[key]!.increment()
    }

    /// A certificate pair was loaded (start, reload) and is served from now on.
    mutating func loaded(expiry: Double?) {
        statistics.loads += 1
        statistics.certificateExpiry = expiry
        loadsOK.increment()
        loadsRefused.increment(by: 0)  // the series exists before the first refusal
        if let expiry { self.expiry.record(expiry) }
    }

    /// A reload's pair was refused; the running one stays.
    mutating func refused() {
        statistics.refusedLoads += 1
        loadsRefused.increment()
    }

    /// The loop's record counts, from the sweep: the counters catch up (an increment
    /// per record would cost a metrics call per delivery; this costs two per sweep).
    mutating func recordsCounted(_ counts: TLSRecordCounts) {
        statistics.recordsSealed = counts.sealed
        statistics.recordsOpened = counts.opened
        recordsSealed.increment(by: Int64(counts.sealed - recordsReported.sealed))
        recordsOpened.increment(by: Int64(counts.opened - recordsReported.opened))
        recordsReported = (counts.sealed, counts.opened)
    }

    /// A client certificate authenticated a connection as a principal.
    mutating func principalAuthenticated() {
        statistics.certificatePrincipals += 1
    }
}
