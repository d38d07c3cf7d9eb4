import Foundation

// The part of the simulated table and collection views that both share: what the view
// shows (counts per section, which cell is at which index path, which supplementary
// views are on screen), the layout pass that asks the data source for the cells of the
// visible rows only, batch updates recorded and applied through `resolveUpdate`, and
// prefetching. The views (the "hosts") translate to their own data source and delegate.

/// A supplementary view's place: a table's section header or footer, or a collection
/// view's supplementary element of a kind at an index path.
struct SupplementaryKey: Hashable, Sendable {
    let kind: String
    let indexPath: IndexPath
}

/// One element of a layout and its frame in content coordinates.
enum ListElement: Hashable, Sendable {
    case cell(IndexPath)
    case supplementary(SupplementaryKey)
}

/// The frames of everything the data could show, computed by the host from the counts.
struct ListLayout {
    var frames: [(element: ListElement, frame: CGRect)] = []
    var contentSize: CGSize = .zero

    func frame(of element: ListElement) -> CGRect? {
        frames.first { $0.element == element }?.frame
    }
}

/// What a simulated list view provides to the shared presentation.
@MainActor
protocol SimulatedListHost: AnyObject {
    var vocabulary: ListVocabulary { get }
    /// The visible rectangle in content coordinates (the view's bounds).
    var visibleRect: CGRect { get }
    func askNumberOfSections() -> Int
    func askNumberOfItems(inSection section: Int) -> Int
    func computeLayout(counts: [Int], presentation: ListPresentation) -> ListLayout
    /// Asks the data source for the cell (cellForRowAt / cellForItemAt).
    func askCell(at indexPath: IndexPath) -> UIView
    /// Asks for the supplementary view, nil when there is none.
    func askSupplementary(_ key: SupplementaryKey) -> UIView?
    func willDisplay(cell: UIView, at indexPath: IndexPath)
    func didEndDisplaying(cell: UIView, at indexPath: IndexPath)
    func willDisplay(supplementary view: UIView, _ key: SupplementaryKey)
    func didEndDisplaying(supplementary view: UIView, _ key: SupplementaryKey)
    /// Puts a cell that left the screen into the reuse queue.
    func enqueue(cell: UIView)
    func enqueue(supplementary view: UIView, _ key: SupplementaryKey)
    func prefetch(_ indexPaths: [IndexPath])
    func cancelPrefetching(_ indexPaths: [IndexPath])
    var prefetchingEnabled: Bool { get }
    var strictUpdates: Bool { get }
    func recordFailure(_ message: String)
    /// The update resolved: the host maps its own state (selection, open swipe, moves).
    func didApply(_ resolution: UpdateResolution)
    /// The data was reloaded: the host forgets index-path state (selection, swipe).
    func didReload()
    /// The layout changed the content size.
    func contentSizeChanged(_ size: CGSize)
}

/// The shown state of a simulated list view and the rules that change it.
///
/// Rules (each from Apple's documentation, cited in the code):
/// 1. The data source is asked for counts when the view first lays out, and again at the
///    next layout after `reloadData()`; its answers are the shown state.
/// 2. Only cells for rows whose frames intersect the visible rectangle are asked for, in
///    index-path order; cells leaving it end display and go to the reuse queue.
/// 3. A batch is recorded while its block runs (nested `beginUpdates` count as one), then
///    resolved against the counts the data source reports right after the block. A
///    violation is recorded as a failure with UIKit's message and the view reloads.
/// 4. A valid batch keeps the cells of kept and moved rows (they are not asked again),
///    ends the display of deleted and reloaded ones, asks for the cells of inserted and
///    reloaded rows that are visible, and asks reconfigured visible rows again with their
///    existing cell.
@MainActor
final class ListPresentation {
    unowned let host: any SimulatedListHost

    init(host: any SimulatedListHost) {
        self.host = host
    }

    /// True once the data source has been asked for counts.
    private(set) var isLoaded = false
    /// `reloadData()` was called and the next layout pass reloads.
    private(set) var needsReload = false
    /// Shown counts per section.
    private(set) var counts: [Int] = []
    /// The cell shown at each index path.
    private(set) var cells: [IndexPath: UIView] = [:]
    /// The supplementary views shown.
    private(set) var supplementaries: [SupplementaryKey: UIView] = [:]
    /// Index paths handed to the prefetch data source and not yet displayed or cancelled.
    private(set) var prefetched: Set<IndexPath> = []
    private var lastVisibleRect: CGRect?
    private(set) var layout = ListLayout()

    private var batchDepth = 0
    private var pending: [UpdateOperation] = []
    /// While a reconfigured row is asked again: its index path and existing cell.
    private(set) var reconfiguring: (indexPath: IndexPath, cell: UIView)?

    var isInBatch: Bool { batchDepth > 0 }

    // MARK: Loading (rule 1)

    /// Marks the data for reloading at the next layout pass (/documentation/UIKit/UITableView/reloadData():
    /// "the table view … redisplays the visible rows"; the model does it at the next layout).
    func setNeedsReload() {
        needsReload = true
        pending = []
    }

    /// Loads the counts when the view has none or a reload is pending.
    func loadIfNeeded() {
        guard !isLoaded || needsReload else { return }
        reload()
    }

    /// Counts first (the data source is asked as the reload starts), then the shown cells
    /// end their display and go to the reuse queue.
    private func reload() {
        let sectionCount = max(0, host.askNumberOfSections())
        let newCounts = (0..<sectionCount).map { max(0, host.askNumberOfItems(inSection: $0)) }
        for (path, cell) in cells.sorted(by: { $0.key < $1.key }) {
            host.didEndDisplaying(cell: cell, at: path)
            host.enqueue(cell: cell)
        }
        cells = [:]
        for (key, view) in supplementaries {
            host.didEndDisplaying(supplementary: view, key)
            host.enqueue(supplementary: view, key)
        }
        supplementaries = [:]
        counts = newCounts
        prefetched = []
        isLoaded = true
        needsReload = false
        host.didReload()
    }

    // MARK: Layout (rule 2)

    /// A layout pass: loads if needed, then brings the displayed cells and supplementary
    /// views in line with the visible rectangle.
    func layoutPass() {
        loadIfNeeded()
        updateVisible()
    }

    /// Visible elements; a second pass when self-sizing cells changed the frames.
    func updateVisible() {
        guard isLoaded else { return }
        for _ in 0..<3 {
            layout = host.computeLayout(counts: counts, presentation: self)
            host.contentSizeChanged(layout.contentSize)
            if !displayVisible() { break }
        }
        updatePrefetching()
    }

    /// Returns true when it displayed new cells (their sizes may change the layout).
    private func displayVisible() -> Bool {
        let rect = host.visibleRect
        var visibleCells: [IndexPath: CGRect] = [:]
        var visibleSupplementaries: [SupplementaryKey: CGRect] = [:]
        for (element, frame) in layout.frames where Self.intersects(frame, rect) {
            switch element {
            case .cell(let path): visibleCells[path] = frame
            case .supplementary(let key): visibleSupplementaries[key] = frame
            }
        }
        for (path, cell) in cells.sorted(by: { $0.key < $1.key }) where visibleCells[path] == nil {
            cells[path] = nil
            host.didEndDisplaying(cell: cell, at: path)
            host.enqueue(cell: cell)
        }
        for (key, view) in supplementaries where visibleSupplementaries[key] == nil {
            supplementaries[key] = nil
            host.didEndDisplaying(supplementary: view, key)
            host.enqueue(supplementary: view, key)
        }
        var displayedNew = false
        for (key, frame) in visibleSupplementaries.sorted(by: {
            ($0.key.indexPath, $0.key.kind) < ($1.key.indexPath, $1.key.kind)
        }) {
            if let shown = supplementaries[key] {
                shown.frame = frame
                continue
            }
            guard let view = host.askSupplementary(key) else { continue }
            view.frame = frame
            supplementaries[key] = view
            host.willDisplay(supplementary: view, key)
            displayedNew = true
        }
        for (path, frame) in visibleCells.sorted(by: { $0.key < $1.key }) {
            if let shown = cells[path] {
                if shown.frame != frame { shown.frame = frame }
                continue
            }
            let cell = host.askCell(at: path)
            cell.frame = frame
            cells[path] = cell
            prefetched.remove(path)
            host.willDisplay(cell: cell, at: path)
            displayedNew = true
        }
        return displayedNew
    }

    /// A frame is visible when it intersects the rectangle; an empty frame when its origin lies in it.
    /// Frames that only touch the rectangle's edge are not visible.
    static func intersects(_ frame: CGRect, _ rect: CGRect) -> Bool {
        if frame.width <= 0 || frame.height <= 0 {
            return frame.minY >= rect.minY && frame.minY < rect.maxY && frame.minX >= rect.minX
                && frame.minX < rect.maxX
        }
        return frame.minX < rect.maxX && frame.maxX > rect.minX && frame.minY < rect.maxY && frame.maxY > rect.minY
    }

    // MARK: Prefetching

    /// /documentation/UIKit/UITableViewDataSourcePrefetching: "the table view calls these
    /// methods … when rows are approaching the visible area". Model: the rows in the next
    /// screenful past the visible rectangle, in the direction of the last scroll (down at
    /// first) are prefetched; prefetched rows that are neither visible nor in that screenful
    /// any more are cancelled; a row that is displayed leaves the prefetched set.
    private func updatePrefetching() {
        let rect = host.visibleRect
        defer { lastVisibleRect = rect }
        guard host.prefetchingEnabled else { return }
        let movingBack = lastVisibleRect.map { rect.minY < $0.minY || rect.minX < $0.minX } ?? false
        let ahead: CGRect
        if layout.contentSize.width > rect.width + 0.5 && layout.contentSize.height <= rect.height + 0.5 {
            ahead = movingBack ? rect.offsetBy(dx: -rect.width, dy: 0) : rect.offsetBy(dx: rect.width, dy: 0)
        } else {
            ahead = movingBack ? rect.offsetBy(dx: 0, dy: -rect.height) : rect.offsetBy(dx: 0, dy: rect.height)
        }
        var wanted = Set<IndexPath>()
        for (element, frame) in layout.frames {
            guard case .cell(let path) = element, cells[path] == nil, Self.intersects(frame, ahead) else { continue }
            wanted.insert(path)
        }
        let cancelled = prefetched.subtracting(wanted).sorted()
        let started = wanted.subtracting(prefetched).sorted()
        prefetched = wanted
        if !cancelled.isEmpty { host.cancelPrefetching(cancelled) }
        if !started.isEmpty { host.prefetch(started) }
    }

    // MARK: Batch updates (rules 3 and 4)

    func beginBatch() {
        batchDepth += 1
    }

    /// Ends one level; the outermost end resolves and applies the recorded batch.
    func endBatch() {
        guard batchDepth > 0 else { return }
        batchDepth -= 1
        if batchDepth == 0 {
            let operations = pending
            pending = []
            perform(operations)
        }
    }

    /// Records an update call: inside a batch it waits for the end, alone it is a batch of one.
    func record(_ operation: UpdateOperation) {
        if batchDepth > 0 {
            pending.append(operation)
        } else {
            perform([operation])
        }
    }

    /// Resolves and applies a batch. A view that has not loaded (or has a reload pending)
    /// has no state to update: it reloads at its next layout instead — UIKit: "If the
    /// collection view's layout is not up to date before you call this method, a reload may
    /// occur." (/documentation/UIKit/UICollectionView/performBatchUpdates(_:completion:)).
    /// An empty batch is validated too: UIKit checks every section's count at the end of
    /// any batch, so data changed without update calls fails there.
    private func perform(_ operations: [UpdateOperation]) {
        guard isLoaded, !needsReload else {
            needsReload = true
            return
        }
        let sectionCount = max(0, host.askNumberOfSections())
        let result = resolveUpdate(
            operations, oldCounts: counts, newSectionCount: sectionCount,
            newRowCount: { self.host.askNumberOfItems(inSection: $0) },
            vocabulary: host.vocabulary, strict: host.strictUpdates
        )
        switch result {
        case .failure(let failure):
            host.recordFailure(failure.message)
            // Stay usable: show what the data source says now.
            reload()
            updateVisible()
        case .success(let resolution):
            apply(resolution)
        }
    }

    /// Cells removed by the update end their display at once, but go to the reuse queue only
    /// after the update's new cells are made: UIKit animates them out meanwhile, so a
    /// reloaded row gets another cell than the one it had.
    private func apply(_ resolution: UpdateResolution) {
        var kept: [IndexPath: UIView] = [:]
        var removed: [UIView] = []
        for (old, cell) in cells.sorted(by: { $0.key < $1.key }) {
            if let new = resolution.newPathByOldPath[old], case .kept = resolution.rows[new.section][new.row] {
                kept[new] = cell
            } else {
                host.didEndDisplaying(cell: cell, at: old)
                removed.append(cell)
            }
        }
        var keptSupplementaries: [SupplementaryKey: UIView] = [:]
        for (key, view) in supplementaries {
            if let newSection = resolution.newSectionByOldSection[key.indexPath.section],
                case .kept = resolution.sections[newSection]
            {
                var path = key.indexPath
                path[0] = newSection
                keptSupplementaries[SupplementaryKey(kind: key.kind, indexPath: path)] = view
            } else {
                host.didEndDisplaying(supplementary: view, key)
                host.enqueue(supplementary: view, key)
            }
        }
        cells = kept
        supplementaries = keptSupplementaries
        counts = resolution.counts
        prefetched = []
        host.didApply(resolution)
        for path in resolution.reconfigured {
            guard let existing = cells[path] else { continue }
            reconfigure(existing, at: path)
        }
        updateVisible()
        for cell in removed { host.enqueue(cell: cell) }
    }

    /// /documentation/UIKit/UITableView/reconfigureRows(at:): the data source is asked again
    /// and "must return the same existing cell for a given index path".
    private func reconfigure(_ existing: UIView, at path: IndexPath) {
        reconfiguring = (path, existing)
        let cell = host.askCell(at: path)
        reconfiguring = nil
        if cell !== existing {
            host.recordFailure(
                "Invalid reconfigure: the cell returned for the reconfigured \(host.vocabulary.element) at \(path.section) - \(path[1]) is not the existing cell; reconfiguring requires the cell provider to return the existing cell (dequeue it with the same reuse identifier)"
            )
            cells[path] = cell
            cell.frame = existing.frame
            host.didEndDisplaying(cell: existing, at: path)
            host.enqueue(cell: existing)
            host.willDisplay(cell: cell, at: path)
        }
    }

    // MARK: Moves made by the view itself (reorder, interactive movement)

    /// Moves a shown row as the user's drag does: the cell moves with it (not asked again),
    /// the counts change; no data source call here (the host calls moveRowAt afterwards).
    /// No layout pass here either: only after the data source has moved too may the view
    /// ask for cells again, or it would ask a data source that has not moved yet. The
    /// caller runs ``updateVisible()`` after the data source's callback (or the drop).
    func moveShownRow(from source: IndexPath, to destination: IndexPath) {
        guard source != destination else { return }
        var rowsBySection: [[UIView?]] = counts.enumerated().map { section, count in
            (0..<count).map { cells[IndexPath(row: $0, section: section)] }
        }
        let moving = rowsBySection[source.section].remove(at: source.row)
        rowsBySection[destination.section].insert(moving, at: destination.row)
        var newCells: [IndexPath: UIView] = [:]
        for (section, row) in rowsBySection.enumerated() {
            for (index, cell) in row.enumerated() {
                if let cell { newCells[IndexPath(row: index, section: section)] = cell }
            }
        }
        cells = newCells
        counts = rowsBySection.map(\.count)
        prefetched = []
    }

    // MARK: Inspection

    /// Index paths of the displayed cells, in order.
    var visibleIndexPaths: [IndexPath] { cells.keys.sorted() }
}
