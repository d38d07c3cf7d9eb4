// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

// The delegate: every event goes to the adapter of the row under it, resolved from what
// the table shows at that moment. Rows shown with the fallback get no events.
extension TableDirector: UITableViewDelegate {
    // MARK: Display

    public func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        guard let item = cellItems[ObjectIdentifier(cell)] ?? presenter.item(at: RowPath(indexPath)),
            let adapter = item.adapter
        else {
            return
        }
        adapter.willDisplay(cell, item, at: indexPath, director: self)
    }

    public func tableView(
        _ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath
    ) {
        // The row may be gone from the list by now (a delete animates its cell out):
        // the cell's own record says what it showed.
        guard let item = cellItems.removeValue(forKey: ObjectIdentifier(cell)), let adapter = item.adapter else {
            return
        }
        adapter.didEndDisplaying(cell, item, at: indexPath, director: self)
    }

    // MARK: Selection

    public func tableView(_ tableView: UITableView, shouldHighlightRowAt indexPath: IndexPath) -> Bool {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return false }
        return adapter.shouldHighlight(item, at: indexPath, director: self)
    }

    public func tableView(_ tableView: UITableView, willSelectRowAt indexPath: IndexPath) -> IndexPath? {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return nil }
        return adapter.willSelect(item, at: indexPath, director: self)
    }

    public func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return }
        switch adapter.didSelect(item, at: indexPath, director: self) {
        case .none: break
        case .deselect: tableView.deselectRow(at: indexPath, animated: false)
        case .deselectAnimated: tableView.deselectRow(at: indexPath, animated: true)
        }
    }

    public func tableView(_ tableView: UITableView, didDeselectRowAt indexPath: IndexPath) {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return }
        adapter.didDeselect(item, at: indexPath, director: self)
    }

    public func tableView(_ tableView: UITableView, accessoryButtonTappedForRowWith indexPath: IndexPath) {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return }
        adapter.accessoryTapped(item, at: indexPath, director: self)
    }

    // MARK: Swipes and editing

    public func tableView(
        _ tableView: UITableView,
        leadingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter,
            case .some(let configuration) = adapter.swipeActions(leading: true, item, at: indexPath, director: self)
        else { return nil }
        return configuration
    }

    public func tableView(
        _ tableView: UITableView,
        trailingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? {
        // `nil` leaves UIKit's default: a Delete button when the editing style is .delete,
        // which commits through `commit editingStyle` (by ID, see the data source).
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter,
            case .some(let configuration) = adapter.swipeActions(leading: false, item, at: indexPath, director: self)
        else { return nil }
        return configuration
    }

    public func tableView(
        _ tableView: UITableView, editingStyleForRowAt indexPath: IndexPath
    ) -> UITableViewCell.EditingStyle {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter else { return .none }
        return adapter.editingStyle(item, at: indexPath, director: self)
    }

    public func tableView(
        _ tableView: UITableView, targetIndexPathForMoveFromRowAt sourceIndexPath: IndexPath,
        toProposedIndexPath proposedDestinationIndexPath: IndexPath
    ) -> IndexPath {
        guard let item = presenter.item(at: RowPath(sourceIndexPath)), let adapter = item.adapter else {
            return sourceIndexPath
        }
        return adapter.moveTarget(item, at: sourceIndexPath, proposed: proposedDestinationIndexPath, director: self)
    }

    // MARK: Sizing

    public func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter, case .success? = item.model
        else {
            return fallbackHeight ?? tableView.rowHeight
        }
        return adapter.height(item, at: indexPath, director: self)
            ?? adapter.sizing.height(
                viewDefault: tableView.rowHeight, automaticDimension: UITableView.automaticDimension)
    }

    public func tableView(_ tableView: UITableView, estimatedHeightForRowAt indexPath: IndexPath) -> CGFloat {
        guard let item = presenter.item(at: RowPath(indexPath)), let adapter = item.adapter, case .success? = item.model
        else {
            return fallbackHeight ?? tableView.estimatedRowHeight
        }
        return adapter.estimatedHeight(item, at: indexPath, director: self)
            ?? adapter.sizing.estimatedHeight(viewDefault: tableView.estimatedRowHeight)
    }

    // MARK: Headers and footers

    public func tableView(_ tableView: UITableView, viewForHeaderInSection section: Int) -> UIView? {
        supplementaryView(.header, inSection: section)
    }

    public func tableView(_ tableView: UITableView, viewForFooterInSection section: Int) -> UIView? {
        supplementaryView(.footer, inSection: section)
    }

    public func tableView(_ tableView: UITableView, heightForHeaderInSection section: Int) -> CGFloat {
        supplementaryHeight(.header, inSection: section, estimated: false)
    }

    public func tableView(_ tableView: UITableView, heightForFooterInSection section: Int) -> CGFloat {
        supplementaryHeight(.footer, inSection: section, estimated: false)
    }

    public func tableView(_ tableView: UITableView, estimatedHeightForHeaderInSection section: Int) -> CGFloat {
        supplementaryHeight(.header, inSection: section, estimated: true)
    }

    public func tableView(_ tableView: UITableView, estimatedHeightForFooterInSection section: Int) -> CGFloat {
        supplementaryHeight(.footer, inSection: section, estimated: true)
    }

    public func tableView(_ tableView: UITableView, willDisplayHeaderView view: UIView, forSection section: Int) {
        supplementaryDisplay(.header, view, inSection: section, ended: false)
    }

    public func tableView(_ tableView: UITableView, willDisplayFooterView view: UIView, forSection section: Int) {
        supplementaryDisplay(.footer, view, inSection: section, ended: false)
    }

    public func tableView(_ tableView: UITableView, didEndDisplayingHeaderView view: UIView, forSection section: Int) {
        supplementaryDisplay(.header, view, inSection: section, ended: true)
    }

    public func tableView(_ tableView: UITableView, didEndDisplayingFooterView view: UIView, forSection section: Int) {
        supplementaryDisplay(.footer, view, inSection: section, ended: true)
    }

    private func supplementaryView(_ element: SupplementaryUpdate.Element, inSection section: Int) -> UIView? {
        guard let shown = supplementary(element, inSection: section),
            let view = tableView.dequeueReusableHeaderFooterView(
                withIdentifier: shown.registration.adapter.reuseIdentifier)
        else {
            return nil
        }
        _ = shown.registration.adapter.configure(
            view, value: shown.value, section: section, sectionID: shown.sectionID,
            element: element, director: self)
        return view
    }

    private func supplementaryHeight(
        _ element: SupplementaryUpdate.Element, inSection section: Int, estimated: Bool
    ) -> CGFloat {
        let viewDefault: CGFloat
        switch (element, estimated) {
        case (.header, false): viewDefault = tableView.sectionHeaderHeight
        case (.footer, false): viewDefault = tableView.sectionFooterHeight
        case (.header, true): viewDefault = tableView.estimatedSectionHeaderHeight
        case (.footer, true): viewDefault = tableView.estimatedSectionFooterHeight
        }
        guard let shown = supplementary(element, inSection: section) else { return viewDefault }
        let adapter = shown.registration.adapter
        let asked = adapter.height(
            value: shown.value, section: section, sectionID: shown.sectionID, element: element,
            estimated: estimated, director: self)
        if estimated { return asked ?? adapter.sizing.estimatedHeight(viewDefault: viewDefault) }
        return asked
            ?? adapter.sizing.height(viewDefault: viewDefault, automaticDimension: UITableView.automaticDimension)
    }

    private func supplementaryDisplay(
        _ element: SupplementaryUpdate.Element, _ view: UIView, inSection section: Int, ended: Bool
    ) {
        guard let view = view as? UITableViewHeaderFooterView, let shown = supplementary(element, inSection: section)
        else { return }
        shown.registration.adapter.display(
            view, value: shown.value, section: section, sectionID: shown.sectionID,
            element: element, ended: ended, director: self)
    }
}
#endif
