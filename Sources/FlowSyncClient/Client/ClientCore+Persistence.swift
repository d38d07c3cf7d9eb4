import FlowSyncCore
import FlowSyncProtocol

/// The shell's side of persistence and of the app's lifecycle calls: loading a list
/// from disk before subscribing, queueing file writes (and, with persistence, every
/// frame behind them), and the calls that flush them (pause, unsubscribe, close).
extension ClientCore {
    // MARK: Persistence

    /// Subscribes to `name`, first loading what a previous launch stored for it (outside
    /// the lock: disk reads and decoding).
    func subscribe(_ name: String) {
        guard !read({ $0.session.lists[name] != nil }) else { return }
        let restored = directory?.load(list: name)
        withLock { state in
            guard state.session.lists[name] == nil else { return }
            state.failures[name] = nil  // an unsubscribed list starts afresh
            if let restored {
                state.persistence?.restored(list: name, position: restored.position, pending: restored.pending)
            }
            perform(state.session.subscribe(name, restoring: restored), &state)
        }
    }

    /// Queues the file writes the session's new state makes due, on the directory's
    /// serial queue, in the order they were captured (the generation order).
    ///
    /// Why a queue: the loop thread must never wait for a disk, and an app that sets
    /// ``PersistenceOptions/waitsForDisk`` to false must not either (an edit with two
    /// `fsync`s costs 10–20 ms on a busy disk like this machine's; a frame is 16 ms).
    /// The order is what keeps the files consistent: every frame is sent from the same
    /// queue too (``send(_:_:)``), so a Mutate leaves only after the pending file that
    /// marks it sent. Edit calls with `waitsForDisk` (the default) wait for the queue
    /// (``waitForDiskIfConfigured()``); otherwise a kill may lose the newest edits —
    /// never one that was sent. ``flushPersistence()``, `pause()` and `close()` wait.
    ///
    /// - Parameter flush: Write every replica that is behind, and wait (after the lock
    ///   is released) until everything queued is on disk.
    func persist(_ state: inout State, flush: Bool = false) {
        guard let directory, state.persistence != nil, !state.shutDown else { return }
        let actions = state.persistence!.observe(state.session, now: Self.now(), flush: flush)
        var jobs: [ReplicaDirectory.Job] = []
        for action in actions {
            state.persistGeneration += 1
            jobs.append(ReplicaDirectory.Job(generation: state.persistGeneration, action: action))
        }
        let written: @Sendable (String, ListVersion) -> Void = { [weak self] name, position in
            self?.update { $0.persistence?.replicaWritten(list: name, at: position) }
        }
        directory.perform(jobs, replicaWritten: written)
        if flush { state.afterUnlock.append { directory.drain() } }
    }

    /// With ``PersistenceOptions/waitsForDisk``: returns once everything queued (the
    /// edit just made among it) is on disk. Called by the edit calls, after the lock is
    /// released, on the app's thread.
    func waitForDiskIfConfigured() {
        guard configuration.persistence?.waitsForDisk == true, let directory else { return }
        directory.drain()
    }

    /// Sends `frame` on connection `connection`. With persistence it goes through the
    /// directory's queue, behind the file writes captured before it (a Mutate behind
    /// its "sent" mark), and every frame takes that path so they keep their order; it
    /// is dropped if the connection changed meanwhile (its bytes were compressed for
    /// the old one).
    func send(_ frame: [UInt8], _ state: State) {
        guard let directory else {
            transport.send([frame])
            return
        }
        let connection = state.connection
        directory.enqueue { [weak self] in
            guard let self else { return }
            // Checked and sent under the lock: a reconnect (which runs under it) cannot
            // slip between the check and the send.
            self.withLock { state in
                if state.connection == connection && !state.shutDown { self.transport.send([frame]) }
            }
        }
    }

    /// Stops following `name` (its replica is written first, with persistence).
    func unsubscribe(_ name: String) {
        withLock { state in
            guard state.session.lists[name] != nil else { return }
            persist(&state, flush: true)
            // Its observers go with it: a later subscription starts from empty.
            state.observers[name] = nil
            state.silenced[name] = nil
            perform(state.session.unsubscribe(name), &state)
            state.delivered[name] = nil
        }
    }

    /// Background: the connection closes, replicas are written.
    func pause() {
        withLock { state in
            persist(&state, flush: true)
            perform(state.session.pause(now: Self.now()), &state)
        }
    }

    /// Foreground, or a network path appeared.
    func reconnectNow() {
        let token = freshToken()
        input { session in
            if let token { session.useToken(token) }
            return session.reconnectNow(now: Self.now())
        }
    }

    /// Writes every list that is behind, and waits until everything queued is on disk.
    func flushPersistence() {
        withLock { persist(&$0, flush: true) }
    }

    /// Test hook: stops like a killed process — no more file writes (queued ones are
    /// dropped), no more frames, no goodbye to the server.
    ///
    /// All of it under the client's lock, so no input is cut halfway: a real process
    /// writes a Mutate's "sent" mark (under this lock) before the frame can leave, and
    /// a kill cannot reorder the two. Disabling the directory first and stopping the
    /// session afterwards let a Mutate leave whose mark was dropped (the relaunch then
    /// held that write as unsent, and lost it from its files once a Diff named it: the
    /// "view lacks a committed write" cases of the kill test were this hook's).
    func abandonForTesting() {
        withLock { state in
            directory?.disable()
            state.shutDown = true
            state.connection += 1  // nothing more from this connection is read
            // No more sends, reconnects or pings; the actions (failing the tickets, the
            // goodbye) are dropped, as a killed process carries out none.
            _ = state.session.close()
        }
        transport.shutdown()
    }
}
