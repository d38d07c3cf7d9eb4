import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncProcess
import Foundation
@_spi(Simulation) import UIKit

/// A model the glue tests show.
struct Contact: FlowModel, Equatable {
    static let flowKind = "contact"
    var id: String
    var name: String
}

/// Another kind, for routing by kind.
struct Banner: FlowModel, Equatable {
    static let flowKind = "banner"
    var id: String
    var text: String
}

/// A section header value.
struct TeamHeader: Codable, Equatable {
    var title: String
    var count: Int
}

/// A cell that remembers what it was configured with.
final class ContactCell: UITableViewCell {
    var shown: Contact?
    var configurations = 0
    override func prepareForReuse() {
        super.prepareForReuse()
        shown = nil
    }
}

final class BannerCell: UITableViewCell {
    var shown: Banner?
}

final class TeamHeaderView: UITableViewHeaderFooterView {
    var shown: TeamHeader?
    var configurations = 0
}

/// A table that records the animation of each call, to check ``TableReloadAnimations``.
final class RecordingTableView: UITableView {
    var animations: [String] = []
    override func insertRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        animations.append("insertRows \(animation)")
        super.insertRows(at: indexPaths, with: animation)
    }
    override func deleteRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        animations.append("deleteRows \(animation)")
        super.deleteRows(at: indexPaths, with: animation)
    }
    override func reloadRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        animations.append("reloadRows \(animation)")
        super.reloadRows(at: indexPaths, with: animation)
    }
    override func insertSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        animations.append("insertSections \(animation)")
        super.insertSections(sections, with: animation)
    }
    override func deleteSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        animations.append("deleteSections \(animation)")
        super.deleteSections(sections, with: animation)
    }
    override func reloadSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        animations.append("reloadSections \(sections.map { $0 }) \(animation)")
        super.reloadSections(sections, with: animation)
    }
    var reloads = 0
    override func reloadData() {
        reloads += 1
        super.reloadData()
    }
}

/// A daemon on 127.0.0.1 port 0 with its own data directory, and clients of it.
final class Daemon: Sendable {
    let process: DaemonProcess

    /// The daemon binary: FLOWSYNCD (scripts/apple-check.sh sets it), else the main
    /// package's debug build next to this package.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["FLOWSYNCD"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/flowsyncd")
            .path
    }

    init() async throws {
        var options = DaemonProcess.Options(binary: Self.binary)
        options.startTimeout = .seconds(30)
        process = try await DaemonProcess.start(options)
    }

    /// A client with its own callback queue (its default transport here is
    /// NetworkTransport over the Network stand-in, as on an Apple platform).
    func client(_ id: String, seed: UInt64 = 1) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                port: process.port, clientID: id,
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: seed))
    }

    func stop() async {
        _ = await process.terminate()
    }
}

/// Polls `condition` on the main actor every 2 ms for at most `timeout` seconds, letting
/// the main queue (where the directors apply changes) run in between.
@MainActor
func eventually(timeout: Double = 20, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(timeout * 1000)))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}

/// A table of a phone's size in a window, so the director animates (it reloads a table
/// that is not in a window).
@MainActor
func tableInWindow(
    _ table: UITableView = RecordingTableView(frame: CGRect(x: 0, y: 0, width: 390, height: 844), style: .plain)
)
    -> (UIWindow, UITableView)
{
    let window = UIWindow(frame: CGRect(x: 0, y: 0, width: 390, height: 844))
    window.addSubview(table)
    return (window, table)
}

extension UITableView {
    /// Every visible cell against the row the director's snapshot has at its index path:
    /// one line per cell that shows another row.
    @MainActor
    func cellsThatDisagree(with snapshot: ListSnapshot) -> [String] {
        var lines: [String] = []
        for path in simulatedVisibleIndexPaths {
            guard let cell = simulatedCell(at: path) else { continue }
            let director = snapshot.director
            guard path.section < director.sections.count, path.row < director.sections[path.section].rows.count else {
                lines.append("\(path): a cell where the list has no row")
                continue
            }
            let row = director[RowPath(section: path.section, row: path.row)]
            if let contact = (cell as? ContactCell)?.shown {
                let expected = try? JSONDecoder().decode(Contact.self, from: Data(row.payload))
                if contact != expected {
                    lines.append(
                        "\(path): cell shows \(contact), row is \(row.id) \(String(decoding: row.payload, as: UTF8.self))"
                    )
                }
            } else if row.kind == Contact.flowKind,
                (try? JSONDecoder().decode(Contact.self, from: Data(row.payload))) != nil
            {
                lines.append("\(path): row \(row.id) is not shown in a configured ContactCell (\(type(of: cell)))")
            }
        }
        return lines
    }
}
