import Foundation

// /documentation/UIKit/UITableViewDelegate (iOS 2.0+)
/// Methods for managing selections, configuring section headers and footers, deleting and
/// reordering cells, and performing other actions in a table view.
///
/// STAND-IN: every requirement is `optional` in UIKit; here each has a default
/// implementation (below) that does what UIKit does when the delegate leaves it out.
@MainActor
public protocol UITableViewDelegate: UIScrollViewDelegate {
    // MARK: Display

    // /documentation/UIKit/UITableViewDelegate/tableView(_:willDisplay:forRowAt:) (iOS 8.0+ on its page)
    /// Tells the delegate the table view is about to draw a cell for a particular row.
    func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:willDisplayHeaderView:forSection:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, willDisplayHeaderView view: UIView, forSection section: Int)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:willDisplayFooterView:forSection:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, willDisplayFooterView view: UIView, forSection section: Int)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didEndDisplaying:forRowAt:) (iOS 6.0+)
    /// Tells the delegate that the specified cell was removed from the table.
    func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didEndDisplayingHeaderView:forSection:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, didEndDisplayingHeaderView view: UIView, forSection section: Int)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didEndDisplayingFooterView:forSection:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, didEndDisplayingFooterView view: UIView, forSection section: Int)

    // MARK: Heights

    // /documentation/UIKit/UITableViewDelegate/tableView(_:heightForRowAt:) (iOS 8.0+ on its page)
    /// Asks the delegate for the height to use for a row in a specified location.
    func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat
    // /documentation/UIKit/UITableViewDelegate/tableView(_:heightForHeaderInSection:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, heightForHeaderInSection section: Int) -> CGFloat
    // /documentation/UIKit/UITableViewDelegate/tableView(_:heightForFooterInSection:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, heightForFooterInSection section: Int) -> CGFloat
    // /documentation/UIKit/UITableViewDelegate/tableView(_:estimatedHeightForRowAt:) (iOS 7.0+)
    func tableView(_ tableView: UITableView, estimatedHeightForRowAt indexPath: IndexPath) -> CGFloat
    // /documentation/UIKit/UITableViewDelegate/tableView(_:estimatedHeightForHeaderInSection:) (iOS 7.0+)
    func tableView(_ tableView: UITableView, estimatedHeightForHeaderInSection section: Int) -> CGFloat
    // /documentation/UIKit/UITableViewDelegate/tableView(_:estimatedHeightForFooterInSection:) (iOS 7.0+)
    func tableView(_ tableView: UITableView, estimatedHeightForFooterInSection section: Int) -> CGFloat

    // MARK: Header and footer views

    // /documentation/UIKit/UITableViewDelegate/tableView(_:viewForHeaderInSection:) (iOS 2.0+)
    /// Asks the delegate for a view to display in the header of the specified section of the table view.
    func tableView(_ tableView: UITableView, viewForHeaderInSection section: Int) -> UIView?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:viewForFooterInSection:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, viewForFooterInSection section: Int) -> UIView?

    // MARK: Selection

    // /documentation/UIKit/UITableViewDelegate/tableView(_:accessoryButtonTappedForRowWith:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, accessoryButtonTappedForRowWith indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:shouldHighlightRowAt:) (iOS 6.0+)
    /// Asks the delegate if the specified row should be highlighted.
    func tableView(_ tableView: UITableView, shouldHighlightRowAt indexPath: IndexPath) -> Bool
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didHighlightRowAt:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, didHighlightRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didUnhighlightRowAt:) (iOS 6.0+)
    func tableView(_ tableView: UITableView, didUnhighlightRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:willSelectRowAt:) (iOS 2.0+)
    /// Tells the delegate a row is about to be selected. Return nil to cancel, or another index path.
    func tableView(_ tableView: UITableView, willSelectRowAt indexPath: IndexPath) -> IndexPath?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:willDeselectRowAt:) (iOS 3.0+)
    func tableView(_ tableView: UITableView, willDeselectRowAt indexPath: IndexPath) -> IndexPath?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didSelectRowAt:) (iOS 2.0+)
    /// Tells the delegate a row is selected.
    func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didDeselectRowAt:) (iOS 3.0+)
    func tableView(_ tableView: UITableView, didDeselectRowAt indexPath: IndexPath)

    // MARK: Editing and swipe actions

    // /documentation/UIKit/UITableViewDelegate/tableView(_:editingStyleForRowAt:) (iOS 2.0+)
    /// Asks the delegate for the editing style of a row at a particular location in a table view.
    func tableView(_ tableView: UITableView, editingStyleForRowAt indexPath: IndexPath) -> UITableViewCell.EditingStyle
    // /documentation/UIKit/UITableViewDelegate/tableView(_:titleForDeleteConfirmationButtonForRowAt:) (iOS 3.0+)
    func tableView(_ tableView: UITableView, titleForDeleteConfirmationButtonForRowAt indexPath: IndexPath) -> String?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:leadingSwipeActionsConfigurationForRowAt:) (iOS 11.0+)
    /// Returns the swipe actions to display on the leading edge of the row.
    @available(iOS 11.0, *)
    func tableView(
        _ tableView: UITableView, leadingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:trailingSwipeActionsConfigurationForRowAt:) (iOS 11.0+)
    /// Returns the swipe actions to display on the trailing edge of the row. Return nil to
    /// get the default actions.
    @available(iOS 11.0, *)
    func tableView(
        _ tableView: UITableView, trailingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration?
    // /documentation/UIKit/UITableViewDelegate/tableView(_:shouldIndentWhileEditingRowAt:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, shouldIndentWhileEditingRowAt indexPath: IndexPath) -> Bool
    // /documentation/UIKit/UITableViewDelegate/tableView(_:willBeginEditingRowAt:) (iOS 2.0+)
    /// Tells the delegate that the table view is about to go into editing mode.
    func tableView(_ tableView: UITableView, willBeginEditingRowAt indexPath: IndexPath)
    // /documentation/UIKit/UITableViewDelegate/tableView(_:didEndEditingRowAt:) (iOS 8.0+ on its page)
    /// Tells the delegate that the table view has left editing mode.
    func tableView(_ tableView: UITableView, didEndEditingRowAt indexPath: IndexPath?)

    // MARK: Reordering

    // /documentation/UIKit/UITableViewDelegate/tableView(_:targetIndexPathForMoveFromRowAt:toProposedIndexPath:) (iOS 2.0+)
    /// Asks the delegate to return a new index path to retarget a proposed move of a row.
    func tableView(
        _ tableView: UITableView, targetIndexPathForMoveFromRowAt sourceIndexPath: IndexPath,
        toProposedIndexPath proposedDestinationIndexPath: IndexPath
    ) -> IndexPath
    // /documentation/UIKit/UITableViewDelegate/tableView(_:indentationLevelForRowAt:) (iOS 2.0+)
    func tableView(_ tableView: UITableView, indentationLevelForRowAt indexPath: IndexPath) -> Int
}

/// What UIKit does when the delegate leaves an optional method out (each documented on
/// the method's page or on the table view property named).
extension UITableViewDelegate {
    public func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, willDisplayHeaderView view: UIView, forSection section: Int) {}
    public func tableView(_ tableView: UITableView, willDisplayFooterView view: UIView, forSection section: Int) {}
    public func tableView(
        _ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath
    ) {}
    public func tableView(_ tableView: UITableView, didEndDisplayingHeaderView view: UIView, forSection section: Int) {}
    public func tableView(_ tableView: UITableView, didEndDisplayingFooterView view: UIView, forSection section: Int) {}
    /// The table's `rowHeight` (/documentation/UIKit/UITableView/rowHeight).
    public func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat {
        tableView.rowHeight
    }
    /// The table's `sectionHeaderHeight`.
    public func tableView(_ tableView: UITableView, heightForHeaderInSection section: Int) -> CGFloat {
        tableView.sectionHeaderHeight
    }
    /// The table's `sectionFooterHeight`.
    public func tableView(_ tableView: UITableView, heightForFooterInSection section: Int) -> CGFloat {
        tableView.sectionFooterHeight
    }
    /// The table's `estimatedRowHeight`.
    public func tableView(_ tableView: UITableView, estimatedHeightForRowAt indexPath: IndexPath) -> CGFloat {
        tableView.estimatedRowHeight
    }
    /// The table's `estimatedSectionHeaderHeight`.
    public func tableView(_ tableView: UITableView, estimatedHeightForHeaderInSection section: Int) -> CGFloat {
        tableView.estimatedSectionHeaderHeight
    }
    /// The table's `estimatedSectionFooterHeight`.
    public func tableView(_ tableView: UITableView, estimatedHeightForFooterInSection section: Int) -> CGFloat {
        tableView.estimatedSectionFooterHeight
    }
    /// No view: the table shows the data source's title, if any, in a standard header.
    public func tableView(_ tableView: UITableView, viewForHeaderInSection section: Int) -> UIView? { nil }
    public func tableView(_ tableView: UITableView, viewForFooterInSection section: Int) -> UIView? { nil }
    public func tableView(_ tableView: UITableView, accessoryButtonTappedForRowWith indexPath: IndexPath) {}
    /// "If you do not implement this method, the default return value is true."
    public func tableView(_ tableView: UITableView, shouldHighlightRowAt indexPath: IndexPath) -> Bool { true }
    public func tableView(_ tableView: UITableView, didHighlightRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, didUnhighlightRowAt indexPath: IndexPath) {}
    /// The row itself is selected.
    public func tableView(_ tableView: UITableView, willSelectRowAt indexPath: IndexPath) -> IndexPath? { indexPath }
    public func tableView(_ tableView: UITableView, willDeselectRowAt indexPath: IndexPath) -> IndexPath? { indexPath }
    public func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, didDeselectRowAt indexPath: IndexPath) {}
    /// "If the delegate does not implement this method … the cell has the
    /// UITableViewCell.EditingStyle.delete style set for it."
    public func tableView(
        _ tableView: UITableView, editingStyleForRowAt indexPath: IndexPath
    ) -> UITableViewCell.EditingStyle { .delete }
    /// nil: UIKit's localized "Delete".
    public func tableView(
        _ tableView: UITableView, titleForDeleteConfirmationButtonForRowAt indexPath: IndexPath
    ) -> String? { nil }
    @available(iOS 11.0, *)
    public func tableView(
        _ tableView: UITableView, leadingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? { nil }
    /// nil: "the table displays the default set of actions".
    @available(iOS 11.0, *)
    public func tableView(
        _ tableView: UITableView, trailingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? { nil }
    /// "If the delegate does not implement this method, the default is true."
    public func tableView(_ tableView: UITableView, shouldIndentWhileEditingRowAt indexPath: IndexPath) -> Bool { true }
    public func tableView(_ tableView: UITableView, willBeginEditingRowAt indexPath: IndexPath) {}
    public func tableView(_ tableView: UITableView, didEndEditingRowAt indexPath: IndexPath?) {}
    /// The proposed index path.
    public func tableView(
        _ tableView: UITableView, targetIndexPathForMoveFromRowAt sourceIndexPath: IndexPath,
        toProposedIndexPath proposedDestinationIndexPath: IndexPath
    ) -> IndexPath { proposedDestinationIndexPath }
    public func tableView(_ tableView: UITableView, indentationLevelForRowAt indexPath: IndexPath) -> Int { 0 }
}
