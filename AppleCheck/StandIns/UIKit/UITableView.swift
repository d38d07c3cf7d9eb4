// Why this file is over 450 lines: it transcribes UITableView's declared API, one
// declaration and its documentation path at a time; the behaviour lives in
// UITableView+Simulation.swift.
import Foundation

// /documentation/UIKit/UITableView (iOS 2.0+)
/// A view that presents data using rows in a single column.
///
/// The stand-in is a model of UIKit's documented rules, not UIKit: see
/// `UITableView+Simulation.swift` for the rules and the `@_spi(Simulation)` drivers, and
/// DEVIATIONS.md for where the model guesses.
@MainActor
open class UITableView: UIScrollView {
    let storedStyle: UITableView.Style
    lazy var presentation = ListPresentation(host: self)
    var registeredCellClasses: [String: UITableViewCell.Type] = [:]
    var registeredHeaderFooterClasses: [String: UITableViewHeaderFooterView.Type] = [:]
    var cellReusePool: [String: [UITableViewCell]] = [:]
    var headerFooterReusePool: [String: [UITableViewHeaderFooterView]] = [:]
    var standardHeaderFooterPool: [UITableViewHeaderFooterView] = []
    var selectedIndexPaths: [IndexPath] = []
    var storedIsEditing = false
    var openSwipe: SwipeState?
    var uncommittedMove = false
    var headerlessSections: Set<Int> = []
    var footerlessSections: Set<Int> = []
    /// Failures recorded by the simulation (see `simulationFailures`).
    var failures: [String] = []
    var failureHook: ((String) -> Void)?
    var strictFlag = true

    // /documentation/UIKit/UITableView/init(frame:style:) (iOS 2.0+)
    /// Creates and returns a table view with the specified frame and style.
    public init(frame: CGRect, style: UITableView.Style) {
        storedStyle = style
        super.init(frame: frame)
    }

    // /documentation/UIKit/UITableView/init(coder:) (iOS 2.0+)
    public required init?(coder: NSCoder) {
        storedStyle = .plain
        super.init(coder: coder)
    }

    /// `UITableView(frame:)` (and `UITableView()`): UIKit makes a `.plain` table.
    public override convenience init(frame: CGRect) {
        self.init(frame: frame, style: .plain)
    }

    // /documentation/UIKit/UITableView/style-swift.property (iOS 2.0+)
    /// The style of the table view.
    open var style: UITableView.Style { storedStyle }

    // MARK: Data source and delegate

    // /documentation/UIKit/UITableView/dataSource (iOS 2.0+)
    /// The object that acts as the data source of the table view. (weak, as in UIKit)
    open weak var dataSource: (any UITableViewDataSource)? {
        didSet {
            presentation.setNeedsReload()
            setNeedsLayout()
        }
    }

    // /documentation/UIKit/UITableView/delegate (iOS 2.0+)
    /// The object that acts as the delegate of the table view. (weak, as in UIKit)
    open weak var delegate: (any UITableViewDelegate)? {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/prefetchDataSource (iOS 10.0+)
    /// The object that acts as the prefetching data source for the table view. (weak)
    @available(iOS 10.0, *)
    open weak var prefetchDataSource: (any UITableViewDataSourcePrefetching)?

    // /documentation/UIKit/UITableView/isPrefetchingEnabled (iOS 15.0+)
    @available(iOS 15.0, *)
    open var isPrefetchingEnabled: Bool = true

    // MARK: Heights

    // /documentation/UIKit/UITableView/automaticDimension (iOS 5.0+)
    /// A value that represents the default value for a given dimension.
    /// STAND-IN: `static let` (UIKit's is `class let`, which Swift classes cannot declare);
    /// callers write `UITableView.automaticDimension` either way.
    public static let automaticDimension: CGFloat = -1

    // /documentation/UIKit/UITableView/rowHeight (iOS 2.0+)
    /// The default height (in points) of each row in the table view.
    /// (Default `automaticDimension`: the cell sizes itself.)
    open var rowHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/sectionHeaderHeight (iOS 2.0+)
    open var sectionHeaderHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/sectionFooterHeight (iOS 2.0+)
    open var sectionFooterHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/estimatedRowHeight (iOS 7.0+)
    /// The estimated height of rows in the table view. (Default `automaticDimension`:
    /// "the table view selects an estimated height to use on your behalf".)
    open var estimatedRowHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/estimatedSectionHeaderHeight (iOS 7.0+)
    open var estimatedSectionHeaderHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/estimatedSectionFooterHeight (iOS 7.0+)
    open var estimatedSectionFooterHeight: CGFloat = UITableView.automaticDimension {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/tableHeaderView (iOS 2.0+)
    /// The view that's displayed above the table's content.
    open var tableHeaderView: UIView? {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/tableFooterView (iOS 2.0+)
    /// The view that's displayed below the table's content.
    open var tableFooterView: UIView? {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UITableView/backgroundView (iOS 3.2+)
    open var backgroundView: UIView?

    // MARK: Registering and dequeuing

    // /documentation/UIKit/UITableView/register(_:forCellReuseIdentifier:)-3l3ct (iOS 6.0+)
    /// Registers a class to use in creating new table cells.
    /// (A nil class unregisters the identifier, as in UIKit.)
    open func register(_ cellClass: AnyClass?, forCellReuseIdentifier identifier: String) {
        if let cellClass {
            registeredCellClasses[identifier] = (cellClass as? UITableViewCell.Type) ?? UITableViewCell.self
        } else {
            registeredCellClasses[identifier] = nil
        }
    }

    // /documentation/UIKit/UITableView/register(_:forHeaderFooterViewReuseIdentifier:)-20ybb (iOS 6.0+)
    /// Registers a class to use in creating new table header or footer views.
    open func register(_ aClass: AnyClass?, forHeaderFooterViewReuseIdentifier identifier: String) {
        if let aClass {
            registeredHeaderFooterClasses[identifier] =
                (aClass as? UITableViewHeaderFooterView.Type) ?? UITableViewHeaderFooterView.self
        } else {
            registeredHeaderFooterClasses[identifier] = nil
        }
    }

    // /documentation/UIKit/UITableView/dequeueReusableCell(withIdentifier:) (iOS 2.0+)
    /// Returns a reusable table-view cell object after locating it by its identifier, or nil
    /// when none is queued and no class is registered for it.
    open func dequeueReusableCell(withIdentifier identifier: String) -> UITableViewCell? {
        if let cell = takeQueuedCell(identifier) { return cell }
        return registeredCellClasses[identifier].map { $0.init(style: .default, reuseIdentifier: identifier) }
    }

    // /documentation/UIKit/UITableView/dequeueReusableCell(withIdentifier:for:) (iOS 6.0+)
    /// Returns a reusable table-view cell object for the specified reuse identifier and adds
    /// it to the table. "This method always returns a valid cell."
    open func dequeueReusableCell(withIdentifier identifier: String, for indexPath: IndexPath) -> UITableViewCell {
        if let (path, existing) = presentation.reconfiguring, path == indexPath,
            let cell = existing as? UITableViewCell, cell.reuseIdentifier == identifier
        {
            return cell
        }
        if let cell = takeQueuedCell(identifier) { return cell }
        if let cellClass = registeredCellClasses[identifier] {
            return cellClass.init(style: .default, reuseIdentifier: identifier)
        }
        recordFailure(
            "unable to dequeue a cell with identifier \(identifier) - must register a nib or a class for the identifier or connect a prototype cell in a storyboard"
        )
        return UITableViewCell(style: .default, reuseIdentifier: identifier)
    }

    // /documentation/UIKit/UITableView/dequeueReusableHeaderFooterView(withIdentifier:) (iOS 6.0+)
    /// Returns a reusable header or footer view after locating it by its identifier.
    open func dequeueReusableHeaderFooterView(withIdentifier identifier: String) -> UITableViewHeaderFooterView? {
        if var queue = headerFooterReusePool[identifier], !queue.isEmpty {
            let view = queue.removeFirst()
            headerFooterReusePool[identifier] = queue
            view.prepareForReuse()
            return view
        }
        return registeredHeaderFooterClasses[identifier].map { $0.init(reuseIdentifier: identifier) }
    }

    private func takeQueuedCell(_ identifier: String) -> UITableViewCell? {
        guard var queue = cellReusePool[identifier], !queue.isEmpty else { return nil }
        let cell = queue.removeFirst()
        cellReusePool[identifier] = queue
        // "If the cell object is reusable … this method calls the cell's prepareForReuse()
        // method" before returning it (/documentation/UIKit/UITableViewCell/prepareForReuse()).
        cell.prepareForReuse()
        return cell
    }

    // MARK: Reloading

    // /documentation/UIKit/UITableView/reloadData() (iOS 2.0+)
    /// Reloads the rows and sections of the table view. (At the next layout pass.)
    open func reloadData() {
        presentation.setNeedsReload()
        setNeedsLayout()
    }

    // MARK: Batch updates

    // /documentation/UIKit/UITableView/performBatchUpdates(_:completion:) (iOS 11.0+)
    /// Animates multiple insert, delete, reload, and move operations as a group.
    @available(iOS 11.0, *)
    open func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {
        presentation.beginBatch()
        updates?()
        presentation.endBatch()
        completion?(true)
    }

    // /documentation/UIKit/UITableView/beginUpdates() (iOS 2.0+)
    /// Begins a series of method calls that insert, delete, or select rows and sections of
    /// the table view. ("These method pairs can be nested.")
    open func beginUpdates() {
        presentation.beginBatch()
    }

    // /documentation/UIKit/UITableView/endUpdates() (iOS 2.0+)
    /// Concludes a series of method calls that insert, delete, select, or reload rows and
    /// sections of the table view.
    open func endUpdates() {
        presentation.endBatch()
    }

    // /documentation/UIKit/UITableView/insertSections(_:with:) (iOS 2.0+)
    /// Inserts one or more sections in the table view, with an option to animate the insertion.
    open func insertSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        presentation.record(.insertSections(sections))
    }

    // /documentation/UIKit/UITableView/deleteSections(_:with:) (iOS 2.0+)
    /// Deletes one or more sections in the table view, with an option to animate the deletion.
    open func deleteSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        presentation.record(.deleteSections(sections))
    }

    // /documentation/UIKit/UITableView/reloadSections(_:with:) (iOS 3.0+)
    /// Reloads the specified sections using the provided animation effect.
    open func reloadSections(_ sections: IndexSet, with animation: UITableView.RowAnimation) {
        presentation.record(.reloadSections(sections))
    }

    // /documentation/UIKit/UITableView/moveSection(_:toSection:) (iOS 5.0+)
    /// Moves a section to a new location in the table view.
    open func moveSection(_ section: Int, toSection newSection: Int) {
        presentation.record(.moveSection(section, newSection))
    }

    // /documentation/UIKit/UITableView/insertRows(at:with:) (iOS 2.0+)
    /// Inserts rows in the table view at the locations that an array of index paths identifies.
    open func insertRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        presentation.record(.insertRows(indexPaths))
    }

    // /documentation/UIKit/UITableView/deleteRows(at:with:) (iOS 2.0+)
    /// Deletes the rows that an array of index paths identifies.
    open func deleteRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        presentation.record(.deleteRows(indexPaths))
    }

    // /documentation/UIKit/UITableView/reloadRows(at:with:) (iOS 3.0+)
    /// Reloads the specified rows using the provided animation effect.
    open func reloadRows(at indexPaths: [IndexPath], with animation: UITableView.RowAnimation) {
        presentation.record(.reloadRows(indexPaths))
    }

    // /documentation/UIKit/UITableView/moveRow(at:to:) (iOS 5.0+)
    /// Moves the row at a specified location to a destination location.
    open func moveRow(at indexPath: IndexPath, to newIndexPath: IndexPath) {
        presentation.record(.moveRow(indexPath, newIndexPath))
    }

    // /documentation/UIKit/UITableView/reconfigureRows(at:) (iOS 15.0+)
    /// Updates the data for the rows at the index paths you specify, preserving the existing
    /// cells for the rows.
    @available(iOS 15.0, *)
    open func reconfigureRows(at indexPaths: [IndexPath]) {
        presentation.record(.reconfigureRows(indexPaths))
    }

    // /documentation/UIKit/UITableView/hasUncommittedUpdates (iOS 11.0+)
    /// A Boolean value indicating whether the table view's appearance contains changes that
    /// aren't reflected in its data source (true while a reorder is moving a row and the data
    /// source has not been told yet).
    @available(iOS 11.0, *)
    open var hasUncommittedUpdates: Bool { uncommittedMove }

    // MARK: Counts and cells

    // /documentation/UIKit/UITableView/numberOfSections (iOS 2.0+)
    /// The number of sections for the table view. (Loads the data if it has not been.)
    open var numberOfSections: Int {
        presentation.loadIfNeeded()
        return presentation.counts.count
    }

    // /documentation/UIKit/UITableView/numberOfRows(inSection:) (iOS 2.0+)
    /// Returns the number of rows (table cells) in a specified section.
    open func numberOfRows(inSection section: Int) -> Int {
        presentation.loadIfNeeded()
        let counts = presentation.counts
        return section >= 0 && section < counts.count ? counts[section] : 0
    }

    // /documentation/UIKit/UITableView/cellForRow(at:) (iOS 2.0+)
    /// Returns the table cell at the index path you specify, or nil when the cell isn't visible.
    open func cellForRow(at indexPath: IndexPath) -> UITableViewCell? {
        presentation.cells[indexPath] as? UITableViewCell
    }

    // /documentation/UIKit/UITableView/visibleCells (iOS 2.0+)
    /// The table cells that are visible in the table view.
    open var visibleCells: [UITableViewCell] {
        presentation.visibleIndexPaths.compactMap { presentation.cells[$0] as? UITableViewCell }
    }

    // /documentation/UIKit/UITableView/indexPathsForVisibleRows (iOS 2.0+)
    /// An array of index paths, each identifying a visible row in the table view.
    open var indexPathsForVisibleRows: [IndexPath]? {
        presentation.visibleIndexPaths
    }

    // /documentation/UIKit/UITableView/indexPath(for:) (iOS 2.0+)
    /// Returns an index path that represents the row and section of a specified table-view
    /// cell, or nil when the cell isn't visible.
    open func indexPath(for cell: UITableViewCell) -> IndexPath? {
        presentation.cells.first { $0.value === cell }?.key
    }

    // /documentation/UIKit/UITableView/indexPathForRow(at:) (iOS 2.0+)
    /// Returns an index path that identifies the row and section at the specified point.
    open func indexPathForRow(at point: CGPoint) -> IndexPath? {
        presentation.loadIfNeeded()
        let layout = computeLayout(counts: presentation.counts, presentation: presentation)
        for (element, frame) in layout.frames {
            if case .cell(let path) = element, frame.contains(point) { return path }
        }
        return nil
    }

    // /documentation/UIKit/UITableView/headerView(forSection:) (iOS 6.0+)
    /// Returns the header view for the specified section, if it is shown.
    open func headerView(forSection section: Int) -> UITableViewHeaderFooterView? {
        presentation.supplementaries[Self.headerKey(section)] as? UITableViewHeaderFooterView
    }

    // /documentation/UIKit/UITableView/footerView(forSection:) (iOS 6.0+)
    /// Returns the footer view for the specified section, if it is shown.
    open func footerView(forSection section: Int) -> UITableViewHeaderFooterView? {
        presentation.supplementaries[Self.footerKey(section)] as? UITableViewHeaderFooterView
    }

    // /documentation/UIKit/UITableView/rectForRow(at:) (iOS 2.0+)
    /// Returns the drawing area for a row that an index path identifies (.zero when there is none).
    open func rectForRow(at indexPath: IndexPath) -> CGRect {
        presentation.loadIfNeeded()
        return computeLayout(counts: presentation.counts, presentation: presentation).frame(of: .cell(indexPath))
            ?? .zero
    }

    // /documentation/UIKit/UITableView/rectForHeader(inSection:) (iOS 2.0+)
    open func rectForHeader(inSection section: Int) -> CGRect {
        presentation.loadIfNeeded()
        return computeLayout(counts: presentation.counts, presentation: presentation).frame(
            of: .supplementary(Self.headerKey(section))) ?? .zero
    }

    // /documentation/UIKit/UITableView/rectForFooter(inSection:) (iOS 2.0+)
    open func rectForFooter(inSection section: Int) -> CGRect {
        presentation.loadIfNeeded()
        return computeLayout(counts: presentation.counts, presentation: presentation).frame(
            of: .supplementary(Self.footerKey(section))) ?? .zero
    }

    // /documentation/UIKit/UITableView/scrollToRow(at:at:animated:) (iOS 2.0+)
    /// Scrolls through the table view until a row that an index path identifies is at a
    /// particular location on the screen (then lays out, as the scroll would).
    open func scrollToRow(at indexPath: IndexPath, at scrollPosition: UITableView.ScrollPosition, animated: Bool) {
        let rect = rectForRow(at: indexPath)
        guard rect != .zero || indexPath == IndexPath(row: 0, section: 0) else { return }
        let height = bounds.height
        var y: CGFloat
        switch scrollPosition {
        case .top: y = rect.minY
        case .middle: y = rect.midY - height / 2
        case .bottom: y = rect.maxY - height
        case .none:
            if rect.minY < contentOffset.y {
                y = rect.minY
            } else if rect.maxY > contentOffset.y + height {
                y = rect.maxY - height
            } else {
                y = contentOffset.y
            }
        }
        y = max(0, min(y, max(0, contentSize.height - height)))
        contentOffset = CGPoint(x: contentOffset.x, y: y)
        layoutIfNeeded()
    }

    // MARK: Selection

    // /documentation/UIKit/UITableView/allowsSelection (iOS 3.0+)
    /// A Boolean value that determines whether users can select a row.
    open var allowsSelection: Bool = true

    // /documentation/UIKit/UITableView/allowsMultipleSelection (iOS 5.0+)
    /// A Boolean value that determines whether users can select more than one row outside of editing mode.
    open var allowsMultipleSelection: Bool = false

    // /documentation/UIKit/UITableView/allowsSelectionDuringEditing (iOS 2.0+)
    /// A Boolean value that determines whether users can select cells while the table view is in editing mode.
    open var allowsSelectionDuringEditing: Bool = false

    // /documentation/UIKit/UITableView/allowsMultipleSelectionDuringEditing (iOS 5.0+)
    open var allowsMultipleSelectionDuringEditing: Bool = false

    // /documentation/UIKit/UITableView/indexPathForSelectedRow (iOS 2.0+)
    /// An index path that identifies the row and section of the selected row.
    open var indexPathForSelectedRow: IndexPath? { selectedIndexPaths.first }

    // /documentation/UIKit/UITableView/indexPathsForSelectedRows (iOS 5.0+)
    /// The index paths that represent the selected rows (nil when none is selected).
    open var indexPathsForSelectedRows: [IndexPath]? {
        selectedIndexPaths.isEmpty ? nil : selectedIndexPaths.sorted()
    }

    // /documentation/UIKit/UITableView/selectRow(at:animated:scrollPosition:) (iOS 2.0+)
    /// Selects a row in the table view that an index path identifies, optionally scrolling
    /// the row to a location in the table view. "Calling this method doesn't cause the
    /// delegate to receive a tableView(_:willSelectRowAt:) or tableView(_:didSelectRowAt:)
    /// message." A nil index path clears the selection.
    open func selectRow(at indexPath: IndexPath?, animated: Bool, scrollPosition: UITableView.ScrollPosition) {
        guard let indexPath else {
            for path in selectedIndexPaths { cellForRow(at: path)?.setSelected(false, animated: animated) }
            selectedIndexPaths = []
            return
        }
        let multiple = storedIsEditing ? allowsMultipleSelectionDuringEditing : allowsMultipleSelection
        if !multiple {
            for path in selectedIndexPaths where path != indexPath {
                cellForRow(at: path)?.setSelected(false, animated: animated)
            }
            selectedIndexPaths.removeAll { $0 != indexPath }
        }
        if !selectedIndexPaths.contains(indexPath) { selectedIndexPaths.append(indexPath) }
        cellForRow(at: indexPath)?.setSelected(true, animated: animated)
        if scrollPosition != .none { scrollToRow(at: indexPath, at: scrollPosition, animated: animated) }
    }

    // /documentation/UIKit/UITableView/deselectRow(at:animated:) (iOS 2.0+)
    /// Deselects a row that an index path identifies, with an option to animate the
    /// deselection. (No delegate messages, as in UIKit.)
    open func deselectRow(at indexPath: IndexPath, animated: Bool) {
        selectedIndexPaths.removeAll { $0 == indexPath }
        cellForRow(at: indexPath)?.setSelected(false, animated: animated)
    }

    // MARK: Editing

    // /documentation/UIKit/UITableView/isEditing (iOS 2.0+)
    /// A Boolean value that determines whether the table view is in editing mode. (Also true
    /// while a row's swipe actions are shown: "the table view sets its isEditing property to
    /// true", /documentation/UIKit/UITableViewDelegate/tableView(_:willBeginEditingRowAt:).)
    open var isEditing: Bool {
        get { storedIsEditing || openSwipe != nil }
        set { setEditing(newValue, animated: false) }
    }

    // /documentation/UIKit/UITableView/setEditing(_:animated:) (iOS 2.0+)
    /// Toggles the table view into and out of editing mode. Visible cells follow; an open
    /// swipe closes.
    open func setEditing(_ editing: Bool, animated: Bool) {
        if openSwipe != nil { endSwipe(rowStillExists: true) }
        guard editing != storedIsEditing else { return }
        storedIsEditing = editing
        for (path, view) in presentation.cells {
            guard let cell = view as? UITableViewCell else { continue }
            cell.setEditing(editing, animated: animated)
            cell.editingStyle = editing ? (delegate?.tableView(self, editingStyleForRowAt: path) ?? .delete) : .none
        }
    }

    // /documentation/UIKit/UITableView/dragInteractionEnabled (iOS 11.0+)
    @available(iOS 11.0, *)
    open var dragInteractionEnabled: Bool = false

    // MARK: Layout

    open override func layoutSubviews() {
        super.layoutSubviews()
        presentation.layoutPass()
    }

    open override func didMoveToWindow() {
        super.didMoveToWindow()
        // Put in a window, the table lays out (and so loads) at the next layout pass,
        // which the model runs now.
        if window != nil {
            setNeedsLayout()
            layoutIfNeeded()
        }
    }

    static func headerKey(_ section: Int) -> SupplementaryKey {
        SupplementaryKey(kind: "UITableViewSectionHeader", indexPath: IndexPath(row: 0, section: section))
    }

    static func footerKey(_ section: Int) -> SupplementaryKey {
        SupplementaryKey(kind: "UITableViewSectionFooter", indexPath: IndexPath(row: 0, section: section))
    }
}

extension UITableView {
    // /documentation/UIKit/UITableView/Style-swift.enum (iOS 2.0+)
    /// Constants for the table view styles.
    public enum Style: Int, Sendable {
        case plain = 0
        case grouped = 1
        @available(iOS 13.0, *)
        case insetGrouped = 2
    }

    // /documentation/UIKit/UITableView/RowAnimation (iOS 2.0+)
    /// The type of animation to use when inserting or deleting rows.
    public enum RowAnimation: Int, Sendable {
        case fade = 0
        case right = 1
        case left = 2
        case top = 3
        case bottom = 4
        case none = 5
        case middle = 6
        case automatic = 100
    }

    // /documentation/UIKit/UITableView/ScrollPosition (iOS 2.0+)
    /// The position in the table view to which the given row scrolls.
    public enum ScrollPosition: Int, Sendable {
        case none = 0
        case top = 1
        case middle = 2
        case bottom = 3
    }
}
