import Foundation

extension UICollectionView {
    // /documentation/UIKit/UICollectionView/CellRegistration (iOS 14.0+)
    /// A registration for the collection view's cells.
    @available(iOS 14.0, *)
    public struct CellRegistration<Cell, Item> where Cell: UICollectionViewCell {
        // /documentation/UIKit/UICollectionView/CellRegistration/Handler
        /// A closure that handles the cell registration and configuration.
        public typealias Handler = (Cell, IndexPath, Item) -> Void

        let reuseIdentifier = "CellRegistration-\(UUID().uuidString)"
        let handler: Handler

        // /documentation/UIKit/UICollectionView/CellRegistration/init(handler:)
        /// Creates a cell registration with the specified registration handler.
        public init(handler: @escaping UICollectionView.CellRegistration<Cell, Item>.Handler) {
            self.handler = handler
        }
    }

    // /documentation/UIKit/UICollectionView/SupplementaryRegistration (iOS 14.0+)
    /// A registration for the collection view's supplementary views.
    @available(iOS 14.0, *)
    public struct SupplementaryRegistration<Supplementary> where Supplementary: UICollectionReusableView {
        // /documentation/UIKit/UICollectionView/SupplementaryRegistration/Handler
        public typealias Handler = (Supplementary, String, IndexPath) -> Void

        let reuseIdentifier = "SupplementaryRegistration-\(UUID().uuidString)"
        let elementKind: String
        let handler: Handler

        // /documentation/UIKit/UICollectionView/SupplementaryRegistration/init(elementKind:handler:)
        /// Creates a supplementary registration for the specified element kind with a registration handler.
        public init(
            elementKind: String, handler: @escaping UICollectionView.SupplementaryRegistration<Supplementary>.Handler
        ) {
            self.elementKind = elementKind
            self.handler = handler
        }
    }

    // /documentation/UIKit/UICollectionView/dequeueConfiguredReusableCell(using:for:item:) (iOS 14.0+)
    /// Dequeues a configured reusable cell object.
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public func dequeueConfiguredReusableCell<Cell, Item>(
        using registration: UICollectionView.CellRegistration<Cell, Item>, for indexPath: IndexPath, item: Item?
    ) -> Cell where Cell: UICollectionViewCell {
        if registeredCellClasses[registration.reuseIdentifier] == nil {
            register(Cell.self, forCellWithReuseIdentifier: registration.reuseIdentifier)
        }
        let dequeued = dequeueReusableCell(withReuseIdentifier: registration.reuseIdentifier, for: indexPath)
        let cell = (dequeued as? Cell) ?? Cell(frame: .zero)
        if let item { registration.handler(cell, indexPath, item) }
        return cell
    }

    // /documentation/UIKit/UICollectionView/dequeueConfiguredReusableSupplementary(using:for:) (iOS 14.0+)
    /// Dequeues a configured reusable supplementary view object.
    @available(iOS 14.0, *)
    @MainActor @preconcurrency
    public func dequeueConfiguredReusableSupplementary<Supplementary>(
        using registration: UICollectionView.SupplementaryRegistration<Supplementary>, for indexPath: IndexPath
    ) -> Supplementary where Supplementary: UICollectionReusableView {
        let key = Self.supplementaryRegistrationKey(registration.elementKind, registration.reuseIdentifier)
        if registeredSupplementaryClasses[key] == nil {
            register(
                Supplementary.self, forSupplementaryViewOfKind: registration.elementKind,
                withReuseIdentifier: registration.reuseIdentifier)
        }
        let dequeued = dequeueReusableSupplementaryView(
            ofKind: registration.elementKind, withReuseIdentifier: registration.reuseIdentifier, for: indexPath)
        let view = (dequeued as? Supplementary) ?? Supplementary(frame: .zero)
        registration.handler(view, registration.elementKind, indexPath)
        return view
    }
}
