import FlowSyncCore

// Message bodies (`docs/PROTOCOL.md`, "Messages"): each body is its fields in the
// order written here, with nothing before or after. The frame header has already
// carried the type, so bodies have no tag of their own.

extension WireWriter {
    /// Writes `message`'s body (not its frame header).
    mutating func body(_ message: Message) {
        switch message {
        case .hello(let m):
            bytes.append(contentsOf: ProtocolVersion.helloMagic)
            u16(m.minVersion)
            u16(m.maxVersion)
            string(m.clientName)
            string(m.clientID)
            optionalString(m.authToken)
        case .welcome(let m):
            u16(m.version)
            string(m.serverName)
            let l = m.limits
            for v in [
                l.maxFrameBytes, l.maxInflatedBytes, l.maxOpsPerMutation, l.maxListsPerConnection,
                l.maxListNameBytes, l.maxIDBytes, l.maxPayloadBytes,
            ] { varint(UInt64(v)) }
            varint(UInt64(m.heartbeatMilliseconds))
            blob(m.dictionary)
        case .subscribe(let m):
            string(m.listName)
            if let r = m.resumeFrom {
                u8(1)
                listVersion(r)
            } else {
                u8(0)
            }
            if let d = m.digest {
                u8(1)
                u64(d.rawValue)
            } else {
                u8(0)
            }
        case .unsubscribe(let m):
            string(m.listName)
        case .snapshot(let m):
            string(m.listName)
            listVersion(m.position)
            u64(m.digest.rawValue)
            u8(m.reason.rawValue)
            sections(m.sections)
        case .diff(let m):
            string(m.listName)
            varint(m.epoch)
            varint(m.fromVersion)
            varint(m.toVersion)
            u64(m.digest.rawValue)
            changeset(m.changeset)
            index(m.mutations.count)
            for id in m.mutations {
                string(id.clientID)
                varint(id.seq)
            }
        case .mutate(let m):
            string(m.listName)
            string(m.clientID)
            varint(m.seq)
            listVersion(m.base)
            index(m.operations.count)
            for op in m.operations { operation(op) }
        case .ack(let m):
            string(m.listName)
            varint(m.seq)
            listVersion(m.committed)
        case .reject(let m):
            string(m.listName)
            varint(m.seq)
            u16(m.code.rawValue)
            string(m.message)
        case .error(let m):
            u16(m.code.rawValue)
            string(m.message)
            reaction(m.reaction)
            optionalString(m.listName)
            bool(m.closesConnection)
        case .ping(let m):
            varint(m.nonce)
        case .pong(let m):
            varint(m.nonce)
        case .notice(let m):
            u8(m.kind.rawValue)
            string(m.message)
            varint(UInt64(m.delayMilliseconds))
        case .statsRequest(let m):
            varint(m.requestID)
            optionalString(m.listName)
        case .refreshToken(let m):
            string(m.token)
        case .statsReply(let m):
            varint(m.requestID)
            index(m.entries.count)
            for e in m.entries {
                string(e.name)
                u64(UInt64(bitPattern: e.value))
            }
        case .backupRequest(let m):
            varint(m.requestID)
            string(m.directory)
        case .backupReply(let m):
            varint(m.requestID)
            u16(m.failure?.rawValue ?? 0)
            string(m.message)
            varint(m.lists)
            varint(m.bytes)
        }
    }

    mutating func reaction(_ r: ClientReaction) {
        u8(r.tag)
        if case .backoff(let ms) = r { varint(UInt64(ms)) }
    }
}

extension WireReader {
    /// Reads the body of a message of `type`; the whole body must be consumed.
    mutating func body(of type: MessageType) throws(ProtocolError) -> Message {
        let message: Message
        switch type {
        case .hello: message = .hello(try hello())
        case .welcome: message = .welcome(try welcome())
        case .subscribe:
            let name = try listName()
            let resume: ListVersion? = try bool("resume presence") ? try listVersion("resume position") : nil
            let digest: StateDigest? = try bool("digest presence") ? StateDigest(rawValue: try u64("digest")) : nil
            message = .subscribe(Subscribe(listName: name, resumeFrom: resume, digest: digest))
        case .unsubscribe:
            message = .unsubscribe(Unsubscribe(listName: try listName()))
        case .snapshot:
            let name = try listName()
            let position = try listVersion("position")
            let digest = StateDigest(rawValue: try u64("digest"))
            let raw = try u8("snapshot reason")
            guard let reason = Snapshot.Reason(rawValue: raw) else {
                throw Self.malformed("unknown snapshot reason \(raw)")
            }
            let sections = try sections("sections")
            message = .snapshot(
                Snapshot(listName: name, position: position, digest: digest, reason: reason, sections: sections))
        case .diff:
            let name = try listName()
            let epoch = try varint("epoch")
            let from = try varint("from version")
            let to = try varint("to version")
            let digest = StateDigest(rawValue: try u64("digest"))
            let changeset = try changeset()
            let n = try count("mutation IDs", minBytes: 2, limit: limits.maxMutationsPerDiff, code: .tooManyElements)
            var ids: [MutationID] = []
            ids.reserveCapacity(n)
            for _ in 0..<n {
                let client = try clientID()
                ids.append(MutationID(clientID: client, seq: try varint("sequence number")))
            }
            message = .diff(
                Diff(
                    listName: name, epoch: epoch, fromVersion: from, toVersion: to, digest: digest,
                    changeset: changeset, mutations: ids))
        case .mutate:
            let name = try listName()
            let client = try clientID()
            let seq = try varint("sequence number")
            let base = try listVersion("base")
            message = .mutate(
                Mutate(listName: name, clientID: client, seq: seq, base: base, operations: try operations()))
        case .ack:
            let name = try listName()
            let seq = try varint("sequence number")
            message = .ack(Ack(listName: name, seq: seq, committed: try listVersion("committed position")))
        case .reject:
            let name = try listName()
            let seq = try varint("sequence number")
            let code = ErrorCode(rawValue: try u16("error code"))
            message = .reject(Reject(listName: name, seq: seq, code: code, message: try text("message")))
        case .error:
            let code = ErrorCode(rawValue: try u16("error code"))
            let text = try text("message")
            let reaction = try reaction()
            let list = try optionalString("list name", maxBytes: limits.maxListNameBytes, code: .idTooLong)
            let closes = try bool("closes connection")
            message = .error(
                ErrorMessage(code: code, message: text, reaction: reaction, listName: list, closesConnection: closes))
        case .ping: message = .ping(Ping(nonce: try varint("nonce")))
        case .pong: message = .pong(Pong(nonce: try varint("nonce")))
        case .notice:
            let raw = try u8("notice kind")
            guard let kind = Notice.Kind(rawValue: raw) else { throw Self.malformed("unknown notice kind \(raw)") }
            let text = try text("message")
            message = .notice(Notice(kind: kind, message: text, delayMilliseconds: try u32Varint("delay")))
        case .statsRequest:
            let id = try varint("request ID")
            message = .statsRequest(
                StatsRequest(
                    requestID: id,
                    listName: try optionalString("list name", maxBytes: limits.maxListNameBytes, code: .idTooLong)))
        case .refreshToken:
            message = .refreshToken(RefreshToken(token: try text("token")))
        case .statsReply:
            let id = try varint("request ID")
            let n = try count("stats entries", minBytes: 9, limit: limits.maxStatsEntries, code: .tooManyElements)
            var entries: [StatsReply.Entry] = []
            entries.reserveCapacity(n)
            for _ in 0..<n {
                let name = try text("stat name")
                entries.append(StatsReply.Entry(name: name, value: Int64(bitPattern: try u64("stat value"))))
            }
            message = .statsReply(StatsReply(requestID: id, entries: entries))
        case .backupRequest:
            let id = try varint("request ID")
            message = .backupRequest(BackupRequest(requestID: id, directory: try text("backup directory")))
        case .backupReply:
            let id = try varint("request ID")
            let code = try u16("error code")
            let text = try text("message")
            let lists = try varint("lists")
            message = .backupReply(
                BackupReply(
                    requestID: id, failure: code == 0 ? nil : ErrorCode(rawValue: code), message: text, lists: lists,
                    bytes: try varint("bytes")))
        }
        try expectEnd("\(type)")
        return message
    }

    mutating func listName() throws(ProtocolError) -> String {
        try string("list name", maxBytes: limits.maxListNameBytes, code: .idTooLong)
    }

    mutating func clientID() throws(ProtocolError) -> String {
        try string("client ID", maxBytes: limits.maxIDBytes, code: .idTooLong)
    }

    mutating func text(_ what: String) throws(ProtocolError) -> String {
        try string(what, maxBytes: limits.maxTextBytes, code: .payloadTooLarge)
    }

    mutating func hello() throws(ProtocolError) -> Hello {
        for expected in ProtocolVersion.helloMagic {
            guard try u8("Hello magic") == expected else {
                throw ProtocolError(
                    code: .unsupportedProtocolVersion, message: "the Hello does not start with the FSYN magic")
            }
        }
        let minVersion = try u16("minimum version")
        let maxVersion = try u16("maximum version")
        let name = try text("client name")
        let client = try clientID()
        let token = try optionalString("auth token", maxBytes: limits.maxTextBytes, code: .payloadTooLarge)
        return Hello(
            minVersion: minVersion, maxVersion: maxVersion, clientName: name, clientID: client, authToken: token)
    }

    mutating func welcome() throws(ProtocolError) -> Welcome {
        let version = try u16("version")
        let name = try text("server name")
        let limits = ServerLimits(
            maxFrameBytes: try u32Varint("max frame bytes"),
            maxInflatedBytes: try u32Varint("max inflated bytes"),
            maxOpsPerMutation: try u32Varint("max ops per mutation"),
            maxListsPerConnection: try u32Varint("max lists per connection"),
            maxListNameBytes: try u32Varint("max list name bytes"),
            maxIDBytes: try u32Varint("max ID bytes"),
            maxPayloadBytes: try u32Varint("max payload bytes")
        )
        let heartbeat = try u32Varint("heartbeat")
        let dictionary = try blob("dictionary", maxBytes: self.limits.maxDictionaryBytes, code: .payloadTooLarge)
        return Welcome(
            version: version, serverName: name, limits: limits, heartbeatMilliseconds: heartbeat, dictionary: dictionary
        )
    }

    mutating func reaction() throws(ProtocolError) -> ClientReaction {
        switch try u8("reaction") {
        case 0: return .retry
        case 1: return .resync
        case 2: return .giveUp
        case 3: return .backoff(milliseconds: try u32Varint("back-off delay"))
        case 4: return .refreshToken
        case let tag: throw Self.malformed("unknown reaction \(tag)")
        }
    }
}
