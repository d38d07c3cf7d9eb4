import FlowSyncCore
import FlowSyncProtocol

/// The control connection: sets the lists up, asks for stats, and takes the
/// verifier's Snapshots for the full compare at the end.
final class ControlClient: LoadConnection {
    private var nextSeq: UInt64 = 1
    private var nextRequest: UInt64 = 1
    private var mutateWaiters: [UInt64: (Result<ListVersion, LoadError>) -> Void] = [:]
    private var statsWaiters: [UInt64: ([String: Int64]) -> Void] = [:]
    private var snapshotWaiters: [String: (Snapshot) -> Void] = [:]
    var readyCallback: (() -> Void)?

    init(context: LoadContext) {
        super.init(context: context, clientID: "load-control-\(MonotonicClock.nanoseconds() % 1_000_000)")
    }

    override func didBecomeReady() { readyCallback?() }

    /// Sends a Mutate at head; `done` gets the committed version or the Reject's text.
    func mutate(
        list: String, _ operations: [FlowSyncCore.Operation], _ done: @escaping (Result<ListVersion, LoadError>) -> Void
    ) {
        let seq = nextSeq
        nextSeq += 1
        mutateWaiters[seq] = done
        send([
            context.encoder.encode(
                .mutate(
                    Mutate(
                        listName: list, clientID: clientID, seq: seq, base: ListVersion(epoch: 0, version: 0),
                        operations: operations)))
        ])
    }

    /// Asks for stats (server-wide, plus the list's with `list`).
    func stats(list: String?, _ done: @escaping ([String: Int64]) -> Void) {
        let id = nextRequest
        nextRequest += 1
        statsWaiters[id] = done
        send([context.encoder.encode(.statsRequest(StatsRequest(requestID: id, listName: list)))])
    }

    /// Subscribes to `list` and hands over its Snapshot, then unsubscribes.
    func snapshot(list: String, _ done: @escaping (Snapshot) -> Void) {
        snapshotWaiters[list] = done
        send([context.encoder.encode(.subscribe(Subscribe(listName: list)))])
    }

    override func didReceive(_ frame: DecodedFrame) {
        switch frame.message {
        case .ack(let ack):
            mutateWaiters.removeValue(forKey: ack.seq)?(.success(ack.committed))
        case .reject(let reject):
            mutateWaiters.removeValue(forKey: reject.seq)?(.failure(LoadError("\(reject.code) \(reject.message)")))
        case .statsReply(let reply):
            let values = Dictionary(reply.entries.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
            statsWaiters.removeValue(forKey: reply.requestID)?(values)
        case .snapshot(let snapshot):
            if let waiter = snapshotWaiters.removeValue(forKey: snapshot.listName) {
                send([context.encoder.encode(.unsubscribe(Unsubscribe(listName: snapshot.listName)))])
                waiter(snapshot)
            }
        case .error(let error):
            context.metrics.protocolError("\(clientID): \(error.code) \(error.message)")
        default:
            break
        }
    }
}
