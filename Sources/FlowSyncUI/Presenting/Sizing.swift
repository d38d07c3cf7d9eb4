import Foundation

/// How tall an adapter's rows (or header/footer views) are in a table: FlowKit's
/// `rowHeight` / `rowHeightEstimated` events as one policy per adapter.
public enum RowSizing: Hashable, Sendable {
    /// The table's own settings (`rowHeight`, `estimatedRowHeight`, or the section
    /// header/footer equivalents).
    case `default`
    /// Always this height, in points.
    case fixed(CGFloat)
    /// Self-sizing (Auto Layout or the content configuration decides), estimated at
    /// this height until measured.
    case automatic(estimated: CGFloat)

    /// What `heightForRowAt` (or `heightForHeaderInSection`) answers.
    ///
    /// - Parameters:
    ///   - viewDefault: The table's own height for this element (`rowHeight`, …).
    ///   - automaticDimension: UIKit's `UITableView.automaticDimension`.
    public func height(viewDefault: CGFloat, automaticDimension: CGFloat) -> CGFloat {
        switch self {
        case .default: return viewDefault
        case .fixed(let height): return height
        case .automatic: return automaticDimension
        }
    }

    /// What `estimatedHeightForRowAt` (or its header/footer twin) answers.
    ///
    /// - Parameter viewDefault: The table's own estimate (`estimatedRowHeight`, …).
    public func estimatedHeight(viewDefault: CGFloat) -> CGFloat {
        switch self {
        case .default: return viewDefault
        case .fixed(let height): return height
        case .automatic(let estimate): return estimate
        }
    }
}

/// How large an adapter's items (or supplementary views) are in a collection view with
/// a flow layout.
public enum ItemSizing: Hashable, Sendable {
    /// The layout's own `itemSize` (or header/footer reference size).
    case `default`
    /// Always this size.
    case fixed(CGSize)
    /// Self-sizing: the cell measures itself, starting from this estimate. Self-sizing
    /// in a flow layout needs a non-zero `estimatedItemSize`; ``CollectionDirector``
    /// sets it to `UICollectionViewFlowLayout.automaticSize` when an adapter asks for
    /// this, and answers `sizeForItemAt` with the estimate.
    case automatic(estimated: CGSize)

    /// What `collectionView(_:layout:sizeForItemAt:)` (or the reference size of a
    /// header or footer) answers.
    ///
    /// - Parameter layoutDefault: The layout's own size for this element (`itemSize`, …).
    public func size(layoutDefault: CGSize) -> CGSize {
        switch self {
        case .default: return layoutDefault
        case .fixed(let size): return size
        case .automatic(let estimate): return estimate
        }
    }

    /// Whether the cells measure themselves.
    public var isAutomatic: Bool {
        if case .automatic = self { return true }
        return false
    }
}
