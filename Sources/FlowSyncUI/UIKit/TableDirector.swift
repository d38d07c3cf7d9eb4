// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view. Every decision it
// takes is ListPresenter's (platform-neutral, tested on Linux); this file and its
// extensions only translate between UIKit's calls and the presenter.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// FlowKit's `TableDirector` on a live list: it becomes the table's data source,
/// delegate and prefetch data source, shows every row with the adapter registered for
/// its kind, routes each event to the model under it, and animates every change of the
/// list stage by stage.
///
/// ```swift
/// final class ContactsViewController: UIViewController {
///     private let tableView = UITableView(frame: .zero, style: .insetGrouped)
///     private var director: TableDirector!
///
///     override func viewDidLoad() {
///         super.viewDidLoad()
///         director = TableDirector(table: tableView, list: client.director("contacts"))
///         director.register(TableCellAdapter<Contact, UITableViewCell> { adapter in
///             adapter.events.dequeue = { ctx in
///                 var content = ctx.cell?.defaultContentConfiguration()
///                 content?.text = ctx.model.name
///                 ctx.cell?.contentConfiguration = content
///             }
///             adapter.canDelete = true     // swipe to delete, through the list
///             adapter.canReorder = true    // drag to reorder in editing mode
///         })
///     }
/// }
/// ```
///
/// - **What the table shows** is ``snapshot``, switched stage by stage inside each
///   batch; the list's replica may be ahead. Every count, cell and event is resolved
///   from it (``ListPresenter``).
/// - **Rows of an unregistered kind** (or whose payload does not decode) show
///   ``fallback`` — by default an empty cell ``fallbackHeight`` points tall (0: hidden),
///   so a list written by a newer app version never traps an older one.
/// - **Touches write through the list by identity**: a delete by row ID, a drag as a
///   move of the row into a section by ID, built on what the table showed. A drag is
///   shown at once without a second animation, and changes that arrive meanwhile are
///   rebased under it (`ListUpdateApplier+ViewEdits.swift`).
/// - **Headers and footers** show the header adapter's views (``register(header:)``),
///   refreshed in place when they change, or, without one, the header's JSON string as
///   a title.
///
/// Main-actor isolated, like the table. It follows its list from creation until it is
/// released; keep a strong reference (the table holds its data source and delegate
/// weakly).
@MainActor
public final class TableDirector: NSObject {
    /// The table this director is the data source and delegate of.
    public let tableView: UITableView
    /// The live list it shows.
    public let list: ListDirector
    /// The animation for each kind of change.
    public var animations: TableReloadAnimations = .default()
    /// The height of a row shown with ``fallback`` (default 0: the row is hidden);
    /// `nil` for the table's `rowHeight`.
    public var fallbackHeight: CGFloat? = 0
    /// Builds the cell of a row no adapter can show (its kind has none, or it does not
    /// decode). Default: an empty cell of ``fallbackReuseIdentifier``.
    public var fallback: ((TableFallbackContext) -> UITableViewCell)?
    /// Called when a write a touch made is refused on the spot (a delete of a row
    /// another writer changed, say). The table shows the list without it.
    public var onWriteFailure: ((FlowSyncError) -> Void)?
    /// The reuse identifier of the default fallback cell (a plain `UITableViewCell`).
    public static let fallbackReuseIdentifier = "FlowSync.fallback"

    /// The presenter: every decision of this director.
    lazy var presenter = ListPresenter<DirectorTableTarget, any TableCellRouting>(
        list: list, target: DirectorTableTarget(director: self))
    /// The header and footer adapters, with their decoders.
    var supplementaryAdapters: [SupplementaryUpdate.Element: SupplementaryRegistration<any TableSupplementaryRouting>] =
        [:]
    /// What each cell on screen shows, for the events that come after its row changed
    /// (`didEndDisplaying`); an entry lives from the cell's dequeue to its end of display.
    var cellItems: [ObjectIdentifier: PresentedRow<any TableCellRouting>] = [:]

    /// A director for `table` showing `list`: it sets itself as the table's data source,
    /// delegate and prefetch data source, and follows the list on the main queue from
    /// its current state.
    ///
    /// - Parameter maximumAnimatedChanges: Larger changes are shown with `reloadData()`.
    public init(table: UITableView, list: ListDirector, maximumAnimatedChanges: Int = 2_000) {
        tableView = table
        self.list = list
        super.init()
        presenter.applier.maximumAnimatedChanges = maximumAnimatedChanges
        table.register(UITableViewCell.self, forCellReuseIdentifier: Self.fallbackReuseIdentifier)
        table.dataSource = self
        table.delegate = self
        table.prefetchDataSource = self
        presenter.follow(on: .main)
    }

    // MARK: Registering adapters

    /// Shows rows of `Model.flowKind` with `adapter`, registering its cell class with
    /// the table. Rows already shown are reloaded.
    public func register<Model: FlowModel, Cell: UITableViewCell>(_ adapter: TableCellAdapter<Model, Cell>) {
        tableView.register(Cell.self, forCellReuseIdentifier: adapter.reuseIdentifier)
        presenter.register(adapter, forKind: Model.flowKind, decode: TableCellAdapter<Model, Cell>.decoder())
        if presenter.numberOfSections > 0 { tableView.reloadData() }
    }

    /// Shows every section's header with `adapter` (its views registered with the table).
    public func register<Value: Decodable, View: UITableViewHeaderFooterView>(
        header adapter: TableHeaderFooterAdapter<Value, View>
    ) {
        register(adapter, for: .header)
    }

    /// Shows every section's footer with `adapter` (its views registered with the table).
    public func register<Value: Decodable, View: UITableViewHeaderFooterView>(
        footer adapter: TableHeaderFooterAdapter<Value, View>
    ) {
        register(adapter, for: .footer)
    }

    private func register<Value: Decodable, View: UITableViewHeaderFooterView>(
        _ adapter: TableHeaderFooterAdapter<Value, View>,
        for element: SupplementaryUpdate.Element
    ) {
        tableView.register(View.self, forHeaderFooterViewReuseIdentifier: adapter.reuseIdentifier)
        supplementaryAdapters[element] = SupplementaryRegistration<any TableSupplementaryRouting>(
            adapter: adapter, decode: adapter.valueDecoder)
        presenter.supplementaryValues.removeAll()
        if presenter.numberOfSections > 0 { tableView.reloadData() }
    }

    // MARK: Reading what the table shows

    /// The list as the table shows it (the data source's state).
    public var snapshot: ListSnapshot { presenter.snapshot }

    /// The model the table shows at `indexPath` as `M`, if it is one.
    public func model<M: FlowModel>(at indexPath: IndexPath, as type: M.Type = M.self) -> M? {
        presenter.item(at: RowPath(indexPath))?.model(as: M.self)
    }

    /// Where the table shows the row with that ID.
    public func indexPath(ofModel id: String) -> IndexPath? {
        presenter.snapshot.indexPath(ofModel: id).map(IndexPath.init)
    }

    /// Called when a decoded model cannot be read from a row (once per row version).
    public var onDecodingFailure: ((ModelDecodingFailure) -> Void)? {
        get { presenter.onDecodingFailure }
        set { presenter.onDecodingFailure = newValue }
    }

    // MARK: Internals shared by the extensions

    /// The visible cell at `indexPath`, if any.
    func visibleCell(at indexPath: IndexPath) -> UITableViewCell? {
        tableView.cellForRow(at: indexPath)
    }

    /// The decoded header or footer of `section` with its adapter, when both exist.
    func supplementary(
        _ element: SupplementaryUpdate.Element, inSection section: Int
    ) -> PresentedSupplementary<any TableSupplementaryRouting>? {
        presenter.supplementary(element, inSection: section, registrations: supplementaryAdapters)
    }

    /// Refreshes changed headers and footers inside the applier's batch, touching each
    /// section once (``SupplementaryRefresh/steps(_:)``): a header that appears or goes
    /// changes the layout, so its section is reloaded; one that only changed is refreshed
    /// in its visible view, in place (the section's cells stay) — reconfigured by its
    /// adapter, or, for a plain title, given the new title in the view's default content
    /// configuration. A header not on screen needs nothing: the table asks for it when it
    /// scrolls in.
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        var reload = IndexSet()
        for step in SupplementaryRefresh.steps(refreshes) {
            switch step {
            case .reloadSection(let section):
                reload.insert(section)
            case .refreshInPlace(let section, let element):
                if !refreshInPlace(element, inSection: section) { reload.insert(section) }
            }
        }
        if !reload.isEmpty { tableView.reloadSections(reload, with: animations.sectionReloadAnimation) }
    }

    /// Refreshes one visible header or footer in place.
    /// - Returns: `false` when only a reload of its section can show it.
    private func refreshInPlace(_ element: SupplementaryUpdate.Element, inSection section: Int) -> Bool {
        guard
            let view = element == .header
                ? tableView.headerView(forSection: section) : tableView.footerView(forSection: section)
        else {
            return true  // not on screen: asked for when it scrolls in
        }
        guard supplementaryAdapters[element] != nil else {
            guard let title = presenter.title(element, inSection: section) else { return false }
            var content = view.defaultContentConfiguration()
            content.text = title
            view.contentConfiguration = content
            return true
        }
        // Nil when it no longer decodes: its view goes.
        guard let shown = supplementary(element, inSection: section) else { return false }
        return shown.registration.adapter.configure(
            view, value: shown.value, section: section, sectionID: shown.sectionID,
            element: element, director: self)
    }

    /// Reports a refused write.
    func report(_ error: FlowSyncError) {
        onWriteFailure?(error)
    }
}

/// The table as the presenter's update target, with the director's animations and its
/// in-place header refresh.
@MainActor
struct DirectorTableTarget: @preconcurrency ListUpdateTarget {
    unowned let director: TableDirector

    private var table: UITableView { director.tableView }
    private var animations: TableReloadAnimations { director.animations }

    var isOnScreen: Bool { table.window != nil }
    func reloadData() { table.reloadData() }
    func performBatchUpdates(_ updates: @escaping () -> Void) { table.performBatchUpdates(updates, completion: nil) }
    func deleteSections(_ sections: [Int]) {
        table.deleteSections(IndexSet(sections), with: animations.sectionDeletionAnimation)
    }
    func insertSections(_ sections: [Int]) {
        table.insertSections(IndexSet(sections), with: animations.sectionInsertionAnimation)
    }
    func moveSection(_ section: Int, toSection newSection: Int) { table.moveSection(section, toSection: newSection) }
    func deleteRows(at paths: [RowPath]) {
        table.deleteRows(at: paths.map(IndexPath.init), with: animations.rowDeletionAnimation)
    }
    func insertRows(at paths: [RowPath]) {
        table.insertRows(at: paths.map(IndexPath.init), with: animations.rowInsertionAnimation)
    }
    func moveRow(at path: RowPath, to newPath: RowPath) { table.moveRow(at: IndexPath(path), to: IndexPath(newPath)) }
    func reloadRows(at paths: [RowPath]) {
        table.reloadRows(at: paths.map(IndexPath.init), with: animations.rowReloadAnimation)
    }
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) { director.refreshSupplementaries(refreshes) }
}
#endif
