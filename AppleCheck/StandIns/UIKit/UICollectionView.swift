import Foundation

// /documentation/UIKit/UICollectionView (iOS 6.0+)
/// An object that manages an ordered collection of data items and presents them using customizable layouts.
///
/// The stand-in is a model of UIKit's documented rules, not UIKit: see
/// `UICollectionView+Simulation.swift` and DEVIATIONS.md.
@MainActor
open class UICollectionView: UIScrollView {
    lazy var presentation = ListPresentation(host: self)
    var registeredCellClasses: [String: UICollectionViewCell.Type] = [:]
    var registeredSupplementaryClasses: [String: UICollectionReusableView.Type] = [:]
    var cellReusePool: [String: [UICollectionViewCell]] = [:]
    var supplementaryReusePool: [String: [UICollectionReusableView]] = [:]
    var selectedIndexPaths: [IndexPath] = []
    var storedIsEditing = false
    var openSwipe: SwipeState?
    var interactiveMove: (original: IndexPath, current: IndexPath)?
    var failures: [String] = []
    var failureHook: ((String) -> Void)?
    var strictFlag = true
    private var storedLayout: UICollectionViewLayout

    // /documentation/UIKit/UICollectionView/init(frame:collectionViewLayout:) (iOS 6.0+)
    /// Creates a collection view object with the specified frame and layout.
    public init(frame: CGRect, collectionViewLayout layout: UICollectionViewLayout) {
        storedLayout = layout
        super.init(frame: frame)
        layout.collectionView = self
    }

    // /documentation/UIKit/UICollectionView/init(coder:) (iOS 6.0+)
    public required init?(coder: NSCoder) {
        storedLayout = UICollectionViewFlowLayout()
        super.init(coder: coder)
        storedLayout.collectionView = self
    }

    // /documentation/UIKit/UICollectionView/collectionViewLayout (iOS 6.0+)
    /// The layout used to organize the collected view's items.
    open var collectionViewLayout: UICollectionViewLayout {
        get { storedLayout }
        set { setCollectionViewLayout(newValue, animated: false) }
    }

    // /documentation/UIKit/UICollectionView/setCollectionViewLayout(_:animated:) (iOS 6.0+)
    open func setCollectionViewLayout(_ layout: UICollectionViewLayout, animated: Bool) {
        storedLayout.collectionView = nil
        storedLayout = layout
        layout.collectionView = self
        setNeedsLayout()
    }

    // MARK: Data source and delegate

    // /documentation/UIKit/UICollectionView/dataSource (iOS 6.0+)
    /// The object that provides the data for the collection view. (weak)
    open weak var dataSource: (any UICollectionViewDataSource)? {
        didSet {
            presentation.setNeedsReload()
            setNeedsLayout()
        }
    }

    // /documentation/UIKit/UICollectionView/delegate (iOS 6.0+)
    /// The object that acts as the delegate of the collection view. (weak)
    open weak var delegate: (any UICollectionViewDelegate)? {
        didSet { setNeedsLayout() }
    }

    // /documentation/UIKit/UICollectionView/prefetchDataSource (iOS 10.0+)
    /// The object that acts as the prefetching data source for the collection view. (weak)
    @available(iOS 10.0, *)
    open weak var prefetchDataSource: (any UICollectionViewDataSourcePrefetching)?

    // /documentation/UIKit/UICollectionView/isPrefetchingEnabled (iOS 10.0+)
    @available(iOS 10.0, *)
    open var isPrefetchingEnabled: Bool = true

    // MARK: Element kinds

    // /documentation/UIKit/UICollectionView/elementKindSectionHeader (iOS 6.0+)
    /// A supplementary view that identifies the header for a given section.
    /// STAND-IN: `static let` (UIKit's is `class let`).
    public static let elementKindSectionHeader = "UICollectionElementKindSectionHeader"

    // /documentation/UIKit/UICollectionView/elementKindSectionFooter (iOS 6.0+)
    /// A supplementary view that identifies the footer for a given section.
    public static let elementKindSectionFooter = "UICollectionElementKindSectionFooter"

    // MARK: Registering and dequeuing

    // /documentation/UIKit/UICollectionView/register(_:forCellWithReuseIdentifier:) (iOS 6.0+)
    /// Register a class for use in creating new collection view cells.
    open func register(_ cellClass: AnyClass?, forCellWithReuseIdentifier identifier: String) {
        if let cellClass {
            registeredCellClasses[identifier] = (cellClass as? UICollectionViewCell.Type) ?? UICollectionViewCell.self
        } else {
            registeredCellClasses[identifier] = nil
        }
    }

    // /documentation/UIKit/UICollectionView/register(_:forSupplementaryViewOfKind:withReuseIdentifier:) (iOS 6.0+)
    /// Registers a class for use in creating supplementary views for the collection view.
    open func register(
        _ viewClass: AnyClass?, forSupplementaryViewOfKind elementKind: String, withReuseIdentifier identifier: String
    ) {
        let key = Self.supplementaryRegistrationKey(elementKind, identifier)
        if let viewClass {
            registeredSupplementaryClasses[key] =
                (viewClass as? UICollectionReusableView.Type) ?? UICollectionReusableView.self
        } else {
            registeredSupplementaryClasses[key] = nil
        }
    }

    // /documentation/UIKit/UICollectionView/dequeueReusableCell(withReuseIdentifier:for:) (iOS 6.0+)
    /// Dequeues a reusable cell object located by its identifier.
    open func dequeueReusableCell(
        withReuseIdentifier identifier: String, for indexPath: IndexPath
    ) -> UICollectionViewCell {
        if let (path, existing) = presentation.reconfiguring, path == indexPath,
            let cell = existing as? UICollectionViewCell, cell.reuseIdentifier == identifier
        {
            return cell
        }
        if var queue = cellReusePool[identifier], !queue.isEmpty {
            let cell = queue.removeFirst()
            cellReusePool[identifier] = queue
            cell.prepareForReuse()
            return cell
        }
        let cellClass = registeredCellClasses[identifier]
        if cellClass == nil {
            recordFailure(
                "could not dequeue a view of kind: UICollectionElementKindCell with identifier \(identifier) - must register a nib or a class for the identifier or connect a prototype cell in a storyboard"
            )
        }
        let cell = (cellClass ?? UICollectionViewCell.self).init(frame: .zero)
        cell.assignedReuseIdentifier = identifier
        return cell
    }

    // /documentation/UIKit/UICollectionView/dequeueReusableSupplementaryView(ofKind:withReuseIdentifier:for:) (iOS 6.0+)
    /// Dequeues a reusable supplementary view located by its identifier and kind.
    open func dequeueReusableSupplementaryView(
        ofKind elementKind: String, withReuseIdentifier identifier: String, for indexPath: IndexPath
    ) -> UICollectionReusableView {
        let key = Self.supplementaryRegistrationKey(elementKind, identifier)
        if var queue = supplementaryReusePool[key], !queue.isEmpty {
            let view = queue.removeFirst()
            supplementaryReusePool[key] = queue
            view.prepareForReuse()
            return view
        }
        let viewClass = registeredSupplementaryClasses[key]
        if viewClass == nil {
            recordFailure(
                "could not dequeue a view of kind: \(elementKind) with identifier \(identifier) - must register a nib or a class for the identifier or connect a prototype cell in a storyboard"
            )
        }
        let view = (viewClass ?? UICollectionReusableView.self).init(frame: .zero)
        view.assignedReuseIdentifier = identifier
        view.assignedElementKind = elementKind
        return view
    }

    static func supplementaryRegistrationKey(_ kind: String, _ identifier: String) -> String {
        "\(kind)\u{1F}\(identifier)"
    }

    // MARK: Reloading and batch updates

    // /documentation/UIKit/UICollectionView/reloadData() (iOS 6.0+)
    /// Reloads all of the data for the collection view. (At the next layout pass.)
    open func reloadData() {
        presentation.setNeedsReload()
        setNeedsLayout()
    }

    // /documentation/UIKit/UICollectionView/performBatchUpdates(_:completion:) (iOS 6.0+)
    /// Animates multiple insert, delete, reload, and move operations as a group.
    open func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {
        presentation.beginBatch()
        updates?()
        presentation.endBatch()
        completion?(true)
    }

    // /documentation/UIKit/UICollectionView/insertSections(_:) (iOS 6.0+)
    open func insertSections(_ sections: IndexSet) { presentation.record(.insertSections(sections)) }
    // /documentation/UIKit/UICollectionView/deleteSections(_:) (iOS 6.0+)
    open func deleteSections(_ sections: IndexSet) { presentation.record(.deleteSections(sections)) }
    // /documentation/UIKit/UICollectionView/reloadSections(_:) (iOS 6.0+)
    open func reloadSections(_ sections: IndexSet) { presentation.record(.reloadSections(sections)) }
    // /documentation/UIKit/UICollectionView/moveSection(_:toSection:) (iOS 6.0+)
    open func moveSection(_ section: Int, toSection newSection: Int) {
        presentation.record(.moveSection(section, newSection))
    }
    // /documentation/UIKit/UICollectionView/insertItems(at:) (iOS 6.0+)
    open func insertItems(at indexPaths: [IndexPath]) { presentation.record(.insertRows(indexPaths)) }
    // /documentation/UIKit/UICollectionView/deleteItems(at:) (iOS 6.0+)
    open func deleteItems(at indexPaths: [IndexPath]) { presentation.record(.deleteRows(indexPaths)) }
    // /documentation/UIKit/UICollectionView/reloadItems(at:) (iOS 6.0+)
    open func reloadItems(at indexPaths: [IndexPath]) { presentation.record(.reloadRows(indexPaths)) }
    // /documentation/UIKit/UICollectionView/moveItem(at:to:) (iOS 6.0+)
    open func moveItem(at indexPath: IndexPath, to newIndexPath: IndexPath) {
        presentation.record(.moveRow(indexPath, newIndexPath))
    }
    // /documentation/UIKit/UICollectionView/reconfigureItems(at:) (iOS 15.0+)
    /// Updates the data for the items at the index paths you specify, preserving the existing cells for the items.
    @available(iOS 15.0, *)
    open func reconfigureItems(at indexPaths: [IndexPath]) { presentation.record(.reconfigureRows(indexPaths)) }

    // /documentation/UIKit/UICollectionView/hasUncommittedUpdates (iOS 11.0+)
    @available(iOS 11.0, *)
    open var hasUncommittedUpdates: Bool { interactiveMove != nil }

    // MARK: Counts and cells

    // /documentation/UIKit/UICollectionView/numberOfSections (iOS 6.0+)
    open var numberOfSections: Int {
        presentation.loadIfNeeded()
        return presentation.counts.count
    }

    // /documentation/UIKit/UICollectionView/numberOfItems(inSection:) (iOS 6.0+)
    open func numberOfItems(inSection section: Int) -> Int {
        presentation.loadIfNeeded()
        let counts = presentation.counts
        return section >= 0 && section < counts.count ? counts[section] : 0
    }

    // /documentation/UIKit/UICollectionView/cellForItem(at:) (iOS 6.0+)
    /// Gets the cell object at the index path you specify (nil when it is not visible).
    open func cellForItem(at indexPath: IndexPath) -> UICollectionViewCell? {
        presentation.cells[indexPath] as? UICollectionViewCell
    }

    // /documentation/UIKit/UICollectionView/visibleCells (iOS 6.0+)
    open var visibleCells: [UICollectionViewCell] {
        presentation.visibleIndexPaths.compactMap { presentation.cells[$0] as? UICollectionViewCell }
    }

    // /documentation/UIKit/UICollectionView/indexPathsForVisibleItems (iOS 6.0+)
    open var indexPathsForVisibleItems: [IndexPath] { presentation.visibleIndexPaths }

    // /documentation/UIKit/UICollectionView/indexPath(for:) (iOS 6.0+)
    open func indexPath(for cell: UICollectionViewCell) -> IndexPath? {
        presentation.cells.first { $0.value === cell }?.key
    }

    // /documentation/UIKit/UICollectionView/indexPathForItem(at:) (iOS 6.0+)
    /// Gets the index path of the item at the specified point in the collection view.
    open func indexPathForItem(at point: CGPoint) -> IndexPath? {
        presentation.loadIfNeeded()
        for (element, frame) in computeLayout(counts: presentation.counts, presentation: presentation).frames {
            if case .cell(let path) = element, frame.contains(point) { return path }
        }
        return nil
    }

    // /documentation/UIKit/UICollectionView/supplementaryView(forElementKind:at:) (iOS 9.0+)
    /// Retrieves the supplementary view at the specified index path (nil when not visible).
    open func supplementaryView(
        forElementKind elementKind: String, at indexPath: IndexPath
    ) -> UICollectionReusableView? {
        presentation.supplementaries[SupplementaryKey(kind: elementKind, indexPath: indexPath)]
            as? UICollectionReusableView
    }

    // /documentation/UIKit/UICollectionView/visibleSupplementaryViews(ofKind:) (iOS 9.0+)
    open func visibleSupplementaryViews(ofKind elementKind: String) -> [UICollectionReusableView] {
        indexPathsForVisibleSupplementaryElements(ofKind: elementKind).compactMap {
            supplementaryView(forElementKind: elementKind, at: $0)
        }
    }

    // /documentation/UIKit/UICollectionView/indexPathsForVisibleSupplementaryElements(ofKind:) (iOS 9.0+)
    open func indexPathsForVisibleSupplementaryElements(ofKind elementKind: String) -> [IndexPath] {
        presentation.supplementaries.keys.filter { $0.kind == elementKind }.map(\.indexPath).sorted()
    }

    // /documentation/UIKit/UICollectionView/layoutAttributesForItem(at:) — not modelled; frames:
    /// The frame of an item in content coordinates (the stand-in's layout).
    func frameForItem(at indexPath: IndexPath) -> CGRect? {
        presentation.loadIfNeeded()
        return computeLayout(counts: presentation.counts, presentation: presentation).frame(of: .cell(indexPath))
    }

    // /documentation/UIKit/UICollectionView/scrollToItem(at:at:animated:) (iOS 6.0+)
    /// Scrolls the collection view contents until the specified item is visible (then lays out).
    open func scrollToItem(at indexPath: IndexPath, at scrollPosition: UICollectionView.ScrollPosition, animated: Bool)
    {
        guard let rect = frameForItem(at: indexPath) else { return }
        var offset = contentOffset
        if scrollPosition.contains(.top) {
            offset.y = rect.minY
        } else if scrollPosition.contains(.centeredVertically) {
            offset.y = rect.midY - bounds.height / 2
        } else if scrollPosition.contains(.bottom) {
            offset.y = rect.maxY - bounds.height
        }
        if scrollPosition.contains(.left) {
            offset.x = rect.minX
        } else if scrollPosition.contains(.centeredHorizontally) {
            offset.x = rect.midX - bounds.width / 2
        } else if scrollPosition.contains(.right) {
            offset.x = rect.maxX - bounds.width
        }
        offset.y = max(0, min(offset.y, max(0, contentSize.height - bounds.height)))
        offset.x = max(0, min(offset.x, max(0, contentSize.width - bounds.width)))
        contentOffset = offset
        layoutIfNeeded()
    }

    // MARK: Selection

    // /documentation/UIKit/UICollectionView/allowsSelection (iOS 6.0+)
    open var allowsSelection: Bool = true
    // /documentation/UIKit/UICollectionView/allowsMultipleSelection (iOS 6.0+)
    open var allowsMultipleSelection: Bool = false
    // /documentation/UIKit/UICollectionView/allowsSelectionDuringEditing (iOS 14.0+)
    @available(iOS 14.0, *)
    open var allowsSelectionDuringEditing: Bool = false
    // /documentation/UIKit/UICollectionView/allowsMultipleSelectionDuringEditing (iOS 14.0+)
    @available(iOS 14.0, *)
    open var allowsMultipleSelectionDuringEditing: Bool = false

    // /documentation/UIKit/UICollectionView/indexPathsForSelectedItems (iOS 6.0+)
    /// The index paths for the selected items (nil when none).
    open var indexPathsForSelectedItems: [IndexPath]? {
        selectedIndexPaths.isEmpty ? nil : selectedIndexPaths.sorted()
    }

    // /documentation/UIKit/UICollectionView/selectItem(at:animated:scrollPosition:) (iOS 6.0+)
    /// Selects the item at the specified index path and optionally scrolls it into view.
    /// "This method doesn't cause any selection-related delegate methods to be called."
    open func selectItem(at indexPath: IndexPath?, animated: Bool, scrollPosition: UICollectionView.ScrollPosition) {
        guard let indexPath else {
            for path in selectedIndexPaths { cellForItem(at: path)?.isSelected = false }
            selectedIndexPaths = []
            return
        }
        let multiple = storedIsEditing ? allowsMultipleSelectionDuringEditing : allowsMultipleSelection
        if !multiple {
            for path in selectedIndexPaths where path != indexPath { cellForItem(at: path)?.isSelected = false }
            selectedIndexPaths.removeAll { $0 != indexPath }
        }
        if !selectedIndexPaths.contains(indexPath) { selectedIndexPaths.append(indexPath) }
        cellForItem(at: indexPath)?.isSelected = true
        if !scrollPosition.isEmpty { scrollToItem(at: indexPath, at: scrollPosition, animated: animated) }
    }

    // /documentation/UIKit/UICollectionView/deselectItem(at:animated:) (iOS 6.0+)
    /// Deselects the item at the specified index (no delegate messages).
    open func deselectItem(at indexPath: IndexPath, animated: Bool) {
        selectedIndexPaths.removeAll { $0 == indexPath }
        cellForItem(at: indexPath)?.isSelected = false
    }

    // /documentation/UIKit/UICollectionView/isEditing (iOS 14.0+)
    /// A Boolean value that determines whether the collection view is in editing mode.
    @available(iOS 14.0, *)
    open var isEditing: Bool {
        get { storedIsEditing }
        set {
            if openSwipe != nil { endSwipe() }
            storedIsEditing = newValue
        }
    }

    // MARK: Interactive movement

    // /documentation/UIKit/UICollectionView/beginInteractiveMovementForItem(at:) (iOS 9.0+)
    /// Initiates the interactive movement of the item at the specified index path. Returns
    /// false when the item cannot be moved (the data source's collectionView(_:canMoveItemAt:)).
    open func beginInteractiveMovementForItem(at indexPath: IndexPath) -> Bool {
        presentation.loadIfNeeded()
        guard interactiveMove == nil, itemExists(indexPath),
            dataSource?.collectionView(self, canMoveItemAt: indexPath) ?? false
        else { return false }
        interactiveMove = (indexPath, indexPath)
        return true
    }

    // /documentation/UIKit/UICollectionView/updateInteractiveMovementTargetPosition(_:) (iOS 9.0+)
    /// Updates the position of the item within the collection view's bounds: the item under
    /// the point is the proposed index path, the delegate may retarget, and the view moves
    /// the item there (no data source call yet).
    open func updateInteractiveMovementTargetPosition(_ targetPosition: CGPoint) {
        guard let move = interactiveMove, let proposed = indexPathForItem(at: targetPosition) else { return }
        let target: IndexPath
        if let delegate {
            target = delegate.collectionView(
                self, targetIndexPathForMoveOfItemFromOriginalIndexPath: move.original,
                atCurrentIndexPath: move.current, toProposedIndexPath: proposed)
        } else {
            target = proposed
        }
        guard target != move.current, itemExists(target) else { return }
        moveShownItem(from: move.current, to: target)
        interactiveMove = (move.original, target)
    }

    // /documentation/UIKit/UICollectionView/endInteractiveMovement() (iOS 9.0+)
    /// Ends interactive movement tracking and moves the target item to its new location:
    /// "the collection view calls [collectionView(_:moveItemAt:to:)] if the position of the
    /// item changed."
    open func endInteractiveMovement() {
        guard let move = interactiveMove else { return }
        interactiveMove = nil
        if move.original != move.current {
            dataSource?.collectionView(self, moveItemAt: move.original, to: move.current)
        }
        // The layout pass after the drop, once the data source has moved too.
        presentation.updateVisible()
    }

    // /documentation/UIKit/UICollectionView/cancelInteractiveMovement() (iOS 9.0+)
    /// Ends interactive movement tracking and returns the target item to its original location.
    open func cancelInteractiveMovement() {
        guard let move = interactiveMove else { return }
        interactiveMove = nil
        if move.original != move.current { moveShownItem(from: move.current, to: move.original) }
        presentation.updateVisible()
    }

    // MARK: Layout

    open override func layoutSubviews() {
        super.layoutSubviews()
        presentation.layoutPass()
    }

    open override func didMoveToWindow() {
        super.didMoveToWindow()
        if window != nil {
            setNeedsLayout()
            layoutIfNeeded()
        }
    }
}

extension UICollectionView {
    // /documentation/UIKit/UICollectionView/ScrollDirection (iOS 6.0+)
    /// Constants indicating the direction of scrolling for the layout.
    public enum ScrollDirection: Int, Sendable {
        case vertical = 0
        case horizontal = 1
    }

    // /documentation/UIKit/UICollectionView/ScrollPosition (iOS 6.0+)
    /// Constants that indicate how to scroll an item into the visible portion of the collection view.
    public struct ScrollPosition: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        public static let top = ScrollPosition(rawValue: 1 << 0)
        public static let centeredVertically = ScrollPosition(rawValue: 1 << 1)
        public static let bottom = ScrollPosition(rawValue: 1 << 2)
        public static let left = ScrollPosition(rawValue: 1 << 3)
        public static let centeredHorizontally = ScrollPosition(rawValue: 1 << 4)
        public static let right = ScrollPosition(rawValue: 1 << 5)
    }
}
