import Foundation

// /documentation/UIKit/UICollectionViewDataSource (iOS 6.0+)
/// The methods adopted by the object you use to manage data and provide cells for a collection view.
///
/// STAND-IN: optional requirements have default implementations doing what UIKit does
/// when they are left out.
@MainActor
public protocol UICollectionViewDataSource: NSObjectProtocol {
    // /documentation/UIKit/UICollectionViewDataSource/collectionView(_:numberOfItemsInSection:) (iOS 6.0+)
    /// Asks your data source object for the number of items in the specified section.
    func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int

    // /documentation/UIKit/UICollectionViewDataSource/collectionView(_:cellForItemAt:) (iOS 6.0+)
    /// Asks your data source object for the cell that corresponds to the specified item in the collection view.
    func collectionView(_ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath) -> UICollectionViewCell

    // /documentation/UIKit/UICollectionViewDataSource/numberOfSections(in:) (iOS 6.0+, optional)
    /// "If you don't implement this method, the collection view uses a default value of 1."
    func numberOfSections(in collectionView: UICollectionView) -> Int

    // /documentation/UIKit/UICollectionViewDataSource/collectionView(_:viewForSupplementaryElementOfKind:at:) (iOS 8.0+ on its page, optional)
    /// Asks your data source object to provide a supplementary view to display in the collection view.
    func collectionView(
        _ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String, at indexPath: IndexPath
    ) -> UICollectionReusableView

    // /documentation/UIKit/UICollectionViewDataSource/collectionView(_:canMoveItemAt:) (iOS 9.0+, optional)
    /// Asks your data source object whether the specified item can be moved to another location in the collection view.
    func collectionView(_ collectionView: UICollectionView, canMoveItemAt indexPath: IndexPath) -> Bool

    // /documentation/UIKit/UICollectionViewDataSource/collectionView(_:moveItemAt:to:) (iOS 9.0+, optional)
    /// Tells your data source object to move the specified item to its new location.
    func collectionView(
        _ collectionView: UICollectionView, moveItemAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath)
}

extension UICollectionViewDataSource {
    public func numberOfSections(in collectionView: UICollectionView) -> Int { 1 }

    /// UIKit raises when the layout has a supplementary view and the data source cannot
    /// give one; the model records that as a failure and shows an empty view.
    public func collectionView(
        _ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String, at indexPath: IndexPath
    ) -> UICollectionReusableView {
        collectionView.recordFailure(
            "the collection view's data source did not return a supplementary view of kind \(kind) at index path (<NSIndexPath> {length = 2, path = \(indexPath.section) - \(indexPath.item)}): collectionView(_:viewForSupplementaryElementOfKind:at:) is not implemented"
        )
        return UICollectionReusableView(frame: .zero)
    }

    /// STAND-IN: UIKit moves items only when the data source implements
    /// collectionView(_:moveItemAt:to:); the stand-in cannot tell, and answers true.
    public func collectionView(_ collectionView: UICollectionView, canMoveItemAt indexPath: IndexPath) -> Bool { true }

    public func collectionView(
        _ collectionView: UICollectionView, moveItemAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {}
}

// /documentation/UIKit/UICollectionViewDataSourcePrefetching (iOS 10.0+)
/// A protocol that provides advance warning of the data requirements for a collection view.
@available(iOS 10.0, *)
@MainActor
public protocol UICollectionViewDataSourcePrefetching: NSObjectProtocol {
    // /documentation/UIKit/UICollectionViewDataSourcePrefetching/collectionView(_:prefetchItemsAt:) (iOS 10.0+)
    /// Instructs your prefetch data source object to begin preparing data for the cells at the supplied index paths.
    func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath])

    // /documentation/UIKit/UICollectionViewDataSourcePrefetching/collectionView(_:cancelPrefetchingForItemsAt:) (iOS 10.0+, optional)
    /// Cancels a previously triggered data prefetch request.
    func collectionView(_ collectionView: UICollectionView, cancelPrefetchingForItemsAt indexPaths: [IndexPath])
}

@available(iOS 10.0, *)
extension UICollectionViewDataSourcePrefetching {
    public func collectionView(_ collectionView: UICollectionView, cancelPrefetchingForItemsAt indexPaths: [IndexPath])
    {}
}
