// flowsync-mirror: the smallest app on the SDK. It mirrors one list and prints each
// change the way a UITableView would apply it — one performBatchUpdates per stage.
//
//   swift run flowsync-mirror [LIST] [--host H] [--port P] [--count N]
//
// On iOS the same observer hands the change to FlowSyncUI's `ListUpdateApplier` on the
// main queue: one `tableView.performBatchUpdates` per stage with these index paths, and
// inside each the data source switched to that stage's data
// (`change.snapshotsAfterEachStage()[i]`), not to `change.snapshot`: UIKit checks every
// batch against the counts the data source reports right after it.
import Dispatch
import FlowSyncClient
import FlowSyncCore
import Foundation

/// The rows this example knows how to show; other kinds print as raw text.
struct Contact: FlowModel {
    static let flowKind = "contact"
    var id: String
    var name: String
}

/// `--name value` pairs and the list name, from the command line.
func parse(_ args: [String]) -> (options: [String: String], list: String?) {
    var options: [String: String] = [:], list: String?, k = 0
    while k < args.count {
        if args[k].hasPrefix("--"), k + 1 < args.count {
            options[args[k]] = args[k + 1]
            k += 2
        } else {
            list = list ?? args[k]
            k += 1
        }
    }
    return (options, list)
}
let (options, listArgument) = parse(Array(CommandLine.arguments.dropFirst()))
func option(_ name: String) -> String? { options[name] }
let host = option("--host") ?? "127.0.0.1"
let port = option("--port").flatMap(Int.init) ?? 7400
let count = option("--count").flatMap(Int.init)
let listName = listArgument ?? "contacts"

func describe(_ row: Row) -> String {
    if row.kind == Contact.flowKind, let contact = try? JSONDecoder().decode(Contact.self, from: Data(row.payload)) {
        return "\(contact.name) (\(contact.id))"
    }
    return "\(row.id): \(String(decoding: row.payload, as: UTF8.self))"
}

func paths(_ paths: [RowPath]) -> String { paths.map { "[\($0.section),\($0.row)]" }.joined(separator: ", ") }

let queue = DispatchQueue(label: "ui")  // stands in for the main queue
let client = try FlowSyncClient(configuration: .init(host: host, port: port, callbackQueue: queue))
client.register(Contact.self)
let list = client.director(listName)
let done = DispatchSemaphore(value: 0)
/// Changes seen so far; only touched on `queue`.
final class Counter: @unchecked Sendable { var value = 0 }
let seen = Counter()

client.observeStatus { status in print("-- \(status)") }
list.observe { change in
    let version = change.snapshot.version.map { "\($0)" } ?? "?"
    print(
        "\(listName) @ \(version) — \(change.cause), \(change.snapshot.numberOfSections) sections, \(change.snapshot.numberOfModels) rows"
    )
    for (index, stage) in change.changeset.stages.enumerated() {
        print("  tableView.performBatchUpdates {   // data source: the list after stage \(index)")
        if !stage.sectionDeletes.isEmpty { print("    deleteSections(\(stage.sectionDeletes))") }
        if !stage.sectionInserts.isEmpty {
            print(
                "    insertSections(\(stage.sectionInserts.map(\.index)))  // \(stage.sectionInserts.map(\.section.id))"
            )
        }
        for move in stage.sectionMoves { print("    moveSection(\(move.from), toSection: \(move.to))") }
        for update in stage.supplementaryUpdates {
            print("    // reload \(update.element) of section \(update.section)")
        }
        if !stage.rowDeletes.isEmpty { print("    deleteRows(at: \(paths(stage.rowDeletes)))") }
        for insert in stage.rowInserts {
            print("    insertRows(at: \(paths([insert.path])))  // \(describe(insert.row))")
        }
        for move in stage.rowMoves { print("    moveRow(at: \(paths([move.from])), to: \(paths([move.to])))") }
        for update in stage.rowUpdates {
            print("    reloadRows(at: \(paths([update.path])))  // \(describe(update.row))")
        }
        print("  }")
    }
    seen.value += 1
    if let count, seen.value >= count { done.signal() }
}
print("mirroring \(listName) from \(host):\(port) (Ctrl-C to stop)")
done.wait()
client.close()
