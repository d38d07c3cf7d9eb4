import Foundation

// The simulated UICollectionView: the same presentation rules as the table view
// (SimulatedListPresentation.swift), with "items", a flow or list layout, supplementary
// views by kind, selection, list swipe actions and interactive movement.
//
// Rules:
// C1 Loading and visible items as for tables (T1, T2), with frames from the layout:
//    - UICollectionViewFlowLayout: items in lines across the scroll direction, each of
//      collectionView(_:layout:sizeForItemAt:) else itemSize; with a non-zero
//      estimatedItemSize the cells size themselves once shown (automaticSize: itemSize is
//      the estimate) (/documentation/UIKit/UICollectionViewFlowLayout/estimatedItemSize);
//      spacing, section insets and header/footer reference sizes from the delegate, else
//      the layout's properties; a zero reference size means no header/footer
//      (/documentation/UIKit/UICollectionViewFlowLayout/headerReferenceSize).
//    - UICollectionViewCompositionalLayout.list(using:): full-width items 44 points high
//      (or the cell's own height once shown), and section header/footer supplementary
//      views (UICollectionView.elementKindSectionHeader/Footer) when headerMode/footerMode
//      is .supplementary.
//    - Any other layout: a default flow layout.
// C2 Supplementary views come from collectionView(_:viewForSupplementaryElementOfKind:at:)
//    for visible ones, dequeued by kind and reuse identifier.
// C3 Selection: shouldHighlightItemAt → shouldSelectItemAt (false cancels) → in single
//    selection the previous item is deselected (didDeselectItemAt) → didSelectItemAt; a
//    tap on a selected item in multiple selection asks shouldDeselectItemAt
//    (/documentation/UIKit/UICollectionViewDelegate/collectionView(_:shouldSelectItemAt:)).
// C4 Interactive movement: beginInteractiveMovementForItem(at:) asks canMoveItemAt;
//    updateInteractiveMovementTargetPosition(_:) lets the delegate retarget and moves the
//    item in the view; endInteractiveMovement() then calls moveItemAt:to: if it moved
//    (/documentation/UIKit/UICollectionView/beginInteractiveMovementForItem(at:)).
// C5 Swipe actions in a list layout come from the list configuration's
//    leading/trailingSwipeActionsConfigurationProvider
//    (/documentation/UIKit/UICollectionLayoutListConfiguration-swift.struct/trailingSwipeActionsConfigurationProvider).

extension UICollectionView: SimulatedListHost {
    var vocabulary: ListVocabulary { .collection }
    var visibleRect: CGRect { bounds }
    var prefetchingEnabled: Bool { isPrefetchingEnabled && prefetchDataSource != nil }
    var strictUpdates: Bool { strictFlag }

    func askNumberOfSections() -> Int {
        guard let dataSource else { return 0 }
        return dataSource.numberOfSections(in: self)
    }

    func askNumberOfItems(inSection section: Int) -> Int {
        dataSource?.collectionView(self, numberOfItemsInSection: section) ?? 0
    }

    static let listRowHeight: CGFloat = 44
    static let listHeaderHeight: CGFloat = 44

    func computeLayout(counts: [Int], presentation: ListPresentation) -> ListLayout {
        if let list = (collectionViewLayout as? UICollectionViewCompositionalLayout)?.listConfiguration {
            return listLayout(counts: counts, configuration: list, presentation: presentation)
        }
        return flowLayout(
            counts: counts,
            layout: (collectionViewLayout as? UICollectionViewFlowLayout) ?? UICollectionViewFlowLayout(),
            presentation: presentation)
    }

    private func listLayout(
        counts: [Int], configuration: UICollectionLayoutListConfiguration, presentation: ListPresentation
    ) -> ListLayout {
        var layout = ListLayout()
        let width = bounds.width
        var y: CGFloat = 0
        for (section, count) in counts.enumerated() {
            if configuration.headerMode == .supplementary {
                let key = SupplementaryKey(
                    kind: Self.elementKindSectionHeader, indexPath: IndexPath(item: 0, section: section))
                layout.frames.append(
                    (.supplementary(key), CGRect(x: 0, y: y, width: width, height: Self.listHeaderHeight)))
                y += Self.listHeaderHeight
            }
            for item in 0..<count {
                let path = IndexPath(item: item, section: section)
                var height = Self.listRowHeight
                if let cell = presentation.cells[path] {
                    let fitted = cell.systemLayoutSizeFitting(
                        CGSize(width: width, height: UIView.layoutFittingCompressedSize.height)
                    ).height
                    if fitted > 0 { height = fitted }
                }
                layout.frames.append((.cell(path), CGRect(x: 0, y: y, width: width, height: height)))
                y += height
            }
            if configuration.footerMode == .supplementary {
                let key = SupplementaryKey(
                    kind: Self.elementKindSectionFooter, indexPath: IndexPath(item: 0, section: section))
                layout.frames.append(
                    (.supplementary(key), CGRect(x: 0, y: y, width: width, height: Self.listHeaderHeight)))
                y += Self.listHeaderHeight
            }
        }
        layout.contentSize = CGSize(width: width, height: y)
        return layout
    }

    /// The flow layout, computed along the scroll direction ("main") and across it ("cross").
    private func flowLayout(
        counts: [Int], layout flow: UICollectionViewFlowLayout, presentation: ListPresentation
    ) -> ListLayout {
        let flowDelegate = delegate as? UICollectionViewDelegateFlowLayout
        let vertical = flow.scrollDirection == .vertical
        let crossExtent = vertical ? bounds.width : bounds.height
        func rect(main: CGFloat, cross: CGFloat, mainLength: CGFloat, crossLength: CGFloat) -> CGRect {
            vertical
                ? CGRect(x: cross, y: main, width: crossLength, height: mainLength)
                : CGRect(x: main, y: cross, width: mainLength, height: crossLength)
        }
        var result = ListLayout()
        var main: CGFloat = 0
        for (section, count) in counts.enumerated() {
            let inset =
                flowDelegate?.collectionView(self, layout: flow, insetForSectionAt: section) ?? flow.sectionInset
            let lineSpacing =
                flowDelegate?.collectionView(self, layout: flow, minimumLineSpacingForSectionAt: section)
                ?? flow.minimumLineSpacing
            let interitem =
                flowDelegate?.collectionView(self, layout: flow, minimumInteritemSpacingForSectionAt: section)
                ?? flow.minimumInteritemSpacing
            let header =
                flowDelegate?.collectionView(self, layout: flow, referenceSizeForHeaderInSection: section)
                ?? flow.headerReferenceSize
            let footer =
                flowDelegate?.collectionView(self, layout: flow, referenceSizeForFooterInSection: section)
                ?? flow.footerReferenceSize
            let (insetMainStart, insetMainEnd, insetCrossStart, insetCrossEnd) =
                vertical
                ? (inset.top, inset.bottom, inset.left, inset.right)
                : (inset.left, inset.right, inset.top, inset.bottom)
            let headerLength = vertical ? header.height : header.width
            if headerLength > 0 {
                let key = SupplementaryKey(
                    kind: Self.elementKindSectionHeader, indexPath: IndexPath(item: 0, section: section))
                result.frames.append(
                    (
                        .supplementary(key),
                        rect(main: main, cross: 0, mainLength: headerLength, crossLength: crossExtent)
                    ))
                main += headerLength
            }
            main += insetMainStart
            let lineStart = insetCrossStart
            let lineEnd = crossExtent - insetCrossEnd
            var cross = lineStart
            var lineLength: CGFloat = 0
            for item in 0..<count {
                let path = IndexPath(item: item, section: section)
                let size = itemSize(path, flow: flow, flowDelegate: flowDelegate, presentation: presentation)
                let itemMain = vertical ? size.height : size.width
                let itemCross = vertical ? size.width : size.height
                if cross > lineStart && cross + itemCross > lineEnd + 0.001 {
                    main += lineLength + lineSpacing
                    cross = lineStart
                    lineLength = 0
                }
                result.frames.append(
                    (.cell(path), rect(main: main, cross: cross, mainLength: itemMain, crossLength: itemCross)))
                cross += itemCross + interitem
                lineLength = max(lineLength, itemMain)
            }
            main += lineLength + insetMainEnd
            let footerLength = vertical ? footer.height : footer.width
            if footerLength > 0 {
                let key = SupplementaryKey(
                    kind: Self.elementKindSectionFooter, indexPath: IndexPath(item: 0, section: section))
                result.frames.append(
                    (
                        .supplementary(key),
                        rect(main: main, cross: 0, mainLength: footerLength, crossLength: crossExtent)
                    ))
                main += footerLength
            }
        }
        result.contentSize =
            vertical ? CGSize(width: bounds.width, height: main) : CGSize(width: main, height: bounds.height)
        return result
    }

    private func itemSize(
        _ path: IndexPath, flow: UICollectionViewFlowLayout, flowDelegate: (any UICollectionViewDelegateFlowLayout)?,
        presentation: ListPresentation
    ) -> CGSize {
        let declared = flowDelegate?.collectionView(self, layout: flow, sizeForItemAt: path) ?? flow.itemSize
        guard flow.estimatedItemSize != .zero else { return declared }
        let estimate =
            flow.estimatedItemSize == UICollectionViewFlowLayout.automaticSize ? declared : flow.estimatedItemSize
        if let cell = presentation.cells[path] {
            let fitted = cell.systemLayoutSizeFitting(estimate)
            if fitted.width > 0 && fitted.height > 0 { return fitted }
        }
        return estimate
    }

    func contentSizeChanged(_ size: CGSize) {
        contentSize = size
    }

    func askCell(at indexPath: IndexPath) -> UIView {
        guard let dataSource else { return UICollectionViewCell(frame: .zero) }
        let cell = dataSource.collectionView(self, cellForItemAt: indexPath)
        if cell.reuseIdentifier == nil {
            recordFailure(
                "the cell returned from -collectionView:cellForItemAtIndexPath: does not have a reuseIdentifier - cells must be retrieved by calling -dequeueReusableCellWithReuseIdentifier:forIndexPath:"
            )
        }
        return cell
    }

    func askSupplementary(_ key: SupplementaryKey) -> UIView? {
        guard let dataSource else { return nil }
        return dataSource.collectionView(self, viewForSupplementaryElementOfKind: key.kind, at: key.indexPath)
    }

    func willDisplay(cell: UIView, at indexPath: IndexPath) {
        guard let cell = cell as? UICollectionViewCell else { return }
        cell.isSelected = selectedIndexPaths.contains(indexPath)
        delegate?.collectionView(self, willDisplay: cell, forItemAt: indexPath)
    }

    func didEndDisplaying(cell: UIView, at indexPath: IndexPath) {
        guard let cell = cell as? UICollectionViewCell else { return }
        delegate?.collectionView(self, didEndDisplaying: cell, forItemAt: indexPath)
    }

    func willDisplay(supplementary view: UIView, _ key: SupplementaryKey) {
        guard let view = view as? UICollectionReusableView else { return }
        delegate?.collectionView(self, willDisplaySupplementaryView: view, forElementKind: key.kind, at: key.indexPath)
    }

    func didEndDisplaying(supplementary view: UIView, _ key: SupplementaryKey) {
        guard let view = view as? UICollectionReusableView else { return }
        delegate?.collectionView(
            self, didEndDisplayingSupplementaryView: view, forElementOfKind: key.kind, at: key.indexPath)
    }

    func enqueue(cell: UIView) {
        guard let cell = cell as? UICollectionViewCell, let identifier = cell.reuseIdentifier else { return }
        cell.isSelected = false
        cellReusePool[identifier, default: []].append(cell)
    }

    func enqueue(supplementary view: UIView, _ key: SupplementaryKey) {
        guard let view = view as? UICollectionReusableView, let identifier = view.reuseIdentifier else { return }
        let kind = view.assignedElementKind ?? key.kind
        supplementaryReusePool[Self.supplementaryRegistrationKey(kind, identifier), default: []].append(view)
    }

    func prefetch(_ indexPaths: [IndexPath]) {
        prefetchDataSource?.collectionView(self, prefetchItemsAt: indexPaths)
    }

    func cancelPrefetching(_ indexPaths: [IndexPath]) {
        prefetchDataSource?.collectionView(self, cancelPrefetchingForItemsAt: indexPaths)
    }

    func recordFailure(_ message: String) {
        failures.append(message)
        failureHook?(message)
    }

    func didApply(_ resolution: UpdateResolution) {
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
                openSwipe = nil
            }
        }
        if let move = interactiveMove {
            // An update during a drag: UIKit cancels the movement; the model does too.
            interactiveMove = nil
            _ = move
        }
    }

    func didReload() {
        selectedIndexPaths = []
        openSwipe = nil
        interactiveMove = nil
    }

    func endSwipe() {
        openSwipe = nil
    }

    func itemExists(_ indexPath: IndexPath) -> Bool {
        let counts = presentation.counts
        return indexPath.count == 2 && indexPath.section >= 0 && indexPath.section < counts.count && indexPath.item >= 0
            && indexPath.item < counts[indexPath.section]
    }

    func moveShownItem(from source: IndexPath, to destination: IndexPath) {
        let wasSelected = selectedIndexPaths.contains(source)
        selectedIndexPaths = selectedIndexPaths.filter { $0 != source }.map {
            UITableView.path($0, afterMoving: source, to: destination)
        }
        if wasSelected { selectedIndexPaths.append(destination) }
        presentation.moveShownRow(from: source, to: destination)
        presentation.updateVisible()
    }
}

// MARK: - Simulation drivers and inspection (not Apple API)

@_spi(Simulation)
extension UICollectionView {
    /// Every failure the simulation recorded, in order (UIKit's messages; see UITableView's).
    public var simulationFailures: [String] {
        get { failures }
        set { failures = newValue }
    }

    /// Called with each failure as it is recorded.
    public var onSimulationFailure: ((String) -> Void)? {
        get { failureHook }
        set { failureHook = newValue }
    }

    /// When true (the default), repeats UIKit does not document are failures (see UITableView's).
    public var simulationFlagsUndocumentedUpdates: Bool {
        get { strictFlag }
        set { strictFlag = newValue }
    }

    public var simulatedIsLoaded: Bool { presentation.isLoaded }

    /// The items the collection view shows, per section (its own model).
    public var simulatedItemCounts: [Int] { presentation.counts }

    /// The cell shown at an index path (nil when the item is not visible).
    public func simulatedCell(at indexPath: IndexPath) -> UICollectionViewCell? {
        presentation.cells[indexPath] as? UICollectionViewCell
    }

    public var simulatedVisibleIndexPaths: [IndexPath] { presentation.visibleIndexPaths }

    /// The supplementary view shown for a kind at an index path.
    public func simulatedSupplementaryView(ofKind kind: String, at indexPath: IndexPath) -> UICollectionReusableView? {
        presentation.supplementaries[SupplementaryKey(kind: kind, indexPath: indexPath)] as? UICollectionReusableView
    }

    public var simulatedPrefetchedIndexPaths: [IndexPath] { presentation.prefetched.sorted() }

    /// The frame of an item in content coordinates (the simulated layout's).
    public func simulatedFrame(ofItemAt indexPath: IndexPath) -> CGRect? {
        frameForItem(at: indexPath)
    }

    public func simulatedReuseQueueCount(forIdentifier identifier: String) -> Int {
        cellReusePool[identifier]?.count ?? 0
    }

    /// Where the shown counts differ from the data source's now (empty when they agree).
    public func simulatedDisagreementsWithDataSource() -> [String] {
        let shown = presentation.counts
        let sections = askNumberOfSections()
        var lines: [String] = []
        if sections != shown.count {
            lines.append("sections: collection view shows \(shown.count), data source has \(sections)")
        }
        for section in 0..<min(sections, shown.count) {
            let items = askNumberOfItems(inSection: section)
            if items != shown[section] {
                lines.append(
                    "section \(section): collection view shows \(shown[section]) items, data source has \(items)")
            }
        }
        return lines
    }

    public func simulateScroll(to contentOffset: CGPoint) {
        self.contentOffset = contentOffset
        layoutIfNeeded()
    }

    /// A tap on an item (C3). Returns the index path selected, if any.
    @discardableResult
    public func simulateTap(at indexPath: IndexPath) -> IndexPath? {
        presentation.loadIfNeeded()
        guard itemExists(indexPath) else { return nil }
        let editing = storedIsEditing
        guard editing ? allowsSelectionDuringEditing : allowsSelection else { return nil }
        guard delegate?.collectionView(self, shouldHighlightItemAt: indexPath) ?? true else { return nil }
        cellForItem(at: indexPath)?.isHighlighted = true
        delegate?.collectionView(self, didHighlightItemAt: indexPath)
        cellForItem(at: indexPath)?.isHighlighted = false
        delegate?.collectionView(self, didUnhighlightItemAt: indexPath)
        let multiple = editing ? allowsMultipleSelectionDuringEditing : allowsMultipleSelection
        if multiple, selectedIndexPaths.contains(indexPath) {
            guard delegate?.collectionView(self, shouldDeselectItemAt: indexPath) ?? true else { return nil }
            deselectItem(at: indexPath, animated: false)
            delegate?.collectionView(self, didDeselectItemAt: indexPath)
            return nil
        }
        guard delegate?.collectionView(self, shouldSelectItemAt: indexPath) ?? true else { return nil }
        if !multiple {
            for previous in selectedIndexPaths where previous != indexPath {
                deselectItem(at: previous, animated: false)
                delegate?.collectionView(self, didDeselectItemAt: previous)
            }
        }
        if !selectedIndexPaths.contains(indexPath) { selectedIndexPaths.append(indexPath) }
        cellForItem(at: indexPath)?.isSelected = true
        delegate?.collectionView(self, didSelectItemAt: indexPath)
        return indexPath
    }

    /// A swipe on an item of a list layout (C5): the configuration's provider for the
    /// edge answers; nil when there is none (no list layout, no provider, no actions).
    @discardableResult
    public func simulateSwipe(_ edge: SimulatedSwipeEdge, at indexPath: IndexPath) -> UISwipeActionsConfiguration? {
        presentation.loadIfNeeded()
        guard itemExists(indexPath), !storedIsEditing,
            let list = (collectionViewLayout as? UICollectionViewCompositionalLayout)?.listConfiguration
        else { return nil }
        openSwipe = nil
        let provider =
            edge == .leading
            ? list.leadingSwipeActionsConfigurationProvider : list.trailingSwipeActionsConfigurationProvider
        guard let configuration = provider?(indexPath), !configuration.actions.isEmpty else { return nil }
        openSwipe = SwipeState(indexPath: indexPath, configuration: configuration, edge: edge)
        return configuration
    }

    public var simulatedOpenSwipeIndexPath: IndexPath? { openSwipe?.indexPath }

    /// Taps a swipe action: runs its handler with the item's cell as source view; the swipe
    /// closes when the handler calls its completion.
    public func simulatePerform(_ action: UIContextualAction, completion: ((Bool) -> Void)? = nil) {
        let source: UIView = openSwipe.flatMap { cellForItem(at: $0.indexPath) } ?? self
        action.handler(action, source) { [weak self] performed in
            completion?(performed)
            self?.endSwipe()
        }
    }

    public func simulateEndSwipe() {
        endSwipe()
    }

    /// A whole drag (C4): begin on `source`, move over the centre of the item at
    /// `proposed`, end. Returns where the item ended, or nil when it could not move.
    @discardableResult
    public func simulateInteractiveMove(from source: IndexPath, to proposed: IndexPath) -> IndexPath? {
        guard beginInteractiveMovementForItem(at: source) else { return nil }
        if let frame = frameForItem(at: proposed) {
            updateInteractiveMovementTargetPosition(CGPoint(x: frame.midX, y: frame.midY))
        }
        let final = interactiveMove?.current
        endInteractiveMovement()
        return final
    }

    /// The current index path of the item being moved interactively.
    public var simulatedInteractiveMovementIndexPath: IndexPath? { interactiveMove?.current }
}
