import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import Logging

/// What the other layers need, derived from the configuration in one place: the
/// decoder's limits before and after the handshake, the limits announced in `Welcome`,
/// back-pressure, history, idempotency window, compression and the store. Each layer
/// keeps its own limits type with its defaults stated once (`DirectorLimits` in the
/// core, `DecoderLimits` in the protocol); the configuration's defaults are read from
/// them, never restated.
extension ServerConfiguration {
    /// Watermarks on a connection's queued bytes (`[backpressure]`).
    var backpressure: BackpressurePolicy {
        BackpressurePolicy(
            lowWatermark: lowWatermarkBytes, highWatermark: highWatermarkBytes, hardLimit: hardLimitBytes)
    }

    /// What each list's sequencer keeps for resume and catch-up (`[history]`).
    var historyLimits: Sequencer.HistoryLimits {
        Sequencer.HistoryLimits(maxBatches: historyMaxBatches, maxBytes: historyMaxBytes)
    }

    /// The end of the turn's budgets (`[server] flush_slice_us`, `seal_wait_us`).
    var flushBudgets: FlushPacer.Budgets {
        FlushPacer.Budgets(sliceMicroseconds: flushSliceMicroseconds, sealWaitMicroseconds: sealWaitMicroseconds)
    }

    /// Each list's idempotency window (`[ordering]`).
    var dedupeLimits: DedupeWindow.Limits {
        DedupeWindow.Limits(perClient: dedupePerClient, clients: dedupeClients)
    }

    /// What a connection's decoder accepts before the handshake: one small,
    /// uncompressed Hello (``DecoderLimits/preAuth`` with the configured frame size).
    var preAuthDecoderLimits: DecoderLimits {
        var limits = DecoderLimits.preAuth
        limits.maxFrameBytes = preAuthMaxFrameBytes
        limits.allowCompressed = false
        return limits
    }

    /// What a connection's decoder accepts after the handshake: ``DecoderLimits/server``
    /// with the configured frame sizes, list names and the director's limits.
    var readyDecoderLimits: DecoderLimits {
        var limits = DecoderLimits.server
        limits.maxFrameBytes = maxFrameBytes
        limits.maxInflatedBytes = maxInflatedBytes
        limits.maxOpsPerMutation = director.maxOpsPerMutation
        limits.maxIDBytes = director.maxIDBytes
        limits.maxKindBytes = director.maxKindBytes
        limits.maxPayloadBytes = director.maxPayloadBytes
        limits.maxListNameBytes = maxListNameBytes
        limits.allowCompressed = true
        return limits
    }

    /// The limits announced in `Welcome`: what ``readyDecoderLimits`` enforces, so a
    /// client can refuse an oversize write before sending it.
    var welcomeLimits: ServerLimits {
        ServerLimits(decoderLimits: readyDecoderLimits, maxListsPerConnection: maxListsPerConnection)
    }

    /// The connection machine's part of the configuration (`verifiesTokens` from the
    /// effective auth mode, which depends on the address really bound).
    func connectionConfiguration(verifiesTokens: Bool) -> ConnectionStateMachine.Configuration {
        ConnectionStateMachine.Configuration(
            maxListsPerConnection: maxListsPerConnection, maxListNameBytes: maxListNameBytes,
            verifiesTokens: verifiesTokens, heartbeatMilliseconds: UInt64(heartbeatMilliseconds))
    }

    /// The frame encoder's compression. Level 0 means "never compress" (zlib's own level
    /// 0 would still wrap stored blocks in a stream, all cost and no gain). The standard
    /// dictionary is announced either way, since clients may compress what they send.
    var frameCompression: CompressionConfiguration {
        if compressionLevel == 0 {
            return CompressionConfiguration(threshold: .max, level: 1, dictionary: .standard)
        }
        return CompressionConfiguration(
            threshold: compressionThresholdBytes, level: Int32(compressionLevel), dictionary: .standard)
    }

    /// The store `[storage]` names: a ``FileStore`` in the data directory by default.
    func makeStore(loop: EventLoop, logger: Logger) -> ListStore {
        if let postgres = cluster.postgres {
            // Beyond loopback, TLS with the server verified unless the string says
            // otherwise (PostgresTLS; docs/CLUSTER.md, "TLS to PostgreSQL").
            let secured = PostgresTLS.defaultingToVerifyFull(postgres)
            if let warning = secured.warning { logger.warning("\(warning)") }
            var options = ClusterStore.Options(
                conninfo: secured.conninfo, node: cluster.node, leaseMilliseconds: cluster.leaseMilliseconds,
                snapshotEveryBatches: snapshotEveryBatches, snapshotEveryBytes: snapshotEveryBytes)
            options.peerSecretFile = cluster.peerSecretFile
            options.peerHost = cluster.peerHost ?? listen.host
            options.peerPort = cluster.peerPort
            options.peerMaxQueuedBytes = cluster.peerMaxQueuedBytes
            return ClusterStore(options: options, loop: loop, logger: logger)
        }
        switch storageEngine {
        case .file: return FileStore(directory: dataDirectory, options: fileStoreOptions)
        case .memory: return InMemoryStore(snapshotEveryBatches: snapshotEveryBatches)
        }
    }
}
