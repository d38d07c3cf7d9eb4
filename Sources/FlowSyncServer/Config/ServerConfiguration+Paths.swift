import FlowSyncCore
import FlowSyncProtocol

// The flat names of the grouped keys (`configuration.port` for
// `configuration.listen.port`, …): the call sites and the TOML reader predate the
// groups, and one name per key reads better in a `switch` over config keys. Each is
// only a path into its group; the group is what a reload keeps or replaces.
extension ServerConfiguration {
    /// `listen.host`.
    public var host: String {
        get { listen.host }
        set { listen.host = newValue }
    }
    /// `listen.port`.
    public var port: Int {
        get { listen.port }
        set { listen.port = newValue }
    }
    /// `listen.unixSocketPath`.
    public var unixSocketPath: String? {
        get { listen.unixSocketPath }
        set { listen.unixSocketPath = newValue }
    }
    /// `listen.unixSocketMode`.
    public var unixSocketMode: Int {
        get { listen.unixSocketMode }
        set { listen.unixSocketMode = newValue }
    }
    /// `storage.dataDirectory`.
    public var dataDirectory: String {
        get { storage.dataDirectory }
        set { storage.dataDirectory = newValue }
    }
    /// `storage.engine`.
    public var storageEngine: StorageEngine {
        get { storage.engine }
        set { storage.engine = newValue }
    }
    /// `storage.fsyncPolicy`.
    public var fsyncPolicy: FsyncPolicy {
        get { storage.fsyncPolicy }
        set { storage.fsyncPolicy = newValue }
    }
    /// `storage.fsyncIntervalMilliseconds`.
    public var fsyncIntervalMilliseconds: Int {
        get { storage.fsyncIntervalMilliseconds }
        set { storage.fsyncIntervalMilliseconds = newValue }
    }
    /// `storage.snapshotEveryBatches`.
    public var snapshotEveryBatches: Int {
        get { storage.snapshotEveryBatches }
        set { storage.snapshotEveryBatches = newValue }
    }
    /// `storage.snapshotEveryBytes`.
    public var snapshotEveryBytes: Int {
        get { storage.snapshotEveryBytes }
        set { storage.snapshotEveryBytes = newValue }
    }
    /// `storage.parallelSync`.
    public var parallelSync: Bool {
        get { storage.parallelSync }
        set { storage.parallelSync = newValue }
    }
    /// `storage.maxOpenLogs`.
    public var maxOpenLogs: Int {
        get { storage.maxOpenLogs }
        set { storage.maxOpenLogs = newValue }
    }
    /// Lists always on demand (`true`) or always at start (`false`):
    /// `storage.listLoading` as a switch, for tests and tools that want one mode.
    public var listsOnDemand: Bool {
        get { storage.listLoading == .onDemand }
        set { storage.listLoading = newValue ? .onDemand : .atStart }
    }
    /// `storage.eagerMaxLists`.
    public var eagerMaxLists: Int {
        get { storage.eagerMaxLists }
        set { storage.eagerMaxLists = newValue }
    }
    /// `storage.checkStoredLists`.
    public var checkStoredLists: Bool {
        get { storage.checkStoredLists }
        set { storage.checkStoredLists = newValue }
    }
    /// `limits.maxFrameBytes`.
    public var maxFrameBytes: Int {
        get { limits.maxFrameBytes }
        set { limits.maxFrameBytes = newValue }
    }
    /// `limits.maxInflatedBytes`.
    public var maxInflatedBytes: Int {
        get { limits.maxInflatedBytes }
        set { limits.maxInflatedBytes = newValue }
    }
    /// `limits.preAuthMaxFrameBytes`.
    public var preAuthMaxFrameBytes: Int {
        get { limits.preAuthMaxFrameBytes }
        set { limits.preAuthMaxFrameBytes = newValue }
    }
    /// `limits.handshakeTimeoutMilliseconds`.
    public var handshakeTimeoutMilliseconds: Int {
        get { limits.handshakeTimeoutMilliseconds }
        set { limits.handshakeTimeoutMilliseconds = newValue }
    }
    /// `limits.heartbeatMilliseconds`.
    public var heartbeatMilliseconds: Int {
        get { limits.heartbeatMilliseconds }
        set { limits.heartbeatMilliseconds = newValue }
    }
    /// `limits.tcpKeepaliveSeconds`.
    public var tcpKeepaliveSeconds: Int {
        get { limits.tcpKeepaliveSeconds }
        set { limits.tcpKeepaliveSeconds = newValue }
    }
    /// `limits.maxListsPerConnection`.
    public var maxListsPerConnection: Int {
        get { limits.maxListsPerConnection }
        set { limits.maxListsPerConnection = newValue }
    }
    /// `limits.maxListNameBytes`.
    public var maxListNameBytes: Int {
        get { limits.maxListNameBytes }
        set { limits.maxListNameBytes = newValue }
    }
    /// `limits.maxConnections`.
    public var maxConnections: Int {
        get { limits.maxConnections }
        set { limits.maxConnections = newValue }
    }
    /// `limits.director`.
    public var director: DirectorLimits {
        get { limits.director }
        set { limits.director = newValue }
    }
    /// `metrics.enabled`.
    public var metricsEnabled: Bool {
        get { metrics.enabled }
        set { metrics.enabled = newValue }
    }
    /// `metrics.host`.
    public var metricsHost: String {
        get { metrics.host }
        set { metrics.host = newValue }
    }
    /// `metrics.port`.
    public var metricsPort: Int {
        get { metrics.port }
        set { metrics.port = newValue }
    }
}
