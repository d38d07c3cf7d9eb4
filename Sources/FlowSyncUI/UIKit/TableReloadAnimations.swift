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
    public var rowDeletion: UITableView.RowAnimation
    /// Rows inserted (`insertRows(at:with:)`).
    public var rowInsertion: UITableView.RowAnimation
    /// Rows whose content changed (`reloadRows(at:with:)`).
    public var rowReload: UITableView.RowAnimation
    /// Sections deleted (`deleteSections(_:with:)`).
    public var sectionDeletion: UITableView.RowAnimation
    /// Sections inserted (`insertSections(_:with:)`).
    public var sectionInsertion: UITableView.RowAnimation
    /// Sections reloaded to refresh a header or footer without a header adapter
    /// (`reloadSections(_:with:)`).
    public var sectionReload: UITableView.RowAnimation

    public init(rowDeletion: UITableView.RowAnimation = .automatic, rowInsertion: UITableView.RowAnimation = .automatic,
                rowReload: UITableView.RowAnimation = .automatic, sectionDeletion: UITableView.RowAnimation = .automatic,
                sectionInsertion: UITableView.RowAnimation = .automatic, sectionReload: UITableView.RowAnimation = .none) {
        self.rowDeletion = rowDeletion
        self.rowInsertion = rowInsertion
        self.rowReload = rowReload
        self.sectionDeletion = sectionDeletion
        self.sectionInsertion = sectionInsertion
        self.sectionReload = sectionReload
    }

    /// UIKit's choice for every change (`.automatic`), headers reloaded without one.
    public static let `default` = TableReloadAnimations()
    /// No animation for any change.
    public static let none = TableReloadAnimations(all: .none)
    /// Every change fades.
    public static let fade = TableReloadAnimations(all: .fade)

    /// The same animation for every kind of change.
    public init(all animation: UITableView.RowAnimation) {
        self.init(rowDeletion: animation, rowInsertion: animation, rowReload: animation,
                  sectionDeletion: animation, sectionInsertion: animation, sectionReload: animation)
    }
}
#endif
