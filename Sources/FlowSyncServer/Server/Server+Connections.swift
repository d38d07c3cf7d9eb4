import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// Connection work: accept, decode, carry out the ``ConnectionStateMachine``'s actions,
/// close, and the 100 ms sweep of deadlines. The machine decides; this file only does
/// what its actions say and answers the ones that need the world (a token check, a
/// list lookup) with the matching event.
extension Server {
    func accept(_ tcp: TCPConnection) {
        guard !lifecycle.isShuttingDown, connections.count < configuration.maxConnections,
            pendingHandshakes.count < configuration.auth.maxPendingHandshakes
        else {
            events.connectionRefused(
                budgetExhausted: pendingHandshakes.count >= configuration.auth.maxPendingHandshakes)
            tcp.close()
            return
        }
        let id = nextConnectionID
        nextConnectionID += 1
        tcp.setKeepAlive(seconds: configuration.tcpKeepaliveSeconds)
        let machine = ConnectionStateMachine(
            now: loop.now,
            handshakeTimeout: UInt64(configuration.handshakeTimeoutMilliseconds),
            configuration: configuration.connectionConfiguration(verifiesTokens: verifier != nil)
        )
        let connection = Connection(
            id: id, tcp: tcp, machine: machine, decoder: FrameDecoder(limits: configuration.preAuthDecoderLimits),
            verifier: verifier, logger: logger)
        connections[id] = connection
        pendingHandshakes.insert(id)
        events.connectionAccepted(open: connections.count)
        tcp.onRead = { [weak self, weak connection] bytes in
            guard let self, let connection else { return }
            received(bytes, on: connection)
        }
        tcp.onEnd = { [weak self, weak connection] error in
            guard let self, let connection else { return }
            peerEnded(connection, error)
        }
        tcp.onDrain = { [weak self, weak connection] in
            guard let self, let connection else { return }
            drained(connection)
        }
        // On a TLS listener, reads and the end go through the connection's channel.
        attachTLS(to: connection, tcp: tcp)
        do {
            try tcp.startReading()
        } catch {
            peerEnded(connection, error)
            return
        }
        connection.logger.debug("accepted", metadata: ["peer": "\(connection.peer)"])
        onStatusChange?()
    }

    /// Plaintext from the peer (straight from the socket, or decrypted by its TLS channel).
    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        guard !connection.isClosing else { return }
        connection.machine.bytesReceived(now: loop.now)
        connection.decoder.feed(bytes)
        while !connection.isClosing {
            let message: Message?
            do {
                message = try connection.decoder.next()
            } catch {
                perform(connection.machine.decodeFailed(error, now: loop.now), on: connection)
                return
            }
            guard let message else { return }
            perform(connection.machine.receivedMessage(message, now: loop.now), on: connection)
        }
    }

    /// Carries out an action of the connection's machine. With lists on demand, an
    /// action about a list that is not loaded waits for its load (``waitsForLoad``) and
    /// comes back here with `listLoaded`.
    func perform(_ action: ConnectionStateMachine.Action, on connection: Connection, listLoaded: Bool = false) {
        if !listLoaded, let name = action.listToLoad, waitsForLoad(name, action, on: connection) { return }
        switch action {
        case .none:
            break
        case .verifyToken(let token):
            // Synchronous (the keys are loaded; jwt-kit's verify does not block), so the
            // answer comes back before the connection's next message is decoded.
            guard let verifier = connection.verifier else {
                preconditionFailure(
                    "Internal inconsistency in Server: a machine that verifies tokens without a verifier")
            }
            perform(connection.machine.tokenVerified(verifier.verify(token), now: loop.now), on: connection)
        case .welcome(let version):
            // After Welcome, compressed frames in both directions use the dictionary it
            // announces (docs/PROTOCOL.md, "Preset dictionary").
            let dictionary = encoder.configuration.dictionary
            pendingHandshakes.remove(connection.id)
            connection.decoder.limits = configuration.readyDecoderLimits
            connection.decoder.dictionary = dictionary
            send(
                .welcome(
                    Welcome(
                        version: version, serverName: configuration.serverName, limits: configuration.welcomeLimits,
                        heartbeatMilliseconds: UInt32(configuration.heartbeatMilliseconds),
                        dictionary: dictionary?.bytes ?? [])), to: connection)
            connection.logger.debug(
                "handshake",
                metadata: [
                    "client": "\(connection.machine.session?.clientName ?? "")",
                    "clientID": "\(connection.machine.session?.clientID ?? "")",
                ])
        case .subscribe(let request):
            if listLoaded, let refusal = recheckDeferredSubscribe(request.listName, connection) {
                send(.error(refusal), to: connection)
                return
            }
            subscribe(connection, request)
        case .refreshed(let dropped):
            for name in dropped {
                leave(name, connection)
                send(
                    .error(
                        ErrorMessage(
                            code: .forbidden, message: "the refreshed token does not grant reading \"\(name)\"",
                            listName: name, closesConnection: false)), to: connection)
            }
            connection.logger.debug("token refreshed", metadata: ["dropped": "\(dropped)"])
        case .reject(let reject):
            send(.reject(reject), to: connection)
            events.mutationRejected(code: reject.code.rawValue)
        case .unsubscribe(let name):
            leave(name, connection)
        case .mutate(let mutate):
            guard let list = host(for: mutate.listName, create: configuration.autoCreateLists) else {
                send(
                    .reject(
                        Reject(
                            listName: mutate.listName, seq: mutate.seq, code: .unknownList,
                            message: "no list \"\(mutate.listName)\"")), to: connection)
                events.mutationRejected(code: ErrorCode.unknownList.rawValue)
                return
            }
            list.lastActive = loop.now
            if let replicating = clusterNode, replicating.isReplica(list.name) {
                forward(mutate, from: connection, to: replicating)
                return
            }
            if list.handingOver {
                // Neither sequenced here nor forwarded yet: the outcome decides.
                park(mutate, from: connection)
                return
            }
            list.submit(
                MutationRequest(
                    clientID: mutate.clientID, seq: mutate.seq, base: mutate.base, operations: mutate.operations),
                tag: connection.id,
                now: outbox.clock())
            outbox.dirtyLists.insert(list.name)
        case .pong(let nonce):
            send(.pong(Pong(nonce: nonce)), to: connection)
        case .stats(let request, let grant):
            send(
                .statsReply(
                    StatsReply(
                        requestID: request.requestID, entries: statsEntries(list: request.listName, grant: grant))),
                to: connection)
        case .backup(let request):
            backup(request, for: connection)
        case .sendBackupReply(let reply):
            send(.backupReply(reply), to: connection)
        case .sendError(let error):
            send(.error(error), to: connection)
        case .close(let error, let leaving):
            if error.code == .handshakeTimeout { tlsHandshakeTimedOut(connection) }
            closeNow(connection, with: error, leaving: leaving)
        }
    }

    /// The answer to ``ConnectionStateMachine/Action/subscribe(_:)``.
    private func subscribe(_ connection: Connection, _ request: Subscribe) {
        guard let list = host(for: request.listName, create: configuration.autoCreateLists) else {
            perform(connection.machine.listNotFound(request.listName), on: connection)
            return
        }
        // Seal first, so the subscriber starts exactly at a committed version and the
        // mutations already queued this turn arrive as a normal diff.
        if list.hasPending { seal(list) }
        let first = firstFrame(
            for: connection, of: list, from: request.resumeFrom, digest: request.digest,
            cause: request.resumeFrom == nil ? .subscribe : .resume)
        // The flow first, then the frame: a frame that passes the hard limit closes a
        // connection whose subscription is already recorded (and so is left with it).
        let slot = connection.machine.subscriptionStarted(list.name, flow: first.flow)
        list.addSubscriber(connection, slot: slot)
        list.lastActive = loop.now
        if let frame = first.frame { enqueue(frame, to: connection, about: list.name) }
        recordListGauges()
        onStatusChange?()
    }

    /// A subscription ended (unsubscribe, a refreshed token): leave its list, and drop
    /// the list if nobody needs it any more.
    private func leave(_ name: String, _ connection: Connection) {
        guard let list = lists[name] else { return }
        list.removeSubscriber(connection)
        list.lastActive = loop.now
        dropIfDisposable(list)
    }

    private func drained(_ connection: Connection) {
        connection.drained()
        catchUpLaggingFlows(of: connection)
    }

    func peerEnded(_ connection: Connection, _ error: UVError?) {
        let leaving = connection.machine.peerClosed(now: loop.now)
        connection.discardPending()
        if let error { connection.logger.debug("connection error", metadata: ["error": "\(error)"]) }
        forget(connection, leaving: leaving)
        connection.cut()
    }

    /// Removes a connection from the lists it still subscribes to (`leaving`) and from
    /// the table.
    func forget(_ connection: Connection, leaving: [String]) {
        guard connections[connection.id] != nil else { return }
        // `toFlush` holds it unretained: it stays alive until the flush that lists it.
        // Kept *before* it leaves the table: a flush walking its unretained list calls
        // this (through `peerEnded`) with no reference of its own, so the table's may
        // be the last one — removed first, the connection was freed under this call
        // (a use after free, seen as a SIGSEGV in a test's shutdown).
        outbox.retire(connection)
        connections.removeValue(forKey: connection.id)
        connection.isForgotten = true
        if !commits.gate.isIdle { commits.gate.forget(connection.id) }
        pendingHandshakes.remove(connection.id)
        laggingConnections.remove(connection.id)
        if !relay.forwarded.isEmpty { relay.forwarded.connectionClosed(connection.id) }
        for name in leaving { leave(name, connection) }
        let reason = connection.machine.closing?.reason
        events.connectionClosed(open: connections.count, code: reason?.rawValue)
        recordListGauges()
        connection.logger.debug("closed", metadata: ["reason": "\(reason.map { "\($0)" } ?? "peer")"])
        onStatusChange?()
        finishShutdownIfDone()
    }

    // MARK: Sending

    /// Queues `message` for the connection; `list` names the list whose state it may
    /// show (a Diff, Ack, Reject, Snapshot), so that it waits for that list's pending
    /// commit (``CommitGate``, rule 2).
    func send(_ message: Message, to connection: Connection, about list: String? = nil) {
        enqueue(encoder.encode(message), to: connection, about: list)
    }

    /// Queues a frame for this turn's flush — straight away, or, while a commit is
    /// pending or frames are held, through the commit gate.
    func enqueue(_ frame: [UInt8], to connection: Connection, about list: String? = nil) {
        guard storageFailure == nil else { return }
        // A synchronous store leaves the gate idle: one check, no allocation.
        if !commits.gate.isIdle {
            guard !connection.isClosing else { return }
            guard case .sendNow = commits.gate.route(frame, to: connection.id, about: list) else { return }
        }
        enqueueNow(frame, to: connection)
    }

    /// Queues a frame that nothing holds.
    func enqueueNow(_ frame: [UInt8], to connection: Connection) {
        guard connection.enqueue(frame) else { return }
        queueForFlush(connection)
        if connection.queuedBytes > configuration.hardLimitBytes {
            events.slowConsumer()
            close(connection, code: .slowConsumer, message: "more than \(configuration.hardLimitBytes) bytes queued")
        }
    }

    /// Server-initiated close with a code: the error frame goes out after what is
    /// already queued (best effort), then the socket is shut down at the turn's end.
    func close(_ connection: Connection, code: ErrorCode, message: String) {
        perform(connection.machine.serverCloses(code, message, now: loop.now), on: connection)
    }

    /// Carries out ``ConnectionStateMachine/Action/close(_:leaving:)``: the machine is
    /// already closing (so nothing more is queued), the connection leaves its lists, and
    /// the error is its last frame.
    private func closeNow(_ connection: Connection, with error: ErrorMessage, leaving: [String]) {
        events.closing(code: error.code.rawValue)
        if error.code == .slowConsumer || error.code == .writeTimeout {
            // Its queue is what is wrong: drop this turn's frames so the error is next.
            connection.discardPending()
            connection.logger.warning(
                "closing slow consumer",
                metadata: ["code": "\(error.code.rawValue)", "queued": "\(connection.socketQueuedBytes)"])
        } else {
            connection.logger.info(
                "closing connection", metadata: ["code": "\(error.code.rawValue)", "reason": "\(error.message)"])
        }
        // No more list traffic for it (the list stays even when disposable: the close
        // of the socket, at the turn's end, forgets the connection).
        for name in leaving {
            lists[name]?.removeSubscriber(connection)
            lists[name]?.lastActive = loop.now
        }
        laggingConnections.remove(connection.id)
        connection.enqueueFinal(encoder.encode(.error(error)))
        queueForFlush(connection)
    }

    /// Lists the connection for this turn's flush, once.
    @inline(__always)
    func queueForFlush(_ connection: Connection) {
        outbox.add(connection)
    }

    // MARK: The sweep

    /// Every 100 ms: handshake deadlines, token expiry, write deadlines, stuck closes,
    /// shutdown grace.
    func sweepConnections() {
        let now = loop.now
        if !relay.forwarded.isEmpty { takeOverOverdueLists(now: now) }
        // The timer is due every 100 ms; anything later is time the loop spent elsewhere.
        if housekeeping.lastSweep != 0 {
            metrics.loopLag.recordMilliseconds(
                Int64(now > housekeeping.lastSweep + 100 ? now - housekeeping.lastSweep - 100 : 0))
        }
        housekeeping.lastSweep = now
        var largest = 0
        var total = 0
        let writeDeadline = UInt64(configuration.writeDeadlineMilliseconds)
        let shutdownDeadline = lifecycle.shutdownDeadline
        for connection in Array(connections.values) {
            largest = max(largest, connection.queuedBytes)
            total += connection.queuedBytes
            if let closing = connection.machine.closing {
                // A peer that never reads keeps uv_shutdown pending forever: cut it.
                if now - closing.since > 2_000 || shutdownDeadline.map({ now >= $0 }) == true {
                    connection.cut()
                }
                continue
            }
            perform(connection.machine.tick(now: now, tokenClock: connection.verifier?.now), on: connection)
            if let since = connection.outbound.stalledSince, now - since > writeDeadline {
                close(connection, code: .writeTimeout, message: "queue not drained for \(writeDeadline) ms")
            }
        }
        unloadIdleLists()
        sampleListGauges()
        metrics.largestQueueBytes.record(largest)
        returnFreedMemory(queuedBytes: total, now: now)
        metrics.subscribersPaused.record(laggingConnections.count)
        if let tls { tls.events.recordsCounted(tls.scratch.records) }
        flushAll()
        if let deadline = shutdownDeadline, now >= deadline {
            for connection in connections.values { connection.cut() }
        }
    }
}
