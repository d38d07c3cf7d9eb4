/// The records the own record layer (``TLSRecordLayer``) sealed and opened on one loop:
/// one instance per loop (``TLSScratch/records``), shared by every layer on it — never
/// per connection. An increment per record, read by the owner for its metrics (the
/// daemon's `flowsync_tls_records_total`). Loop-confined.
///
/// Not counted: records of connections on OpenSSL's record layer (TLS 1.2, clients, a
/// switch refused), and the handshake's records.
public final class TLSRecordCounts {
    /// Records sealed: application data, KeyUpdates and alerts.
    public internal(set) var sealed = 0
    /// Records opened: every record whose tag was right.
    public internal(set) var opened = 0

    public init() {}
}
