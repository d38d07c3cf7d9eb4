// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

// The data source: counts and cells from what the table shows (the presenter's
// snapshot), edits and drags written through the list by identity.
extension TableDirector: UITableViewDataSource {
    public func numberOfSections(in tableView: UITableView) -> Int {
        presenter.numberOfSections
    }

    public func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
        presenter.numberOfRows(inSection: section)
    }

    public func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        guard let item = presenter.item(at: RowPath(indexPath)) else {
            // UIKit asks only within the counts it was given; a cell is still owed.
            return tableView.dequeueReusableCell(withIdentifier: Self.fallbackReuseIdentifier, for: indexPath)
        }
        let cell: UITableViewCell
        if let adapter = item.adapter, case .success? = item.model {
            cell = tableView.dequeueReusableCell(withIdentifier: adapter.reuseIdentifier, for: indexPath)
            cellItems[ObjectIdentifier(cell)] = item
            adapter.configure(cell, item, at: indexPath, director: self)
        } else {
            let failure: ModelDecodingFailure?
            if case .failure(let error)? = item.model { failure = error } else { failure = nil }
            cell =
                fallback?(TableFallbackContext(row: item.row, indexPath: indexPath, failure: failure, table: tableView))
                ?? tableView.dequeueReusableCell(withIdentifier: Self.fallbackReuseIdentifier, for: indexPath)
            cellItems[ObjectIdentifier(cell)] = item
        }
        return cell
    }

    public func tableView(_ tableView: UITableView, titleForHeaderInSection section: Int) -> String? {
        supplementaryAdapters[.header] == nil ? presenter.title(.header, inSection: section) : nil
    }

    public func tableView(_ tableView: UITableView, titleForFooterInSection section: Int) -> String? {
        supplementaryAdapters[.footer] == nil ? presenter.title(.footer, inSection: section) : nil
    }

    public func tableView(_ tableView: UITableView, canEditRowAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.canEdit(item, at: indexPath, director: self)
    }

    public func tableView(
        _ tableView: UITableView, commit editingStyle: UITableViewCell.EditingStyle, forRowAt indexPath: IndexPath
    ) {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return }
        if adapter.commitEdit(editingStyle, item, at: indexPath, director: self) { return }
        guard editingStyle == .delete else { return }
        // By ID: the row UIKit's Delete button belongs to, wherever it is in the list now.
        do {
            _ = try presenter.remove(item.handle)
        } catch {
            report(error)
        }
    }

    public func tableView(_ tableView: UITableView, canMoveRowAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.canMove(item, at: indexPath, director: self)
    }

    public func tableView(
        _ tableView: UITableView, moveRowAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {
        // The table already shows the row at its destination. The presenter shows the
        // same at once (no batch, no reload) and writes the move by identity.
        let item = presenter.item(at: RowPath(sourceIndexPath))
        switch presenter.viewDidMoveRow(from: RowPath(sourceIndexPath), to: RowPath(destinationIndexPath)) {
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
            // Not inside UIKit's reorder callback: the table is still finishing the drop.
            Task { @MainActor [weak self] in self?.presenter.undoViewMove(token) }
        }
    }
}

extension TableDirector: UITableViewDataSourcePrefetching {
    public func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
        prefetch(indexPaths, cancel: false)
    }

    public func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {
        prefetch(indexPaths, cancel: true)
    }

    /// Hands each adapter its own rows among `indexPaths` (decoded, as for a cell).
    private func prefetch(_ indexPaths: [IndexPath], cancel: Bool) {
        for group in presenter.items(at: indexPaths.map(RowPath.init), groupedBy: { ObjectIdentifier($0) }) {
            group.adapter.prefetch(group.items, cancel: cancel)
        }
    }
}
#endif
