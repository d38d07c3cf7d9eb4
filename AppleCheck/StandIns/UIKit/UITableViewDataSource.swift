import Foundation

// /documentation/UIKit/UITableViewDataSource (iOS 2.0+)
/// The methods that an object adopts to manage data and provide cells for a table view.
///
/// STAND-IN: UIKit's `optional` requirements are requirements here, with a default
/// implementation (below) that does what UIKit does when the data source leaves them out.
@MainActor
public protocol UITableViewDataSource: NSObjectProtocol {
    // /documentation/UIKit/UITableViewDataSource/tableView(_:numberOfRowsInSection:) (iOS 2.0+)
    /// Tells the data source to return the number of rows in a given section of a table view.
    func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int

    // /documentation/UIKit/UITableViewDataSource/tableView(_:cellForRowAt:) (iOS 8.0+ on its page)
    /// Asks the data source for a cell to insert in a particular location of the table view.
    func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell

    // /documentation/UIKit/UITableViewDataSource/numberOfSections(in:) (iOS 2.0+, optional)
    /// Asks the data source to return the number of sections in the table view.
    func numberOfSections(in tableView: UITableView) -> Int

    // /documentation/UIKit/UITableViewDataSource/tableView(_:titleForHeaderInSection:) (iOS 2.0+, optional)
    func tableView(_ tableView: UITableView, titleForHeaderInSection section: Int) -> String?

    // /documentation/UIKit/UITableViewDataSource/tableView(_:titleForFooterInSection:) (iOS 2.0+, optional)
    func tableView(_ tableView: UITableView, titleForFooterInSection section: Int) -> String?

    // /documentation/UIKit/UITableViewDataSource/tableView(_:canEditRowAt:) (iOS 8.0+ on its page, optional)
    /// Asks the data source to verify that the given row is editable.
    func tableView(_ tableView: UITableView, canEditRowAt indexPath: IndexPath) -> Bool

    // /documentation/UIKit/UITableViewDataSource/tableView(_:canMoveRowAt:) (iOS 8.0+ on its page, optional)
    /// Asks the data source whether a given row can be moved to another location in the table view.
    func tableView(_ tableView: UITableView, canMoveRowAt indexPath: IndexPath) -> Bool

    // /documentation/UIKit/UITableViewDataSource/sectionIndexTitles(for:) (iOS 2.0+, optional)
    func sectionIndexTitles(for tableView: UITableView) -> [String]?

    // /documentation/UIKit/UITableViewDataSource/tableView(_:sectionForSectionIndexTitle:at:) (iOS 2.0+, optional)
    func tableView(_ tableView: UITableView, sectionForSectionIndexTitle title: String, at index: Int) -> Int

    // /documentation/UIKit/UITableViewDataSource/tableView(_:commit:forRowAt:) (iOS 8.0+ on its page, optional)
    /// Asks the data source to commit the insertion or deletion of a specified row.
    func tableView(
        _ tableView: UITableView, commit editingStyle: UITableViewCell.EditingStyle, forRowAt indexPath: IndexPath)

    // /documentation/UIKit/UITableViewDataSource/tableView(_:moveRowAt:to:) (iOS 8.0+ on its page, optional)
    /// Tells the data source to move a row at a specific location in the table view to another location.
    func tableView(_ tableView: UITableView, moveRowAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath)
}

/// What UIKit does when the data source leaves an optional method out.
extension UITableViewDataSource {
    /// "The default value is 1."
    public func numberOfSections(in tableView: UITableView) -> Int { 1 }
    /// No header title.
    public func tableView(_ tableView: UITableView, titleForHeaderInSection section: Int) -> String? { nil }
    /// No footer title.
    public func tableView(_ tableView: UITableView, titleForFooterInSection section: Int) -> String? { nil }
    /// "If this method is not implemented, all rows are assumed to be editable."
    public func tableView(_ tableView: UITableView, canEditRowAt indexPath: IndexPath) -> Bool { true }
    /// STAND-IN: UIKit shows the reorder control when the data source implements
    /// `tableView(_:moveRowAt:to:)`; the stand-in cannot tell, and answers true.
    public func tableView(_ tableView: UITableView, canMoveRowAt indexPath: IndexPath) -> Bool { true }
    public func sectionIndexTitles(for tableView: UITableView) -> [String]? { nil }
    public func tableView(_ tableView: UITableView, sectionForSectionIndexTitle title: String, at index: Int) -> Int {
        index
    }
    /// Nothing is committed.
    public func tableView(
        _ tableView: UITableView, commit editingStyle: UITableViewCell.EditingStyle, forRowAt indexPath: IndexPath
    ) {}
    /// Nothing is moved in the data.
    public func tableView(
        _ tableView: UITableView, moveRowAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {}
}

// /documentation/UIKit/UITableViewDataSourcePrefetching (iOS 10.0+)
/// A protocol that provides advance warning of the data requirements for a table view,
/// allowing you to start potentially long-running data operations early.
@available(iOS 10.0, *)
@MainActor
public protocol UITableViewDataSourcePrefetching: NSObjectProtocol {
    // /documentation/UIKit/UITableViewDataSourcePrefetching/tableView(_:prefetchRowsAt:) (iOS 8.0+ on its page)
    /// Instructs your prefetch data source object to begin preparing data for the cells at the supplied index paths.
    func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath])

    // /documentation/UIKit/UITableViewDataSourcePrefetching/tableView(_:cancelPrefetchingForRowsAt:) (iOS 10.0+, optional)
    /// Cancels a previously triggered data prefetch request.
    func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath])
}

@available(iOS 10.0, *)
extension UITableViewDataSourcePrefetching {
    public func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {}
}
