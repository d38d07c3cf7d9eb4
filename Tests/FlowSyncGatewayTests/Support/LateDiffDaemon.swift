import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A scripted daemon on 127.0.0.1 (blocking sockets, a thread per connection) whose every
/// subscription has one Diff still on the wire when the subscriber unsubscribes: the case
/// the pool's Ping/Pong barrier exists for (docs/GATEWAY.md, "The link pool", rule 5),
/// made certain instead of a race.
///
/// The script, per connection:
/// - Hello: a Welcome without heartbeat (so the link sends no Pings of its own).
/// - Subscribe: a Snapshot of the list at the next version, then a Diff from it to the
///   version after, which the script *holds*: the daemon sent it before it read the
///   Unsubscribe, and the network delivers it late.
/// - Unsubscribe: nothing (the held Diff stays on the wire).
/// - Any other frame (a Ping, the next Subscribe): the held Diff first, then the answer
///   (Pong; Snapshot). In order, as TCP delivers: what was sent first arrives first.
///
/// With the barrier, the held Diff reaches the gateway before the Pong, while the link is
/// still the finished GET's; without it, the next GET's Subscribe releases it, and that
/// GET takes the Diff for its answer.
final class LateDiffDaemon: Sendable {
    let port: Int
    private let listener: Int32
    /// Subscribes answered and held Diffs released.
    private let log = Shared<(subscribes: Int, heldDiffsReleased: Int)>((0, 0))

    init() throws {
        (listener, port) = try LoopbackSocket.listen()
        LoopbackSocket.acceptOnThreads(listener) { [self] in serve($0) }
    }

    var subscribes: Int { log.get().subscribes }
    var heldDiffsReleased: Int { log.get().heldDiffsReleased }

    /// Stops accepting (connections already open end when the gateway closes them).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(_ fd: Int32) {
        defer { close(fd) }
        let decoder = FrameDecoder(limits: .server)
        let encoder = FrameEncoder()
        var held: Message?
        var version: UInt64 = 0
        var chunk = [UInt8](repeating: 0, count: 16_384)
        func write(_ messages: [Message]) -> Bool {
            let bytes = messages.flatMap { encoder.encode($0) }
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return false }
                sent += n
            }
            return true
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            decoder.feed(Array(chunk[..<n]))
            while let message = try? decoder.next() {
                var out: [Message] = []
                if case .unsubscribe = message {
                    continue  // the held Diff stays on the wire
                }
                if let late = held {
                    out.append(late)
                    held = nil
                    log.update { $0.heldDiffsReleased += 1 }
                }
                switch message {
                case .hello:
                    out.append(.welcome(Welcome(serverName: "late-diff", heartbeatMilliseconds: 0)))
                case .subscribe(let subscribe):
                    version += 1
                    let (snapshot, diff) = Self.snapshotAndNextDiff(list: subscribe.listName, version: version)
                    out.append(snapshot)
                    held = diff
                    log.update { $0.subscribes += 1 }
                case .ping(let ping):
                    out.append(.pong(Pong(nonce: ping.nonce)))
                default:
                    break
                }
                guard write(out) else { return }
            }
        }
    }

    /// A list with one section at `version`, and the Diff that inserts a row after it.
    static func snapshotAndNextDiff(list: String, version: UInt64) -> (Message, Message) {
        let sections = [Section(id: "S")]
        var director = try! Director(sections: sections)
        let snapshot = Message.snapshot(
            Snapshot(
                listName: list, position: ListVersion(epoch: 1, version: version), digest: director.digest,
                reason: .freshSubscribe, sections: sections))
        let changeset = try! director.apply([.insertRows([Row(id: "late", kind: "k")], in: .id("S"), at: 0)])
        let diff = Message.diff(
            Diff(
                listName: list, epoch: 1, fromVersion: version, toVersion: version + 1, digest: director.digest,
                changeset: changeset))
        return (snapshot, diff)
    }
}
