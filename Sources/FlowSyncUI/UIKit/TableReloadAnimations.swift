// UIKit glue (iOS, tvOS, visionOS, Mac Catalyst). Compiled on Linux by `make apple-check`
// against the UIKit stand-in (AppleCheck/), never on the project's own build.
#if canImport(UIKit) && !os(watchOS)
import UIKit

/// The row and section animations a table uses for each kind of change, as FlowKit's
/// `TableReloadAnimations`: set ``TableDirector/animations`` (or
/// ``TableViewUpdateTarget/animations``).
///
/// Moves have no animation parameter in UIKit (`moveRow(at:to:)`); header and footer
/// changes are refreshed in place by a ``TableDirector`` (no animation), or reloaded
/// with ``sectionReload`` by a plain ``TableViewUpdateTarget``.
public struct TableReloadAnimations: Sendable {
    /// Rows deleted (`deleteRows(at:with:)`).
    public var rowDeletionAnimation: UITableView.RowAnimation
    /// Rows inserted (`insertRows(at:with:)`).
    public var rowInsertionAnimation: UITableView.RowAnimation
    /// Rows whose content changed (`reloadRows(at:with:)`).
    public var rowReloadAnimation: UITableView.RowAnimation
    /// Sections deleted (`deleteSections(_:with:)`).
    public var sectionDeletionAnimation: UITableView.RowAnimation
    /// Sections inserted (`insertSections(_:with:)`).
    public var sectionInsertionAnimation: UITableView.RowAnimation
    /// Sections reloaded because a header or footer appeared or went
    /// (`reloadSections(_:with:)`).
    public var sectionReloadAnimation: UITableView.RowAnimation

    public init(
        rowDeletionAnimation: UITableView.RowAnimation = .automatic,
        rowInsertionAnimation: UITableView.RowAnimation = .automatic,
        rowReloadAnimation: UITableView.RowAnimation = .automatic,
        sectionDeletionAnimation: UITableView.RowAnimation = .automatic,
        sectionInsertionAnimation: UITableView.RowAnimation = .automatic,
        sectionReloadAnimation: UITableView.RowAnimation = .none
    ) {
        self.rowDeletionAnimation = rowDeletionAnimation
        self.rowInsertionAnimation = rowInsertionAnimation
        self.rowReloadAnimation = rowReloadAnimation
        self.sectionDeletionAnimation = sectionDeletionAnimation
        self.sectionInsertionAnimation = sectionInsertionAnimation
        self.sectionReloadAnimation = sectionReloadAnimation
    }

    /// The same animation for every kind of change.
    public init(all animation: UITableView.RowAnimation) {
        self.init(
            rowDeletionAnimation: animation, rowInsertionAnimation: animation, rowReloadAnimation: animation,
            sectionDeletionAnimation: animation, sectionInsertionAnimation: animation, sectionReloadAnimation: animation
        )
    }

    /// UIKit's choice for every change (`.automatic`), sections reloaded without one:
    /// FlowKit's `TableReloadAnimations.default()`.
    public static func `default`() -> TableReloadAnimations { TableReloadAnimations() }
}
#endif
