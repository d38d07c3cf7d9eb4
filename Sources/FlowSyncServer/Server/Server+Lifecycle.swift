import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// Start, reload and graceful shutdown: the shell of ``ServerLifecycle``.
extension Server {
    /// Binds the configured address (or adopts `descriptor`, a listening socket handed
    /// over by systemd) and starts serving. Returns the bound port.
    @discardableResult
    /// - Throws: ``ServerStartError``: the store could not be recovered, the `[auth]`
    ///   settings do not fit the address, or the listener could not be bound.
    public func start(adoptingDescriptor descriptor: Int32? = nil) throws(ServerStartError) -> Int {
        if !lifecycle.hasRecovered {
            // Callers that want the recovery report (and --repair) call recover() first.
            do {
                try recover()
            } catch {
                throw .recovery(error)
            }
        }
        // A socket handed over by systemd may listen elsewhere than server.host: judge
        // the default mode (and "off beyond loopback") by the address really bound.
        var listenHost = configuration.host
        if let descriptor { listenHost = AuthConfiguration.boundHost(ofDescriptor: descriptor) ?? "unknown address" }
        if let (key, problem) = configuration.auth.validate(host: listenHost) {
            throw .auth(key: key, problem: problem, host: listenHost)
        }
        switch configuration.auth.effectiveMode(host: listenHost) {
        case .required:
            do {
                verifier = try TokenVerifier(configuration: configuration.auth)
            } catch {
                throw .authKeys("\(error)")
            }
        case .off:
            verifier = nil
            if !AuthConfiguration.isLoopback(listenHost) {
                logger.warning(
                    "auth is OFF on a non-loopback address (auth.allow_off_beyond_loopback): anyone who reaches the port can read and write every list",
                    metadata: ["host": "\(listenHost)"])
            }
        }
        // What the TCP listener speaks (`[tls]`, judged by the address really bound, as
        // auth is), and its certificate pair.
        try startTLS(listenHost: listenHost)
        let listener: TCPListener
        do throws(UVError) {
            if let descriptor {
                listener = try TCPListener(loop: loop, adoptingDescriptor: descriptor)
            } else {
                listener = try TCPListener(
                    loop: loop, address: SocketAddress(host: configuration.host, port: configuration.port))
            }
        } catch {
            throw .listen(error)
        }
        // Handle callbacks capture weakly: a handle's callbacks may outlive the objects
        // they talk to (a close callback after the peer's EOF already forgot the
        // connection), and `unowned` would trap there.
        listener.onConnection = { [weak self] tcp in self?.accept(tcp) }
        listener.onAcceptError = { [weak self] error in
            self?.logger.warning("accept failed", metadata: ["error": "\(error)"])
        }
        handles.listener = listener
        if let path = configuration.unixSocketPath {
            let unix: UnixListener
            do throws(UVError) {
                unix = try UnixListener(loop: loop, path: path, mode: configuration.unixSocketMode)
            } catch {
                listener.close()
                handles.listener = nil
                throw .listen(error)
            }
            unix.onConnection = { [weak self] connection in self?.accept(connection) }
            unix.onAcceptError = { [weak self] error in
                self?.logger.warning("accept failed", metadata: ["error": "\(error)"])
            }
            handles.unixListener = unix
            logger.info(
                "listening",
                metadata: ["unix_socket": "\(path)", "mode": "\(String(configuration.unixSocketMode, radix: 8))"])
        }
        lifecycle.started(now: loop.now)
        logLifecycle()
        // A declared list refused as damaged (on demand) stays refused: creating it would
        // write a new history over the damaged one.
        // In cluster mode a list exists here only once this node claimed it: declared
        // lists load on first use like every other (Server+Loading.swift).
        if storage.cluster == nil {
            for name in configuration.declaredLists where lists.refusal(of: name) == nil {
                _ = host(for: name, create: true, declared: true)
            }
        }
        // Before the hook: the first end of turn already writes through the chosen path.
        startWritePath()
        handles.hook = LoopHook(loop: loop, kind: .check) { [weak self] in self?.endOfTurn() }
        outbox.idle = LoopIdle(loop: loop)
        let sweep = LoopTimer(loop: loop)
        sweep.start(after: 100, repeat: 100) { [weak self] in self?.sweepConnections() }
        sweep.unref()
        handles.sweep = sweep
        if configuration.fsyncPolicy == .interval {
            // Acks leave at once; this timer bounds what an OS crash can lose.
            let timer = LoopTimer(loop: loop)
            let interval = UInt64(configuration.fsyncIntervalMilliseconds)
            timer.start(after: interval, repeat: interval) { [weak self] in self?.syncStore() }
            timer.unref()
            handles.syncTimer = timer
        }
        logger.info("listening", metadata: ["address": "\(configuration.host):\(listener.port)"])
        return listener.port
    }

    /// The port the listener is bound to (0 before ``start(adoptingDescriptor:)``).
    public var port: Int { handles.listener?.port ?? 0 }

    /// Graceful shutdown: stop accepting, seal pending mutations, send every client a
    /// `Notice` (shutting down) and flush, then close. Connections that have not
    /// flushed within the grace period are closed anyway. `completion` runs when every
    /// connection is closed and the server's own handles are closed too (at once when
    /// the server has already stopped; not at all when a shutdown is in progress).
    public func shutdown(_ completion: @escaping () -> Void) {
        switch lifecycle.shutdownRequested(
            now: loop.now, grace: UInt64(configuration.shutdownGraceMilliseconds), completion: completion)
        {
        case .none:
            return
        case .completeNow:
            completion()
            return
        case .begin:
            break
        }
        logLifecycle()
        handles.closeListeners()
        logger.info("shutting down", metadata: ["connections": "\(connections.count)"])
        sealDirtyLists(force: true)
        if commits.gate.pendingCount > 0 {
            // Batches are committing (a CommittingStore): their Acks and Diffs go out
            // first, then the notices (``commitCompleted``); the grace period bounds it.
            commits.closeConnectionsWhenDrained = true
        } else {
            closeConnectionsForShutdown()
        }
        // Everything queued leaves now, not a slice of it: the connections close behind it.
        flushAll(sliced: false)
        finishShutdownIfDone()
        // The sweep timer must keep the loop alive until the grace period ends.
        handles.sweep?.ref()
    }

    /// Every connection gets the shutting-down notice and is closed.
    func closeConnectionsForShutdown() {
        let notice = encoder.encode(
            .notice(Notice(kind: .shuttingDown, message: "server is shutting down", delayMilliseconds: 0)))
        for connection in connections.values {
            connection.enqueue(notice)
            close(connection, code: .serverShuttingDown, message: "server is shutting down")
        }
    }

    /// Completes a shutdown once nothing is left: no connection, no offloaded work
    /// (its completion may install a compaction, so the store must still be open, or
    /// serve subscribers). Called wherever one of the two may have reached zero.
    func finishShutdownIfDone() {
        guard
            let finish = lifecycle.drained(
                connections: connections.count, offloads: offloadsOutstanding + commits.gate.pendingCount)
        else { return }
        handles.closeTimers()
        tls?.close()
        outbox.idle?.close()
        outbox.idle = nil
        if finish.closeStore, storageFailure == nil, let replicating = clusterNode {
            // Cluster mode: this node's lists and lease are given up first, so the
            // nodes with writes waiting for them take them over now, not after a lease
            // (bounded by the store).
            replicating.release { [weak self] in self?.closeStoreAndComplete(finish) }
            return
        }
        closeStoreAndComplete(finish)
    }

    private func closeStoreAndComplete(_ finish: ServerLifecycle.Finish) {
        if finish.closeStore {
            do {
                try store.close()
            } catch {
                storageFailed(error)
            }
        }
        if storageFailure != nil { store.abandon() }
        logLifecycle()
        logger.info("stopped", metadata: ["batches": "\(statistics.batchesCommitted)"])
        finish.completion()
    }

    /// Logs the lifecycle's state after a transition.
    func logLifecycle() {
        logger.debug("lifecycle", metadata: ["state": "\(lifecycle.name)"])
    }

    /// Applies a reloaded configuration: limits, back-pressure, history, compression
    /// and log level take effect now (limits for frames decoded from now on); the
    /// listen address and the data directory need a restart. Returns what changed.
    @discardableResult
    public func reload(_ new: ServerConfiguration) -> [String] {
        // Every reloadable key, by its config name (ServerConfiguration+Reload.swift).
        var changes = configuration.reloadReport(to: new)
        // What needs a restart is kept as whole groups (ServerConfiguration+Reload.swift).
        let reloaded = configuration.reloaded(to: new)
        var applied = reloaded.applied
        let ignored = reloaded.ignored
        if new.auth != configuration.auth {
            // New keys (rotation) apply to handshakes from now on; ready connections
            // keep the grant of the token they were admitted with until it expires.
            switch new.auth.effectiveMode(host: configuration.host) {
            case .off:
                verifier = nil
                changes.append("auth: off")
            case .required:
                do {
                    verifier = try TokenVerifier(configuration: new.auth)
                    changes.append("auth: keys \(new.auth.keys.map(\.kid).joined(separator: ", "))")
                } catch {
                    logger.error("reload: auth keys refused, the old ones stay", metadata: ["error": "\(error)"])
                    applied.auth = configuration.auth
                }
            }
        }
        // The certificate pair is read again (a renewal keeps its paths).
        let tlsReload = reloadTLS(to: applied.tls)
        applied.tls = tlsReload.applied
        changes += tlsReload.changes
        configuration = applied
        encoder = FrameEncoder(configuration: applied.frameCompression)
        for list in lists.hosts {
            list.apply(history: applied.historyLimits, director: applied.director)
        }
        for connection in connections.values where connection.machine.isReady {
            connection.decoder.limits = applied.readyDecoderLimits
        }
        if !ignored.isEmpty {
            logger.warning(
                "reload: these settings need a restart and were not changed",
                metadata: ["keys": "\(ignored.joined(separator: ", "))"])
        }
        return changes
    }
}
