// MARK: - Navigation and toolbars

// /documentation/SwiftUI/NavigationStack (iOS 16.0+, macOS 13.0+, tvOS 16.0+, watchOS 9.0+, visionOS 1.0+)
/// A view that displays a root view and enables you to present additional views over the
/// root view.
@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
nonisolated public struct NavigationStack<Data, Root> where Root: View {
    private let root: Root

    // /documentation/SwiftUI/NavigationStack/init(root:)
    /// Creates a navigation stack that manages its own navigation state.
    nonisolated public init(@ContentBuilder root: () -> Root) where Data == NavigationPath {
        self.root = root()
    }
}

@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
extension NavigationStack: View {
    public typealias Body = Never
}

/// STAND-IN: the NavigationPath type page was not looked up (onestack.dev transcribes it
/// from SDK 27.1 as `struct NavigationPath`).
@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
public struct NavigationPath {
    // /documentation/SwiftUI/NavigationPath/init()
    /// Creates a new, empty navigation path.
    public init() {}
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension View {
    // /documentation/SwiftUI/View/navigationTitle(_:)-43srq (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
    /// Configures the view's title for purposes of navigation, using a localized string.
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
    nonisolated public func navigationTitle(_ titleKey: LocalizedStringKey) -> some View {
        StandInView()
    }

    // /documentation/SwiftUI/View/navigationTitle(_:)-7onr8 (iOS 16.0+, macOS 13.0+, tvOS 16.0+, watchOS 9.0+, visionOS 1.0+)
    /// Configures the view's title for purposes of navigation, using a string binding.
    @available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
    nonisolated public func navigationTitle(_ title: Binding<String>) -> some View {
        StandInView()
    }

    // /documentation/SwiftUI/View/toolbar(content:)-7vdkx (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
    /// Populates the toolbar or navigation bar with the views you provide.
    ///
    /// STAND-IN: only this (views) overload is declared; the ToolbarContent one and
    /// `ToolbarItem` are not (see DEVIATIONS.md).
    @available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
    nonisolated public func toolbar<Content>(@ContentBuilder content: () -> Content) -> some View where Content: View {
        StandInView()
    }
}
