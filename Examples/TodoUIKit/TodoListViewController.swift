import FlowSyncClient
import FlowSyncUI
import UIKit

/// The to-do list: a table driven by a ``TableDirector``, with no data source code.
///
/// - Sections of to-dos, each with its title as header (the header's JSON string).
/// - + adds a to-do to the inbox (an alert with a text field).
/// - A tap toggles a to-do done; a swipe deletes it; Edit lets rows be dragged between
///   and within sections. Every touch writes through the live list, by identity, and
///   shows at once; other devices' edits animate in as they arrive.
/// - The navigation bar's prompt is the offline badge (``SyncBadge``).
final class TodoListViewController: UIViewController {
    let client: FlowSyncClient
    let list: ListDirector
    let tableView = UITableView(frame: .zero, style: .insetGrouped)
    private(set) var director: TableDirector!
    private var statusObservation: ObservationToken?
    private var listObservation: ObservationToken?

    init(client: FlowSyncClient, listName: String = "todo") {
        self.client = client
        list = client.director(listName)
        super.init(nibName: nil, bundle: nil)
        title = "To-do"
    }

    required init?(coder: NSCoder) { fatalError("init(coder:) is not used") }

    deinit {
        statusObservation?.cancel()
        listObservation?.cancel()
    }

    /// The table is the screen's view, so UIKit sizes it.
    override func loadView() {
        view = tableView
    }

    override func viewDidLoad() {
        super.viewDidLoad()
        director = TableDirector(table: tableView, list: list)
        director.register(
            TableAdapter<TodoItem, UITableViewCell> { adapter in
                adapter.on.dequeue = { ctx in
                    var content = ctx.cell?.defaultContentConfiguration()
                    content?.text = ctx.model.title
                    ctx.cell?.contentConfiguration = content
                    ctx.cell?.accessoryType = ctx.model.done ? .checkmark : .none
                }
                adapter.on.tap = { [weak self] ctx in
                    self?.toggle(ctx.model)
                    return .deselectAnimated
                }
                adapter.canDelete = true  // swipe to delete, and the delete control in Edit
                adapter.canReorder = true  // drag in Edit
                adapter.sizing = .automatic(estimated: 44)
            })
        director.onWriteFailure = { [weak self] error in self?.show(error) }

        navigationItem.rightBarButtonItem = UIBarButtonItem(
            systemItem: .add,
            primaryAction: UIAction { [weak self] _ in
                self?.askForNewItem()
            })
        navigationItem.leftBarButtonItem = editButtonItem

        // The offline badge follows the connection and the list's pending writes.
        statusObservation = client.observeStatus(on: .main) { [weak self] _ in
            MainActor.assumeIsolated { self?.updateBadge() }
        }
        listObservation = list.observe(on: .main) { [weak self] _ in
            MainActor.assumeIsolated { self?.updateBadge() }
        }
    }

    override func setEditing(_ editing: Bool, animated: Bool) {
        super.setEditing(editing, animated: animated)
        tableView.setEditing(editing, animated: animated)
    }

    // MARK: Actions

    /// Adds a to-do at the end of the inbox, creating the inbox first when the list has
    /// none (a new list).
    func add(title: String) {
        let item = TodoItem(id: UUID().uuidString, title: title)
        do {
            try list.perform { batch in
                if !batch.working.containsSection(id: TodoItem.inbox) {
                    try batch.add(section: NewSection(id: TodoItem.inbox, header: "Inbox"), at: 0)
                }
                try batch.section(TodoItem.inbox).add(model: item)
            }
        } catch {
            show(error)
        }
    }

    /// Marks a to-do done (or not), by its ID wherever it is now.
    func toggle(_ item: TodoItem) {
        var changed = item
        changed.done.toggle()
        do {
            try list.update(model: changed)
        } catch {
            show(error)
        }
    }

    private func askForNewItem() {
        let alert = UIAlertController(title: "New to-do", message: nil, preferredStyle: .alert)
        alert.addTextField { field in field.placeholder = "Title" }
        alert.addAction(UIAlertAction(title: "Cancel", style: .cancel))
        alert.addAction(
            UIAlertAction(title: "Add", style: .default) { [weak self, weak alert] _ in
                guard let title = alert?.textFields?.first?.text, !title.isEmpty else { return }
                self?.add(title: title)
            })
        present(alert, animated: true)
    }

    private func updateBadge() {
        let snapshot = list.snapshot
        navigationItem.prompt = SyncBadge.text(
            status: client.status, pendingWrites: snapshot.pendingWrites,
            isFromDisk: snapshot.isFromDisk)
    }

    private func show(_ error: any Error) {
        let alert = UIAlertController(title: "Not saved", message: "\(error)", preferredStyle: .alert)
        alert.addAction(UIAlertAction(title: "OK", style: .default))
        present(alert, animated: true)
    }
}
