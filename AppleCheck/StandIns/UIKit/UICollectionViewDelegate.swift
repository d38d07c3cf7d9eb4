import Foundation

// /documentation/UIKit/UICollectionViewDelegate (iOS 6.0+)
/// The methods adopted by the object you use to manage user interactions with items in a collection view.
///
/// STAND-IN: every requirement is optional in UIKit; each has a default implementation
/// doing what UIKit does when it is left out.
@MainActor
public protocol UICollectionViewDelegate: UIScrollViewDelegate {
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:shouldHighlightItemAt:) (iOS 6.0+)
    func collectionView(_ collectionView: UICollectionView, shouldHighlightItemAt indexPath: IndexPath) -> Bool
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didHighlightItemAt:) (iOS 6.0+)
    func collectionView(_ collectionView: UICollectionView, didHighlightItemAt indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didUnhighlightItemAt:) (iOS 6.0+)
    func collectionView(_ collectionView: UICollectionView, didUnhighlightItemAt indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:shouldSelectItemAt:) (iOS 6.0+)
    /// Asks the delegate if the specified item should be selected.
    func collectionView(_ collectionView: UICollectionView, shouldSelectItemAt indexPath: IndexPath) -> Bool
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:shouldDeselectItemAt:) (iOS 6.0+)
    func collectionView(_ collectionView: UICollectionView, shouldDeselectItemAt indexPath: IndexPath) -> Bool
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didSelectItemAt:) (iOS 6.0+)
    /// Tells the delegate that the item at the specified index path was selected.
    func collectionView(_ collectionView: UICollectionView, didSelectItemAt indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didDeselectItemAt:) (iOS 6.0+)
    func collectionView(_ collectionView: UICollectionView, didDeselectItemAt indexPath: IndexPath)

    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:willDisplay:forItemAt:) (iOS 8.0+)
    /// Tells the delegate that the specified cell is about to be displayed in the collection view.
    func collectionView(
        _ collectionView: UICollectionView, willDisplay cell: UICollectionViewCell, forItemAt indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:willDisplaySupplementaryView:forElementKind:at:) (iOS 8.0+)
    func collectionView(
        _ collectionView: UICollectionView, willDisplaySupplementaryView view: UICollectionReusableView,
        forElementKind elementKind: String, at indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didEndDisplaying:forItemAt:) (iOS 6.0+)
    /// Tells the delegate that the specified cell was removed from the collection view.
    func collectionView(
        _ collectionView: UICollectionView, didEndDisplaying cell: UICollectionViewCell, forItemAt indexPath: IndexPath)
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:didEndDisplayingSupplementaryView:forElementOfKind:at:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, didEndDisplayingSupplementaryView view: UICollectionReusableView,
        forElementOfKind elementKind: String, at indexPath: IndexPath)

    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:targetIndexPathForMoveFromItemAt:toProposedIndexPath:) (iOS 9.0–15.0, deprecated)
    /// Asks the delegate for the index path to use when moving an item.
    @available(iOS, introduced: 9.0, deprecated: 15.0)
    func collectionView(
        _ collectionView: UICollectionView, targetIndexPathForMoveFromItemAt currentIndexPath: IndexPath,
        toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath
    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:targetIndexPathForMoveOfItemFromOriginalIndexPath:atCurrentIndexPath:toProposedIndexPath:) (iOS 15.0+)
    /// Provides the delegate with an opportunity to customize the proposed index path of an item being moved.
    @available(iOS 15.0, *)
    func collectionView(
        _ collectionView: UICollectionView,
        targetIndexPathForMoveOfItemFromOriginalIndexPath originalIndexPath: IndexPath,
        atCurrentIndexPath currentIndexPath: IndexPath, toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath

    // /documentation/UIKit/UICollectionViewDelegate/collectionView(_:canEditItemAt:) (iOS 14.0+)
    @available(iOS 14.0, *)
    func collectionView(_ collectionView: UICollectionView, canEditItemAt indexPath: IndexPath) -> Bool
}

extension UICollectionViewDelegate {
    public func collectionView(_ collectionView: UICollectionView, shouldHighlightItemAt indexPath: IndexPath) -> Bool {
        true
    }
    public func collectionView(_ collectionView: UICollectionView, didHighlightItemAt indexPath: IndexPath) {}
    public func collectionView(_ collectionView: UICollectionView, didUnhighlightItemAt indexPath: IndexPath) {}
    public func collectionView(_ collectionView: UICollectionView, shouldSelectItemAt indexPath: IndexPath) -> Bool {
        true
    }
    public func collectionView(_ collectionView: UICollectionView, shouldDeselectItemAt indexPath: IndexPath) -> Bool {
        true
    }
    public func collectionView(_ collectionView: UICollectionView, didSelectItemAt indexPath: IndexPath) {}
    public func collectionView(_ collectionView: UICollectionView, didDeselectItemAt indexPath: IndexPath) {}
    public func collectionView(
        _ collectionView: UICollectionView, willDisplay cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) {}
    public func collectionView(
        _ collectionView: UICollectionView, willDisplaySupplementaryView view: UICollectionReusableView,
        forElementKind elementKind: String, at indexPath: IndexPath
    ) {}
    public func collectionView(
        _ collectionView: UICollectionView, didEndDisplaying cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) {}
    public func collectionView(
        _ collectionView: UICollectionView, didEndDisplayingSupplementaryView view: UICollectionReusableView,
        forElementOfKind elementKind: String, at indexPath: IndexPath
    ) {}
    /// "If you do not implement this method, the collection view uses the index path in the
    /// proposedIndexPath parameter."
    @available(iOS, introduced: 9.0, deprecated: 15.0)
    public func collectionView(
        _ collectionView: UICollectionView, targetIndexPathForMoveFromItemAt currentIndexPath: IndexPath,
        toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath { proposedIndexPath }
    /// When left out, UIKit falls back on the older
    /// collectionView(_:targetIndexPathForMoveFromItemAt:toProposedIndexPath:).
    @available(iOS 15.0, *)
    public func collectionView(
        _ collectionView: UICollectionView,
        targetIndexPathForMoveOfItemFromOriginalIndexPath originalIndexPath: IndexPath,
        atCurrentIndexPath currentIndexPath: IndexPath, toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath {
        self.collectionView(
            collectionView, targetIndexPathForMoveFromItemAt: originalIndexPath, toProposedIndexPath: proposedIndexPath)
    }
    @available(iOS 14.0, *)
    public func collectionView(_ collectionView: UICollectionView, canEditItemAt indexPath: IndexPath) -> Bool { true }
}

// /documentation/UIKit/UICollectionViewDelegateFlowLayout (iOS 6.0+)
/// The methods that let you coordinate with a flow layout object to implement a grid-based layout.
@MainActor
public protocol UICollectionViewDelegateFlowLayout: UICollectionViewDelegate {
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:sizeForItemAt:) (iOS 6.0+)
    /// Asks the delegate for the size of the specified item's cell.
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        sizeForItemAt indexPath: IndexPath
    ) -> CGSize
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:insetForSectionAt:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        insetForSectionAt section: Int
    ) -> UIEdgeInsets
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:minimumLineSpacingForSectionAt:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        minimumLineSpacingForSectionAt section: Int
    ) -> CGFloat
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:minimumInteritemSpacingForSectionAt:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        minimumInteritemSpacingForSectionAt section: Int
    ) -> CGFloat
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:referenceSizeForHeaderInSection:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForHeaderInSection section: Int
    ) -> CGSize
    // /documentation/UIKit/UICollectionViewDelegateFlowLayout/collectionView(_:layout:referenceSizeForFooterInSection:) (iOS 6.0+)
    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForFooterInSection section: Int
    ) -> CGSize
}

/// When left out, the flow layout uses its own properties (each method's page says so).
extension UICollectionViewDelegateFlowLayout {
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        sizeForItemAt indexPath: IndexPath
    ) -> CGSize {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.itemSize ?? CGSize(width: 50, height: 50)
    }
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        insetForSectionAt section: Int
    ) -> UIEdgeInsets {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.sectionInset ?? .zero
    }
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        minimumLineSpacingForSectionAt section: Int
    ) -> CGFloat {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.minimumLineSpacing ?? 10
    }
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        minimumInteritemSpacingForSectionAt section: Int
    ) -> CGFloat {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.minimumInteritemSpacing ?? 10
    }
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForHeaderInSection section: Int
    ) -> CGSize {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.headerReferenceSize ?? .zero
    }
    public func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForFooterInSection section: Int
    ) -> CGSize {
        (collectionViewLayout as? UICollectionViewFlowLayout)?.footerReferenceSize ?? .zero
    }
}
