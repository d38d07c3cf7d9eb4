import FlowSyncCore
import FlowSyncProtocol

/// The gateway's messages to a browser on the WebSocket, as JSON text
/// (docs/GATEWAY.md, "WebSocket").
///
/// ```
/// {"type":"snapshot", …}   the SSE `snapshot` event's object (ChangeJSON), with a type
/// {"type":"diff", …}       the SSE `diff` event's object, with a type
/// {"type":"ack","list","id","committed":{"epoch","version"}}
/// {"type":"reject","list","id","problem":{…}}
/// {"type":"error","list"?,"id"?,"problem":{…}}
/// ```
///
/// Not guaranteed: an `ack` and the `diff` carrying the same write arrive in either order
/// (the write and the subscription use different daemon links).
public enum WebSocketServerMessage {
    /// A daemon Snapshot.
    public static func snapshot(_ snapshot: Snapshot) -> [UInt8] { ChangeJSON.snapshot(snapshot, type: "snapshot") }

    /// A daemon Diff.
    public static func diff(_ diff: Diff) -> [UInt8] { ChangeJSON.diff(diff, type: "diff") }

    /// A committed write.
    public static func ack(list: String, id: String, committed: ListVersion) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.member("type", "ack")
        w.member("list", list)
        w.member("id", id)
        w.key("committed")
        ModelJSON.write(committed, into: &w)
        w.endObject()
        return w.bytes
    }

    /// A refused write: the daemon's code or the gateway's, as a problem document.
    public static func reject(list: String, id: String, problem: Problem) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.member("type", "reject")
        w.member("list", list)
        w.member("id", id)
        w.key("problem")
        w.raw(problem.json)
        w.endObject()
        return w.bytes
    }

    /// A refused message, or a subscription the daemon ended; `list` and `id` name what
    /// it was about when known.
    public static func error(list: String?, id: String?, problem: Problem) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.member("type", "error")
        if let list { w.member("list", list) }
        if let id { w.member("id", id) }
        w.key("problem")
        w.raw(problem.json)
        w.endObject()
        return w.bytes
    }
}
