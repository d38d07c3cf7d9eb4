import TOMLKit

/// A configuration problem, naming the key (`section.key`) and what is wrong.
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public let key: String
    public let problem: String
    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }
    public var description: String { key.isEmpty ? problem : "\(key): \(problem)" }
}

extension ServerConfiguration {
    /// Parses a TOML document over the defaults. Unknown sections and keys are errors
    /// (a misspelt key must not be silently ignored), and so are values of the wrong
    /// type or out of range.
    public init(toml text: String) throws(ConfigurationError) {
        self.init()
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(
                key: "",
                problem:
                    "TOML syntax error at line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)"
            )
        } catch {
            throw ConfigurationError(key: "", problem: "TOML syntax error: \(error)")
        }
        for sectionName in table.keys {
            guard let section = table[sectionName]?.table else {
                throw ConfigurationError(key: sectionName, problem: "expected a [\(sectionName)] table")
            }
            for key in section.keys {
                guard let raw = section[key] else { continue }
                let value = ConfigValue(key: "\(sectionName).\(key)", value: raw)
                switch (sectionName, key) {
                case ("server", "host"): host = try value.string()
                case ("server", "port"): port = try value.int(0...65_535)
                case ("server", "data_dir"): dataDirectory = try value.string()
                case ("server", "lists"): declaredLists = try value.strings()
                case ("server", "auto_create_lists"): autoCreateLists = try value.bool()
                case ("server", "shutdown_grace_ms"): shutdownGraceMilliseconds = try value.int(0...3_600_000)
                case ("server", "name"): serverName = try value.string()
                case ("server", "write_path"): writePath = try value.choice(WritePath.self)
                case ("server", "flush_slice_us"): flushSliceMicroseconds = try value.int(0...1_000_000)
                case ("server", "seal_wait_us"): sealWaitMicroseconds = try value.int(0...1_000_000)
                case ("server", "unix_socket"): unixSocketPath = try value.string()
                case ("server", "unix_socket_mode"):
                    let text = try value.string()
                    guard let mode = Int(text, radix: 8), (0...0o777).contains(mode) else {
                        throw ConfigurationError(
                            key: value.key, problem: "\"\(text)\" is not an octal mode such as \"0660\"")
                    }
                    unixSocketMode = mode
                case ("limits", "max_frame_bytes"): maxFrameBytes = try value.int(1_024...Int(UInt32.max))
                case ("limits", "max_inflated_bytes"): maxInflatedBytes = try value.int(1_024...Int(UInt32.max))
                case ("limits", "pre_auth_max_frame_bytes"): preAuthMaxFrameBytes = try value.int(64...(1 << 30))
                case ("limits", "handshake_timeout_ms"): handshakeTimeoutMilliseconds = try value.int(1...3_600_000)
                case ("limits", "heartbeat_ms"): heartbeatMilliseconds = try value.int(0...3_600_000)
                case ("limits", "tcp_keepalive_s"): tcpKeepaliveSeconds = try value.int(0...86_400)
                case ("limits", "max_lists_per_connection"): maxListsPerConnection = try value.int(1...1_000_000)
                case ("limits", "max_list_name_bytes"): maxListNameBytes = try value.int(1...65_535)
                case ("limits", "max_connections"): maxConnections = try value.int(1...10_000_000)
                case ("limits", "max_ops_per_mutation"): director.maxOpsPerMutation = try value.int(1...1_000_000)
                case ("limits", "max_id_bytes"): director.maxIDBytes = try value.int(1...65_535)
                case ("limits", "max_kind_bytes"): director.maxKindBytes = try value.int(0...65_535)
                case ("limits", "max_payload_bytes"): director.maxPayloadBytes = try value.int(0...(1 << 30))
                case ("limits", "max_sections"): director.maxSections = try value.int(1...100_000_000)
                case ("limits", "max_rows"): director.maxRows = try value.int(1...1_000_000_000)
                case ("backpressure", "low_watermark_bytes"): lowWatermarkBytes = try value.int(0...(1 << 40))
                case ("backpressure", "high_watermark_bytes"): highWatermarkBytes = try value.int(1...(1 << 40))
                case ("backpressure", "hard_limit_bytes"): hardLimitBytes = try value.int(1...(1 << 40))
                case ("backpressure", "write_deadline_ms"): writeDeadlineMilliseconds = try value.int(1...86_400_000)
                case ("storage", "engine"): storageEngine = try value.choice(StorageEngine.self)
                case ("storage", "fsync"): fsyncPolicy = try value.choice(FsyncPolicy.self)
                case ("storage", "fsync_interval_ms"): fsyncIntervalMilliseconds = try value.int(1...3_600_000)
                case ("storage", "snapshot_every_batches"): snapshotEveryBatches = try value.int(0...1_000_000_000)
                case ("storage", "snapshot_every_bytes"): snapshotEveryBytes = try value.int(0...(1 << 40))
                case ("storage", "parallel_sync"): parallelSync = try value.bool()
                case ("storage", "max_open_logs"): maxOpenLogs = try value.int(1...1_000_000)
                case ("lists", "on_demand"):
                    if let flag = value.value.bool {
                        listsOnDemand = flag
                    } else if value.value.string == "auto" {
                        storage.listLoading = .auto
                    } else {
                        throw ConfigurationError(key: value.key, problem: "expected true, false or \"auto\"")
                    }
                case ("lists", "eager_max_lists"): eagerMaxLists = try value.int(0...100_000_000)
                case ("lists", "check_stored"): checkStoredLists = try value.bool()
                case ("lists", "idle_unload_ms"): idleUnloadMilliseconds = try value.int(0...86_400_000)
                case ("lists", "max_waiting_per_list"): maxWaitingPerList = try value.int(1...1_000_000)
                case ("history", "max_batches"): historyMaxBatches = try value.int(0...100_000_000)
                case ("history", "max_bytes"): historyMaxBytes = try value.int(0...(1 << 40))
                case ("history", "total_max_bytes"): historyTotalMaxBytes = try value.int(0...(1 << 50))
                case ("ordering", "dedupe_per_client"): dedupePerClient = try value.int(2...1_000_000)
                case ("ordering", "dedupe_clients"): dedupeClients = try value.int(1...100_000_000)
                case ("compression", "level"): compressionLevel = try value.int(0...9)
                case ("compression", "threshold_bytes"): compressionThresholdBytes = try value.int(0...(1 << 30))
                case ("compression", "offload_snapshot_rows"): offloadSnapshotRows = try value.int(0...Int(Int32.max))
                case ("metrics", "enabled"): metricsEnabled = try value.bool()
                case ("metrics", "host"): metricsHost = try value.string()
                case ("metrics", "port"): metricsPort = try value.int(0...65_535)
                case ("logging", "level"): logLevel = try value.string()
                case ("cluster", "postgres"): cluster.postgres = try value.string()
                case ("cluster", "node"): cluster.node = try value.string()
                case ("cluster", "lease_ms"): cluster.leaseMilliseconds = try value.int(300...600_000)
                case ("cluster", "peer_secret_file"): cluster.peerSecretFile = try value.string()
                case ("cluster", "peer_host"): cluster.peerHost = try value.string()
                case ("cluster", "peer_port"): cluster.peerPort = try value.int(0...65_535)
                case ("cluster", "peer_max_queued_bytes"):
                    cluster.peerMaxQueuedBytes = try value.int(65_536...(1 << 30))
                case ("auth", _): try auth.parse(key: key, value: value)
                case ("tls", _): try tls.parse(key: key, value: value)
                case ("server", _), ("storage", _), ("lists", _), ("limits", _), ("backpressure", _), ("history", _),
                    ("ordering", _), ("compression", _), ("metrics", _), ("logging", _), ("cluster", _):
                    throw ConfigurationError(key: value.key, problem: "unknown key")
                default:
                    throw ConfigurationError(key: sectionName, problem: "unknown section [\(sectionName)]")
                }
            }
        }
        if let (key, problem) = validate() { throw ConfigurationError(key: key, problem: problem) }
    }
}

/// One value being read, with its full key for error messages.
struct ConfigValue {
    let key: String
    let value: any TOMLValueConvertible

    func string() throws(ConfigurationError) -> String {
        guard let s = value.string else { throw ConfigurationError(key: key, problem: "expected a string") }
        return s
    }

    func bool() throws(ConfigurationError) -> Bool {
        guard let b = value.bool else { throw ConfigurationError(key: key, problem: "expected true or false") }
        return b
    }

    func int(_ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let i = value.int else { throw ConfigurationError(key: key, problem: "expected an integer") }
        guard range.contains(i) else {
            throw ConfigurationError(key: key, problem: "\(i) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        return i
    }

    func choice<T: RawRepresentable & CaseIterable>(_: T.Type) throws(ConfigurationError) -> T
    where T.RawValue == String {
        let s = try string()
        guard let v = T(rawValue: s) else {
            throw ConfigurationError(
                key: key,
                problem: "\"\(s)\" is not one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
        }
        return v
    }

    func strings() throws(ConfigurationError) -> [String] {
        guard let array = value.array else {
            throw ConfigurationError(key: key, problem: "expected an array of strings")
        }
        var result: [String] = []
        for element in array {
            guard let s = element.string else {
                throw ConfigurationError(key: key, problem: "expected an array of strings")
            }
            result.append(s)
        }
        return result
    }
}
