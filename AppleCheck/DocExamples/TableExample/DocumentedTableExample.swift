// swift-format-ignore-file
// (formatted as docs/SDK.md shows it, which a test checks)
// docs/SDK.md's table view controller, compiled against the UIKit stand-in. Everything
// below the marker line must be that example exactly: DocumentedTableExampleTests checks it.
// ---- docs/SDK.md, "A table view controller" ----
import FlowSyncClient
import FlowSyncUI
import UIKit

struct Contact: FlowModel {
    static let flowKind = "contact"
    var id: String
    var name: String
}

/// A section's header, written with `section.set(header: Team(title: "Friends", count: 3))`.
struct Team: Codable {
    var title: String
    var count: Int
}

final class TeamHeaderView: UITableViewHeaderFooterView {
    func show(_ team: Team) {
        var content = defaultContentConfiguration()
        content.text = team.title
        content.secondaryText = "\(team.count) people"
        contentConfiguration = content
    }
}

final class ContactsViewController: UIViewController {
    private let contacts: ListDirector
    private let tableView = UITableView(frame: .zero, style: .insetGrouped)
    private var director: TableDirector!
    var opened: (Contact) -> Void = { _ in }

    init(client: FlowSyncClient) {
        contacts = client.director("contacts")
        super.init(nibName: nil, bundle: nil)
    }

    required init?(coder: NSCoder) { fatalError("init(coder:) is not used") }

    override func loadView() { view = tableView }

    override func viewDidLoad() {
        super.viewDidLoad()
        director = TableDirector(table: tableView, list: contacts)
        director.register(TableAdapter<Contact, UITableViewCell> { adapter in
            adapter.on.dequeue = { ctx in
                var content = ctx.cell?.defaultContentConfiguration()
                content?.text = ctx.model.name
                ctx.cell?.contentConfiguration = content
            }
            adapter.on.tap = { [weak self] ctx in
                self?.opened(ctx.model)
                return .deselectAnimated
            }
            // Deletes the row the user swiped, by ID, even if a remote change moved it.
            adapter.on.trailingSwipeActions = { ctx in UISwipeActionsConfiguration(actions: [ctx.deleteAction()]) }
            adapter.canReorder = true   // drag in editing mode: shown at once, written through the list
            adapter.sizing = .automatic(estimated: 44)
        })
        director.register(header: TableHeaderFooterAdapter<Team, TeamHeaderView> { adapter in
            adapter.on.dequeue = { ctx in ctx.view?.show(ctx.value) }
        })
        navigationItem.rightBarButtonItem = editButtonItem
    }

    override func setEditing(_ editing: Bool, animated: Bool) {
        super.setEditing(editing, animated: animated)
        tableView.setEditing(editing, animated: animated)
    }
}
