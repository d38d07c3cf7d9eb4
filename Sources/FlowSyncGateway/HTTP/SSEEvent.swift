import FlowSyncGatewayCore
import FlowSyncProtocol

/// A daemon message as one Server-Sent Event (the WHATWG `text/event-stream` format):
///
/// ```
/// id: EPOCH:VERSION        (the position after the event: a reconnect's Last-Event-ID)
/// event: snapshot | diff | error
/// data: <one JSON object>
/// ```
///
/// JSON text may hold line breaks only as whitespace (a payload embedded verbatim), so a
/// CR becomes a space and each LF starts another `data:` line, which the client joins
/// back with LF: the JSON value is unchanged.
enum SSEEvent {
    static func encode(_ message: Message) -> [UInt8]? {
        switch message {
        case .snapshot(let snapshot):
            return event(
                id: ListPosition.text(snapshot.position), name: "snapshot", json: ChangeJSON.snapshot(snapshot))
        case .diff(let diff):
            return event(id: ListPosition.text(diff.to), name: "diff", json: ChangeJSON.diff(diff))
        case .error(let error):
            return event(id: nil, name: "error", json: Problem.daemon(code: error.code, message: error.message).json)
        default:
            return nil
        }
    }

    static func event(id: String?, name: String, json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count + 64)
        if let id { out += Array("id: \(id)\n".utf8) }
        out += Array("event: \(name)\ndata: ".utf8)
        for byte in json {
            switch byte {
            case 0x0D: out.append(0x20)
            case 0x0A: out += Array("\ndata: ".utf8)
            default: out.append(byte)
            }
        }
        out += [0x0A, 0x0A]
        return out
    }
}
