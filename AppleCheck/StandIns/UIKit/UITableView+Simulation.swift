// Why this file is over 450 lines: rules T1-T8 below share the table's presentation state
// and cite each other; the collection view's model reuses them from ListPresentation.
import Foundation

// The simulated UITableView: how it asks its data source and delegate, and the drivers a
// test uses to act as the user. Every rule cites the page it comes from; DEVIATIONS.md
// lists what the model guesses.
//
// Rules:
// T1 Loading. Counts are asked (numberOfSections(in:), then tableView(_:numberOfRowsInSection:)
//    per section) at the first layout pass, and at the next one after reloadData()
//    (/documentation/UIKit/UITableView/reloadData()). numberOfSections/numberOfRows(inSection:)
//    on the table load first if needed.
// T2 Visible rows only. Frames come from heights: tableView(_:heightForRowAt:), else
//    rowHeight; automaticDimension → the cell's own fitting height once it is shown, else
//    the estimate (tableView(_:estimatedHeightForRowAt:), else estimatedRowHeight), else 44.
//    Header/footer heights likewise (automatic → the shown view's height, the estimate, or
//    28 points; 0 for a section found to have no header). Cells are asked
//    (tableView(_:cellForRowAt:)) for rows whose frames intersect the bounds at the
//    contentOffset, and willDisplay/didEndDisplaying bracket each display
//    (/documentation/UIKit/UITableViewDelegate/tableView(_:willDisplay:forRowAt:),
//    .../tableView(_:didEndDisplaying:forRowAt:)).
// T3 Dequeue by reuse identifier from registered classes; cells that end display are
//    queued for reuse and get prepareForReuse() when dequeued again
//    (/documentation/UIKit/UITableView/dequeueReusableCell(withIdentifier:for:)).
// T4 Batch updates: see SimulatedBatchUpdate.swift and SimulatedListPresentation.swift.
// T5 Headers and footers: tableView(_:viewForHeaderInSection:) for visible sections, else a
//    standard UITableViewHeaderFooterView with tableView(_:titleForHeaderInSection:)
//    (/documentation/UIKit/UITableViewDelegate/tableView(_:viewForHeaderInSection:)).
// T6 Selection: shouldHighlightRowAt → willSelectRowAt (nil cancels, another path
//    redirects) → in single selection, willDeselectRowAt/didDeselectRowAt for the previous
//    selection → selection → didSelectRowAt; allowsSelection / allowsSelectionDuringEditing
//    gate it (/documentation/UIKit/UITableViewDelegate/tableView(_:willSelectRowAt:),
//    /documentation/UIKit/UITableView/allowsSelectionDuringEditing).
// T7 Swipe actions: willBeginEditingRowAt, then the delegate's configuration; for the
//    trailing edge nil means the default actions: a "Delete" action when the row is
//    editable and its editing style is .delete, which commits .delete
//    (/documentation/UIKit/UITableViewDelegate/tableView(_:trailingSwipeActionsConfigurationForRowAt:),
//    /documentation/UIKit/UITableViewDataSource/tableView(_:commit:forRowAt:)); the swipe
//    ends with didEndEditingRowAt (/documentation/UIKit/UITableViewDelegate/tableView(_:didEndEditingRowAt:)).
// T8 Reordering in editing mode: canMoveRowAt, targetIndexPathForMoveFromRowAt:toProposedIndexPath:
//    may retarget, the table moves the row itself (no cellForRowAt), then the data source's
//    tableView(_:moveRowAt:to:) (/documentation/UIKit/UITableViewDataSource/tableView(_:moveRowAt:to:)).

/// The edge a simulated swipe starts from.
@_spi(Simulation)
public enum SimulatedSwipeEdge: Sendable {
    case leading
    case trailing
}

/// An open swipe: the row (tracked through updates), its actions and edge.
struct SwipeState {
    var indexPath: IndexPath
    let configuration: UISwipeActionsConfiguration
    let edge: SimulatedSwipeEdge
}

extension UITableView: SimulatedListHost {
    var vocabulary: ListVocabulary { .table }
    var visibleRect: CGRect { bounds }
    var prefetchingEnabled: Bool { isPrefetchingEnabled && prefetchDataSource != nil }
    var strictUpdates: Bool { simulationFlagsUndocumentedUpdates }

    func askNumberOfSections() -> Int {
        guard let dataSource else { return 0 }
        return dataSource.numberOfSections(in: self)
    }

    func askNumberOfItems(inSection section: Int) -> Int {
        dataSource?.tableView(self, numberOfRowsInSection: section) ?? 0
    }

    // MARK: Heights (T2)

    static let fallbackRowHeight: CGFloat = 44
    static let fallbackHeaderFooterHeight: CGFloat = 28

    func resolvedRowHeight(_ path: IndexPath, presentation: ListPresentation) -> CGFloat {
        let height = delegate?.tableView(self, heightForRowAt: path) ?? rowHeight
        if height != UITableView.automaticDimension { return max(0, height) }
        if let cell = presentation.cells[path] {
            let fitted = cell.systemLayoutSizeFitting(
                CGSize(width: bounds.width, height: UIView.layoutFittingCompressedSize.height)
            ).height
            if fitted > 0 { return fitted }
        }
        let estimate = delegate?.tableView(self, estimatedHeightForRowAt: path) ?? estimatedRowHeight
        if estimate > 0 && estimate != UITableView.automaticDimension { return estimate }
        return Self.fallbackRowHeight
    }

    func resolvedHeaderFooterHeight(_ key: SupplementaryKey, header: Bool, presentation: ListPresentation) -> CGFloat {
        let section = key.indexPath.section
        let height =
            header
            ? (delegate?.tableView(self, heightForHeaderInSection: section) ?? sectionHeaderHeight)
            : (delegate?.tableView(self, heightForFooterInSection: section) ?? sectionFooterHeight)
        if height != UITableView.automaticDimension { return max(0, height) }
        if header ? headerlessSections.contains(section) : footerlessSections.contains(section) { return 0 }
        if let view = presentation.supplementaries[key] {
            let fitted = view.systemLayoutSizeFitting(
                CGSize(width: bounds.width, height: UIView.layoutFittingCompressedSize.height)
            ).height
            if fitted > 0 { return fitted }
        }
        let estimate =
            header
            ? (delegate?.tableView(self, estimatedHeightForHeaderInSection: section) ?? estimatedSectionHeaderHeight)
            : (delegate?.tableView(self, estimatedHeightForFooterInSection: section) ?? estimatedSectionFooterHeight)
        if estimate > 0 && estimate != UITableView.automaticDimension { return estimate }
        return Self.fallbackHeaderFooterHeight
    }

    func computeLayout(counts: [Int], presentation: ListPresentation) -> ListLayout {
        var layout = ListLayout()
        let width = bounds.width
        var y = tableHeaderView?.frame.height ?? 0
        for (section, count) in counts.enumerated() {
            let headerKey = Self.headerKey(section)
            let headerHeight = resolvedHeaderFooterHeight(headerKey, header: true, presentation: presentation)
            if headerHeight > 0 {
                layout.frames.append(
                    (.supplementary(headerKey), CGRect(x: 0, y: y, width: width, height: headerHeight)))
                y += headerHeight
            }
            for row in 0..<count {
                let path = IndexPath(row: row, section: section)
                let height = resolvedRowHeight(path, presentation: presentation)
                layout.frames.append((.cell(path), CGRect(x: 0, y: y, width: width, height: height)))
                y += height
            }
            let footerKey = Self.footerKey(section)
            let footerHeight = resolvedHeaderFooterHeight(footerKey, header: false, presentation: presentation)
            if footerHeight > 0 {
                layout.frames.append(
                    (.supplementary(footerKey), CGRect(x: 0, y: y, width: width, height: footerHeight)))
                y += footerHeight
            }
        }
        y += tableFooterView?.frame.height ?? 0
        layout.contentSize = CGSize(width: width, height: y)
        return layout
    }

    func contentSizeChanged(_ size: CGSize) {
        contentSize = size
    }

    // MARK: Cells and header/footer views (T2, T3, T5)

    func askCell(at indexPath: IndexPath) -> UIView {
        guard let dataSource else { return UITableViewCell(style: .default, reuseIdentifier: nil) }
        return dataSource.tableView(self, cellForRowAt: indexPath)
    }

    func askSupplementary(_ key: SupplementaryKey) -> UIView? {
        let section = key.indexPath.section
        let isHeader = key.kind == Self.headerKey(section).kind
        if let view = isHeader
            ? delegate?.tableView(self, viewForHeaderInSection: section)
            : delegate?.tableView(self, viewForFooterInSection: section)
        {
            return view
        }
        let title =
            isHeader
            ? dataSource?.tableView(self, titleForHeaderInSection: section)
            : dataSource?.tableView(self, titleForFooterInSection: section)
        guard let title else {
            if isHeader { headerlessSections.insert(section) } else { footerlessSections.insert(section) }
            return nil
        }
        let view = standardHeaderFooterPool.popLast() ?? UITableViewHeaderFooterView(reuseIdentifier: nil)
        view.standardTitle = title
        return view
    }

    func willDisplay(cell: UIView, at indexPath: IndexPath) {
        guard let cell = cell as? UITableViewCell else { return }
        cell.setSelected(selectedIndexPaths.contains(indexPath), animated: false)
        if cell.isEditing != storedIsEditing { cell.setEditing(storedIsEditing, animated: false) }
        delegate?.tableView(self, willDisplay: cell, forRowAt: indexPath)
    }

    func didEndDisplaying(cell: UIView, at indexPath: IndexPath) {
        guard let cell = cell as? UITableViewCell else { return }
        delegate?.tableView(self, didEndDisplaying: cell, forRowAt: indexPath)
    }

    func willDisplay(supplementary view: UIView, _ key: SupplementaryKey) {
        if key.kind == Self.headerKey(0).kind {
            delegate?.tableView(self, willDisplayHeaderView: view, forSection: key.indexPath.section)
        } else {
            delegate?.tableView(self, willDisplayFooterView: view, forSection: key.indexPath.section)
        }
    }

    func didEndDisplaying(supplementary view: UIView, _ key: SupplementaryKey) {
        if key.kind == Self.headerKey(0).kind {
            delegate?.tableView(self, didEndDisplayingHeaderView: view, forSection: key.indexPath.section)
        } else {
            delegate?.tableView(self, didEndDisplayingFooterView: view, forSection: key.indexPath.section)
        }
    }

    func enqueue(cell: UIView) {
        guard let cell = cell as? UITableViewCell, let identifier = cell.reuseIdentifier else { return }
        cell.setSelected(false, animated: false)
        cellReusePool[identifier, default: []].append(cell)
    }

    func enqueue(supplementary view: UIView, _ key: SupplementaryKey) {
        guard let view = view as? UITableViewHeaderFooterView else { return }
        if let identifier = view.reuseIdentifier {
            headerFooterReusePool[identifier, default: []].append(view)
        } else if view.standardTitle != nil {
            standardHeaderFooterPool.append(view)
        }
    }

    func prefetch(_ indexPaths: [IndexPath]) {
        prefetchDataSource?.tableView(self, prefetchRowsAt: indexPaths)
    }

    func cancelPrefetching(_ indexPaths: [IndexPath]) {
        prefetchDataSource?.tableView(self, cancelPrefetchingForRowsAt: indexPaths)
    }

    func recordFailure(_ message: String) {
        failures.append(message)
        onSimulationFailure?(message)
    }

    // MARK: State through updates

    /// Selection and an open swipe follow their rows; a deleted or reloaded row loses its
    /// selection, and a deleted row closes its swipe (didEndEditingRowAt with nil).
    func didApply(_ resolution: UpdateResolution) {
        headerlessSections = []
        footerlessSections = []
        selectedIndexPaths = selectedIndexPaths.compactMap { old in
            guard let new = resolution.newPathByOldPath[old], case .kept = resolution.rows[new.section][new.row] else {
                return nil
            }
            return new
        }
        if let swipe = openSwipe {
            if let new = resolution.newPathByOldPath[swipe.indexPath],
                case .kept = resolution.rows[new.section][new.row]
            {
                openSwipe?.indexPath = new
            } else {
                endSwipe(rowStillExists: false)
            }
        }
    }

    /// reloadData clears the selection and closes a swipe.
    func didReload() {
        headerlessSections = []
        footerlessSections = []
        selectedIndexPaths = []
        if openSwipe != nil { endSwipe(rowStillExists: false) }
    }

    func endSwipe(rowStillExists: Bool) {
        guard let swipe = openSwipe else { return }
        openSwipe = nil
        delegate?.tableView(self, didEndEditingRowAt: rowStillExists ? swipe.indexPath : nil)
    }

    func rowExists(_ indexPath: IndexPath) -> Bool {
        let counts = presentation.counts
        return indexPath.count == 2 && indexPath.section >= 0 && indexPath.section < counts.count && indexPath.row >= 0
            && indexPath.row < counts[indexPath.section]
    }
}

// MARK: - Simulation drivers and inspection (not Apple API)

@_spi(Simulation)
extension UITableView {
    /// Every failure the simulation recorded, in order: UIKit's exception messages for
    /// invalid batch updates and dequeues, and the stand-in's own for what UIKit leaves
    /// undocumented. After a batch failure the table reloads from its data source.
    public var simulationFailures: [String] {
        get { failures }
        set { failures = newValue }
    }

    /// Called with each failure as it is recorded.
    public var onSimulationFailure: ((String) -> Void)? {
        get { failureHook }
        set { failureHook = newValue }
    }

    /// When true (the default), a batch that names a section or row twice in the same kind
    /// of call (e.g. reloadSections twice for one section) is recorded as a failure: UIKit
    /// does not document what it does.
    public var simulationFlagsUndocumentedUpdates: Bool {
        get { strictFlag }
        set { strictFlag = newValue }
    }

    /// True once the table has asked its data source for counts.
    public var simulatedIsLoaded: Bool { presentation.isLoaded }

    /// The rows the table shows, per section (its own model, not the data source's).
    public var simulatedRowCounts: [Int] { presentation.counts }

    /// The cell shown at an index path (nil when the row is not visible).
    public func simulatedCell(at indexPath: IndexPath) -> UITableViewCell? {
        presentation.cells[indexPath] as? UITableViewCell
    }

    /// The index paths of the shown cells, in order.
    public var simulatedVisibleIndexPaths: [IndexPath] { presentation.visibleIndexPaths }

    /// The header or footer view shown for a section.
    public func simulatedHeaderView(forSection section: Int) -> UIView? {
        presentation.supplementaries[Self.headerKey(section)]
    }

    public func simulatedFooterView(forSection section: Int) -> UIView? {
        presentation.supplementaries[Self.footerKey(section)]
    }

    /// Index paths handed to the prefetch data source and not yet displayed or cancelled.
    public var simulatedPrefetchedIndexPaths: [IndexPath] { presentation.prefetched.sorted() }

    /// Cells waiting in the reuse queue for an identifier.
    public func simulatedReuseQueueCount(forIdentifier identifier: String) -> Int {
        cellReusePool[identifier]?.count ?? 0
    }

    /// Where the shown counts differ from what the data source reports now, one line per
    /// difference (empty when they agree). Asks the data source.
    public func simulatedDisagreementsWithDataSource() -> [String] {
        let shown = presentation.counts
        let sections = askNumberOfSections()
        var lines: [String] = []
        if sections != shown.count { lines.append("sections: table shows \(shown.count), data source has \(sections)") }
        for section in 0..<min(sections, shown.count) {
            let rows = askNumberOfItems(inSection: section)
            if rows != shown[section] {
                lines.append("section \(section): table shows \(shown[section]) rows, data source has \(rows)")
            }
        }
        return lines
    }

    /// Scrolls: sets `contentOffset` and runs the layout pass the scroll would cause.
    public func simulateScroll(to contentOffset: CGPoint) {
        self.contentOffset = contentOffset
        layoutIfNeeded()
    }

    /// A tap on a row (T6). Returns the index path that ended up selected, if any.
    @discardableResult
    public func simulateTap(at indexPath: IndexPath) -> IndexPath? {
        presentation.loadIfNeeded()
        guard rowExists(indexPath) else { return nil }
        let editing = storedIsEditing
        guard editing ? allowsSelectionDuringEditing : allowsSelection else { return nil }
        guard delegate?.tableView(self, shouldHighlightRowAt: indexPath) ?? true else { return nil }
        cellForRow(at: indexPath)?.setHighlighted(true, animated: false)
        delegate?.tableView(self, didHighlightRowAt: indexPath)
        cellForRow(at: indexPath)?.setHighlighted(false, animated: false)
        delegate?.tableView(self, didUnhighlightRowAt: indexPath)
        let multiple = editing ? allowsMultipleSelectionDuringEditing : allowsMultipleSelection
        if multiple, selectedIndexPaths.contains(indexPath) {
            // A tap on a selected row in multiple selection deselects it.
            guard let target = delegate.map({ $0.tableView(self, willDeselectRowAt: indexPath) }) ?? indexPath else {
                return nil
            }
            deselectRow(at: target, animated: false)
            delegate?.tableView(self, didDeselectRowAt: target)
            return nil
        }
        guard let target = delegate.map({ $0.tableView(self, willSelectRowAt: indexPath) }) ?? indexPath else {
            return nil
        }
        guard rowExists(target) else { return nil }
        if !multiple {
            for previous in selectedIndexPaths where previous != target {
                guard let deselected = delegate.map({ $0.tableView(self, willDeselectRowAt: previous) }) ?? previous
                else { continue }
                deselectRow(at: deselected, animated: false)
                delegate?.tableView(self, didDeselectRowAt: deselected)
            }
        }
        if !selectedIndexPaths.contains(target) { selectedIndexPaths.append(target) }
        cellForRow(at: target)?.setSelected(true, animated: false)
        delegate?.tableView(self, didSelectRowAt: target)
        return target
    }

    /// A swipe on a row from an edge (T7): returns the actions shown, or nil when none.
    /// A swipe already open on another row closes first. Not in editing mode.
    @discardableResult
    public func simulateSwipe(_ edge: SimulatedSwipeEdge, at indexPath: IndexPath) -> UISwipeActionsConfiguration? {
        presentation.loadIfNeeded()
        guard rowExists(indexPath), !storedIsEditing else { return nil }
        if openSwipe != nil { endSwipe(rowStillExists: true) }
        guard dataSource?.tableView(self, canEditRowAt: indexPath) ?? false else { return nil }
        delegate?.tableView(self, willBeginEditingRowAt: indexPath)
        var configuration: UISwipeActionsConfiguration?
        switch edge {
        case .leading:
            configuration = delegate?.tableView(self, leadingSwipeActionsConfigurationForRowAt: indexPath)
        case .trailing:
            configuration = delegate?.tableView(self, trailingSwipeActionsConfigurationForRowAt: indexPath)
            if configuration == nil { configuration = defaultTrailingActions(for: indexPath) }
        }
        guard let configuration, !configuration.actions.isEmpty else {
            delegate?.tableView(self, didEndEditingRowAt: indexPath)
            return nil
        }
        openSwipe = SwipeState(indexPath: indexPath, configuration: configuration, edge: edge)
        return configuration
    }

    /// UIKit's default trailing actions: "Delete" (or the delegate's title) when the row's
    /// editing style is .delete; its handler commits .delete for the row where it is now.
    private func defaultTrailingActions(for indexPath: IndexPath) -> UISwipeActionsConfiguration? {
        let style = delegate?.tableView(self, editingStyleForRowAt: indexPath) ?? .delete
        guard style == .delete else { return nil }
        let title = delegate?.tableView(self, titleForDeleteConfirmationButtonForRowAt: indexPath) ?? "Delete"
        let action = UIContextualAction(style: .destructive, title: title) { [weak self] _, _, completion in
            guard let self, let current = self.openSwipe?.indexPath ?? Optional(indexPath), self.rowExists(current)
            else {
                completion(false)
                return
            }
            self.dataSource?.tableView(self, commit: .delete, forRowAt: current)
            completion(true)
        }
        return UISwipeActionsConfiguration(actions: [action])
    }

    /// The row whose swipe actions are open, tracked through updates.
    public var simulatedOpenSwipeIndexPath: IndexPath? { openSwipe?.indexPath }

    /// Taps a swipe action: runs its handler with the row's cell as source view. The swipe
    /// closes (didEndEditingRowAt) when the handler calls its completion, or at once when
    /// the row was deleted meanwhile.
    public func simulatePerform(_ action: UIContextualAction, completion: ((Bool) -> Void)? = nil) {
        let source: UIView = openSwipe.flatMap { cellForRow(at: $0.indexPath) } ?? self
        action.handler(action, source) { [weak self] performed in
            completion?(performed)
            self?.endSwipe(rowStillExists: true)
        }
    }

    /// A full swipe: performs the first action when the configuration allows it.
    public func simulateFullSwipe(
        _ edge: SimulatedSwipeEdge, at indexPath: IndexPath, completion: ((Bool) -> Void)? = nil
    ) {
        guard let configuration = simulateSwipe(edge, at: indexPath) else { return }
        guard configuration.performsFirstActionWithFullSwipe, let first = configuration.actions.first else { return }
        simulatePerform(first, completion: completion)
    }

    /// Closes the open swipe without an action (a tap elsewhere).
    public func simulateEndSwipe() {
        endSwipe(rowStillExists: true)
    }

    /// In editing mode, taps the row's delete (or insert) control: commits the style when
    /// the row is editable and its editing style is that style. Returns whether it committed.
    @discardableResult
    public func simulateCommitEditing(_ style: UITableViewCell.EditingStyle, forRowAt indexPath: IndexPath) -> Bool {
        presentation.loadIfNeeded()
        guard storedIsEditing, rowExists(indexPath), style != .none,
            dataSource?.tableView(self, canEditRowAt: indexPath) ?? false,
            (delegate?.tableView(self, editingStyleForRowAt: indexPath) ?? .delete) == style
        else { return false }
        dataSource?.tableView(self, commit: style, forRowAt: indexPath)
        return true
    }

    /// Drags a row by its reorder control to a proposed index path (T8). In editing mode
    /// only, when canMoveRowAt allows; the delegate may retarget. The table moves the row
    /// (the cell moves, no cellForRowAt), then calls tableView(_:moveRowAt:to:). Returns
    /// the final index path, or nil when the move did not happen.
    @discardableResult
    public func simulateMove(from source: IndexPath, to proposed: IndexPath) -> IndexPath? {
        presentation.loadIfNeeded()
        guard storedIsEditing, rowExists(source),
            dataSource?.tableView(self, canMoveRowAt: source) ?? false
        else { return nil }
        func valid(_ destination: IndexPath) -> Bool {
            let counts = presentation.counts
            guard destination.section >= 0, destination.section < counts.count, destination.row >= 0 else {
                return false
            }
            let limit = counts[destination.section] - (destination.section == source.section ? 1 : 0)
            return destination.row <= limit
        }
        guard valid(proposed) else { return nil }
        let destination =
            delegate?.tableView(self, targetIndexPathForMoveFromRowAt: source, toProposedIndexPath: proposed)
            ?? proposed
        guard valid(destination) else {
            recordFailure(
                "Invalid move: tableView(_:targetIndexPathForMoveFromRowAt:toProposedIndexPath:) returned \(destination.section) - \(destination.row), which is not a place for the row"
            )
            return nil
        }
        guard destination != source else { return nil }
        let wasSelected = selectedIndexPaths.contains(source)
        selectedIndexPaths = selectedIndexPaths.filter { $0 != source }.map {
            Self.path($0, afterMoving: source, to: destination)
        }
        if wasSelected { selectedIndexPaths.append(destination) }
        uncommittedMove = true
        presentation.moveShownRow(from: source, to: destination)
        dataSource?.tableView(self, moveRowAt: source, to: destination)
        uncommittedMove = false
        presentation.updateVisible()  // the next layout pass, after the data source moved too
        return destination
    }

    /// Where a row at `path` is after one row moved from `source` to `destination`.
    static func path(_ path: IndexPath, afterMoving source: IndexPath, to destination: IndexPath) -> IndexPath {
        var result = path
        if path.section == source.section && path.row > source.row { result.row -= 1 }
        if result.section == destination.section && result.row >= destination.row { result.row += 1 }
        return result
    }
}
