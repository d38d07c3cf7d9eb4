// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

extension CollectionDirector: UICollectionViewDataSource {
    public func numberOfSections(in collectionView: UICollectionView) -> Int {
        presenter.numberOfSections
    }

    public func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int {
        presenter.numberOfRows(inSection: section)
    }

    public func collectionView(
        _ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath
    ) -> UICollectionViewCell {
        guard let item = presenter.item(at: Self.rowPath(indexPath)) else {
            return collectionView.dequeueReusableCell(withReuseIdentifier: Self.fallbackReuseIdentifier, for: indexPath)
        }
        let cell: UICollectionViewCell
        if let adapter = item.adapter, case .success? = item.model {
            cell = collectionView.dequeueReusableCell(withReuseIdentifier: adapter.reuseIdentifier, for: indexPath)
            cellItems[ObjectIdentifier(cell)] = item
            adapter.handle(.configure(cell), item, at: indexPath, director: self)
        } else {
            let failure: ModelDecodingFailure?
            if case .failure(let error)? = item.model { failure = error } else { failure = nil }
            cell =
                fallback?(
                    CollectionFallbackContext(
                        row: item.row, indexPath: indexPath, failure: failure, collectionView: collectionView))
                ?? collectionView.dequeueReusableCell(withReuseIdentifier: Self.fallbackReuseIdentifier, for: indexPath)
            cellItems[ObjectIdentifier(cell)] = item
        }
        return cell
    }

    public func collectionView(
        _ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String,
        at indexPath: IndexPath
    ) -> UICollectionReusableView {
        guard let element = Self.element(ofKind: kind), let shown = supplementary(element, inSection: indexPath.section)
        else {
            // The layout asked where the list has nothing (a reference size set on the
            // layout itself, say): UIKit requires a view, so an empty one.
            return collectionView.dequeueReusableSupplementaryView(
                ofKind: kind, withReuseIdentifier: Self.fallbackReuseIdentifier,
                for: indexPath)
        }
        let view = collectionView.dequeueReusableSupplementaryView(
            ofKind: kind, withReuseIdentifier: shown.registration.adapter.reuseIdentifier,
            for: indexPath)
        _ = shown.registration.adapter.configure(
            view, value: shown.value, section: indexPath.section, sectionID: shown.sectionID,
            element: element, director: self)
        return view
    }

    public func collectionView(_ collectionView: UICollectionView, canMoveItemAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.canMove(item, at: indexPath, director: self)
    }

    public func collectionView(
        _ collectionView: UICollectionView, moveItemAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {
        // The collection view already shows the item at its destination.
        let item = presenter.item(at: Self.rowPath(sourceIndexPath))
        switch presenter.viewDidMoveRow(from: Self.rowPath(sourceIndexPath), to: Self.rowPath(destinationIndexPath)) {
        case .unchanged:
            return
        case .written(let ticket):
            if let item {
                item.adapter?.didMove(item, from: sourceIndexPath, to: destinationIndexPath, result: .success(ticket))
            }
        case .refused(let error, let token):
            if let item {
                item.adapter?.didMove(item, from: sourceIndexPath, to: destinationIndexPath, result: .failure(error))
            }
            report(error)
            Task { @MainActor [weak self] in self?.presenter.undoViewMove(token) }
        }
    }
}

extension CollectionDirector: UICollectionViewDataSourcePrefetching {
    public func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath]) {
        prefetch(indexPaths, cancel: false)
    }

    public func collectionView(_ collectionView: UICollectionView, cancelPrefetchingForItemsAt indexPaths: [IndexPath])
    {
        prefetch(indexPaths, cancel: true)
    }

    /// Hands each adapter its own rows among `indexPaths` (decoded, as for a cell).
    private func prefetch(_ indexPaths: [IndexPath], cancel: Bool) {
        for group in presenter.items(at: indexPaths.map(Self.rowPath), groupedBy: { ObjectIdentifier($0) }) {
            group.adapter.prefetch(group.items, cancel: cancel)
        }
    }
}

extension CollectionDirector: UICollectionViewDelegateFlowLayout {
    // MARK: Display

    public func collectionView(
        _ collectionView: UICollectionView, willDisplay cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) {
        guard let item = cellItems[ObjectIdentifier(cell)] ?? presenter.item(at: Self.rowPath(indexPath)),
            let adapter = item.adapter
        else {
            return
        }
        adapter.handle(.willDisplay(cell), item, at: indexPath, director: self)
    }

    public func collectionView(
        _ collectionView: UICollectionView, didEndDisplaying cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) {
        guard let item = cellItems.removeValue(forKey: ObjectIdentifier(cell)), let adapter = item.adapter else {
            return
        }
        adapter.handle(.didEndDisplaying(cell), item, at: indexPath, director: self)
    }

    public func collectionView(
        _ collectionView: UICollectionView, willDisplaySupplementaryView view: UICollectionReusableView,
        forElementKind elementKind: String, at indexPath: IndexPath
    ) {
        supplementaryDisplay(view, elementKind, indexPath, ended: false)
    }

    public func collectionView(
        _ collectionView: UICollectionView, didEndDisplayingSupplementaryView view: UICollectionReusableView,
        forElementOfKind elementKind: String, at indexPath: IndexPath
    ) {
        supplementaryDisplay(view, elementKind, indexPath, ended: true)
    }

    private func supplementaryDisplay(
        _ view: UICollectionReusableView, _ kind: String, _ indexPath: IndexPath, ended: Bool
    ) {
        guard let element = Self.element(ofKind: kind), let shown = supplementary(element, inSection: indexPath.section)
        else { return }
        shown.registration.adapter.display(
            view, value: shown.value, section: indexPath.section, sectionID: shown.sectionID,
            element: element, ended: ended, director: self)
    }

    // MARK: Selection

    public func collectionView(_ collectionView: UICollectionView, shouldHighlightItemAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.shouldHighlight(item, at: indexPath, director: self)
    }

    public func collectionView(_ collectionView: UICollectionView, shouldSelectItemAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.shouldSelect(item, at: indexPath, director: self)
    }

    public func collectionView(_ collectionView: UICollectionView, didSelectItemAt indexPath: IndexPath) {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return }
        adapter.handle(.didSelect, item, at: indexPath, director: self)
    }

    public func collectionView(_ collectionView: UICollectionView, didDeselectItemAt indexPath: IndexPath) {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return }
        adapter.handle(.didDeselect, item, at: indexPath, director: self)
    }

    // MARK: Reorder

    public func collectionView(
        _ collectionView: UICollectionView,
        targetIndexPathForMoveOfItemFromOriginalIndexPath originalIndexPath: IndexPath,
        atCurrentIndexPath currentIndexPath: IndexPath,
        toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath {
        guard let item = presenter.item(at: Self.rowPath(originalIndexPath)), let adapter = item.adapter else {
            return originalIndexPath
        }
        return adapter.moveTarget(item, at: originalIndexPath, proposed: proposedIndexPath, director: self)
    }

    // MARK: Sizing (flow layout)

    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        sizeForItemAt indexPath: IndexPath
    ) -> CGSize {
        let layoutDefault = (collectionViewLayout as? UICollectionViewFlowLayout)?.itemSize ?? .zero
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter,
            case .success? = item.model
        else {
            return fallbackSize
        }
        return adapter.size(item, at: indexPath, director: self) ?? adapter.sizing.size(layoutDefault: layoutDefault)
    }

    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForHeaderInSection section: Int
    ) -> CGSize {
        referenceSize(.header, collectionViewLayout, section)
    }

    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForFooterInSection section: Int
    ) -> CGSize {
        referenceSize(.footer, collectionViewLayout, section)
    }

    /// A section without a header (or with no adapter for it) gets a zero size, so the
    /// layout asks for no view there.
    private func referenceSize(
        _ element: SupplementaryUpdate.Element, _ layout: UICollectionViewLayout, _ section: Int
    ) -> CGSize {
        guard let shown = supplementary(element, inSection: section) else { return .zero }
        let flow = layout as? UICollectionViewFlowLayout
        let layoutDefault = (element == .header ? flow?.headerReferenceSize : flow?.footerReferenceSize) ?? .zero
        return shown.registration.adapter.size(
            value: shown.value, section: section, sectionID: shown.sectionID, element: element,
            director: self)
            ?? shown.registration.adapter.sizing.size(layoutDefault: layoutDefault)
    }
}
#endif
