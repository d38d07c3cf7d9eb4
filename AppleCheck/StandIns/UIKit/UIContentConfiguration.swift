import Foundation

// /documentation/UIKit/UIConfigurationState-8d7pd (iOS 14.0+)
/// The requirements for an object that encapsulates a view's state.
/// STAND-IN: without trait collections or custom-state subscripts.
@available(iOS 14.0, *)
public protocol UIConfigurationState {}

// /documentation/UIKit/UICellConfigurationState-swift.struct (iOS 14.0+)
/// A structure that encapsulates a cell's state.
@available(iOS 14.0, *)
public struct UICellConfigurationState: UIConfigurationState, Hashable, Sendable {
    /// STAND-IN: internal. UIKit's only initializer is `init(traitCollection:)`, and the stand-in
    /// has no trait collections (audit fix: was a public `init()` UIKit does not have).
    init() {}
    // /documentation/UIKit/UIViewConfigurationState-swift.struct/isSelected
    public var isSelected: Bool = false
    // /documentation/UIKit/UIViewConfigurationState-swift.struct/isHighlighted
    public var isHighlighted: Bool = false
    // /documentation/UIKit/UIViewConfigurationState-swift.struct/isDisabled
    public var isDisabled: Bool = false
    // /documentation/UIKit/UICellConfigurationState-swift.struct/isEditing
    public var isEditing: Bool = false
    // /documentation/UIKit/UICellConfigurationState-swift.struct/isSwiped
    public var isSwiped: Bool = false
    // /documentation/UIKit/UICellConfigurationState-swift.struct/isReordering
    public var isReordering: Bool = false
}

// /documentation/UIKit/UIContentConfiguration-9eib5 (iOS 14.0+)
/// The requirements for an object that provides the configuration for a content view.
@available(iOS 14.0, *)
public protocol UIContentConfiguration {
    // /documentation/UIKit/UIContentConfiguration-9eib5/makeContentView()
    /// Creates a new instance of the content view using this configuration.
    @MainActor func makeContentView() -> any UIView & UIContentView

    // /documentation/UIKit/UIContentConfiguration-9eib5/updated(for:)
    /// Generates a configuration for the specified state by applying the configuration's
    /// default values for that state to any properties that you haven't customized.
    func updated(for state: any UIConfigurationState) -> Self
}

// /documentation/UIKit/UIContentView-5fh3z (iOS 14.0+)
/// The requirements for a content view that you create using a configuration.
@available(iOS 14.0, *)
@MainActor
public protocol UIContentView: NSObjectProtocol {
    // /documentation/UIKit/UIContentView-5fh3z/configuration
    /// The current configuration of the view.
    var configuration: any UIContentConfiguration { get set }

    // /documentation/UIKit/UIContentView-5fh3z/supports(_:) (iOS 16.0+, optional)
    /// Determines whether the view is compatible with the provided configuration.
    @available(iOS 16.0, *)
    func supports(_ configuration: any UIContentConfiguration) -> Bool
}

@available(iOS 14.0, *)
extension UIContentView {
    /// UIKit's answer when the view does not implement it: true.
    @available(iOS 16.0, *)
    public func supports(_ configuration: any UIContentConfiguration) -> Bool { true }
}
