import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol

/// Writes that cross nodes through PostgreSQL (docs/CLUSTER.md, "Writes on a
/// replica"): a node forwards a write to its list's owner through `fs_inbox`; the owner
/// takes it (only while it owns the list at its term), sequences it, and answers in a
/// notification (`fs_answers`; `fs_outbox` when too long for one); the answers go back
/// to the node the write came from.
extension ClusterStore {
    public func forward(_ mutate: Mutate) {
        let body = encoder.encode(.mutate(mutate))
        // Straight to the owner when a link to it is ready (`ClusterStore+PeerLinks`,
        // rule 4); PostgreSQL otherwise, exactly as without links.
        if forwardOverLink(mutate.listName, body: body) { return }
        withLog { [weak self] log in
            log.forward(list: mutate.listName, body: body) { [weak self] result in
                // A failed forward is tried again when the write is overdue.
                if case .failure(let error) = result, !error.outcomeUnknown {
                    self?.logger.error(
                        "cluster: forwarding a write failed",
                        metadata: ["flowsync.list": "\(mutate.listName)", "error": "\(error)"])
                }
            }
        }
    }

    /// Takes the writes forwarded to `name` (only while this node owns it at its term)
    /// and hands them to the server. When the log says this node does not own it at
    /// that term, the belief is stale (``ownershipFoundStale(_:term:)``).
    func takeInbox(_ name: String, _ log: ClusterLog) {
        guard let ownership = lists[name].owned?.ownership else { return }
        log.takeInbox(list: name, term: ownership.term) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                if !error.outcomeUnknown {
                    logger.error(
                        "cluster: taking forwarded writes failed",
                        metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
                }
            case .success(let take):
                guard take.owned else {
                    // Not this node's at that term (a nudge to claim a list released to
                    // it, read as forwarded writes): the row is read, and a free list
                    // claimed by its preferred node (Placement, rule 6). The stale copy
                    // itself is dropped by the claim that ended its term, not here: a
                    // soak saw this read race the node's own reclaim after a failover.
                    reclaimIfFree(name)
                    return
                }
                let entries = take.entries
                guard !entries.isEmpty else { return }
                var writes: [ForwardedWrite] = []
                for entry in entries {
                    // Whether the origin's build reads answers from their notification.
                    if entry.answerByNotification {
                        originsAnsweredByNotification.insert(entry.origin)
                    } else {
                        originsAnsweredByNotification.remove(entry.origin)
                    }
                    let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
                    decoder.feed(entry.body)
                    guard case .mutate(let mutate)? = try? decoder.next(), mutate.listName == name,
                        decoder.bufferedByteCount == 0
                    else {
                        logger.error(
                            "cluster: a forwarded write does not decode; dropped",
                            metadata: ["flowsync.list": "\(name)", "origin": "\(entry.origin)"])
                        continue
                    }
                    writes.append(ForwardedWrite(origin: entry.origin, mutate: mutate))
                }
                if !writes.isEmpty { onForwarded?(name, writes) }
            }
        }
    }

    public func answer(_ answers: [WriteAnswer]) {
        guard !answers.isEmpty else { return }
        // Decided now, per origin: whether it reads answers from their notification.
        let byNotification = answers.map { originsAnsweredByNotification.contains($0.origin) }
        var overPostgres: [(WriteAnswer, Bool)] = []
        for (answer, notify) in zip(answers, byNotification) {
            // Back over the origin's link when one is ready (`ClusterStore+PeerLinks`, rule 5).
            if answerOverLink(Self.answerRow(answer)) { continue }
            overPostgres.append((answer, notify))
        }
        guard !overPostgres.isEmpty else { return }
        withLog { log in
            for (answer, notify) in overPostgres {
                log.answer(Self.answerRow(answer), byNotification: notify) { _ in }
            }
        }
    }

    /// `answer` as the row PostgreSQL (or a link) carries.
    static func answerRow(_ answer: WriteAnswer) -> ClusterLog.Answer {
        let (epoch, version, code, message): (Int64, Int64, Int, String)
        switch answer.result {
        case .committed(let position):
            (epoch, version, code, message) = (Int64(position.epoch), Int64(position.version), 0, "")
        case .rejected(let wire, let text): (epoch, version, code, message) = (0, 0, Int(wire.rawValue), text)
        }
        return ClusterLog.Answer(
            origin: answer.origin, list: answer.list, clientID: answer.clientID, seq: Int64(answer.seq), epoch: epoch,
            version: version, code: code, message: message)
    }

    func takeOutbox(_ log: ClusterLog) {
        log.takeOutbox { [weak self] result in
            guard let self, case .success(let rows) = result, !rows.isEmpty else { return }
            onAnswers?(rows.map(Self.writeAnswer))
        }
    }

    /// An answer notified with its content (``ClusterLog/answersChannel``), for this
    /// node or another.
    func answerNotified(_ payload: String) {
        guard let row = ClusterLog.parseAnswerNotification(payload), row.origin == options.node else { return }
        onAnswers?([Self.writeAnswer(row)])
    }

    static func writeAnswer(_ row: ClusterLog.Answer) -> WriteAnswer {
        let result: WriteAnswer.Result =
            row.code == 0
            ? .committed(ListVersion(epoch: UInt64(row.epoch), version: UInt64(row.version)))
            : .rejected(ErrorCode(rawValue: UInt16(clamping: row.code)), row.message)
        return WriteAnswer(
            origin: row.origin, list: row.list, clientID: row.clientID, seq: UInt64(row.seq), result: result)
    }
}
