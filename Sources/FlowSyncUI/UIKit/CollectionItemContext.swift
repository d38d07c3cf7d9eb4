// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import UIKit

/// What a ``CollectionCellAdapter``'s events receive: the model under the touch,
/// resolved from what the collection view shows at that moment, its cell when there is
/// one, and ways to act on the item by its identity (see ``TableRowContext``).
@MainActor
public struct CollectionItemContext<Model, Cell: UICollectionViewCell> {
    /// The item's model, decoded once per row version.
    public let model: Model
    /// The cell, for the events that have one.
    public let cell: Cell?
    /// Where the collection view shows the item at the moment of the event.
    public let indexPath: IndexPath
    /// The row as stored.
    public let row: Row
    /// The item's identity, for actions that run later.
    public let handle: RowHandle
    /// The director that routed the event.
    public unowned let director: CollectionDirector

    /// The collection view.
    public var collectionView: UICollectionView { director.collectionView }
    /// The live list it shows.
    public var list: ListDirector { director.list }
    /// Where the item is now; `nil` once it is gone.
    public var currentIndexPath: IndexPath? {
        director.presenter.path(of: handle).map { IndexPath(item: $0.row, section: $0.section) }
    }

    /// Deletes this item, by its ID, wherever it is now.
    ///
    /// - Returns: The write, or `nil` when the item is already gone.
    @discardableResult
    public func remove() throws(FlowSyncError) -> WriteTicket? {
        try director.presenter.remove(handle)
    }

    /// A destructive swipe action titled `title` that deletes this item (by ID, when the
    /// action is tapped), for a list layout's swipe actions.
    public func deleteAction(title: String = "Delete") -> UIContextualAction {
        let handle = self.handle
        let director = self.director
        return UIContextualAction(style: .destructive, title: title) { _, _, completion in
            completion((try? director.presenter.remove(handle)) != nil)
        }
    }
}

/// What ``CollectionCellAdapter/Events/didMove`` receives.
@MainActor
public struct CollectionMoveContext<Model> {
    /// The dragged item's model.
    public let model: Model
    /// Its identity.
    public let handle: RowHandle
    /// Where it was.
    public let from: IndexPath
    /// Where it was dropped.
    public let to: IndexPath
    /// The write, or the error that refused it on the spot (the item then animates back).
    public let result: Result<WriteTicket, FlowSyncError>
}

/// What ``CollectionDirector/fallback`` receives for an item no adapter can show.
@MainActor
public struct CollectionFallbackContext {
    /// The row.
    public let row: Row
    /// Where the collection view shows it.
    public let indexPath: IndexPath
    /// Why there is no model: `nil` when no adapter is registered for the row's kind.
    public let failure: ModelDecodingFailure?
    /// The collection view, to dequeue a cell from.
    public let collectionView: UICollectionView
}
#endif
