// MARK: - View modifiers

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension View {
    // /documentation/SwiftUI/View/overlay(alignment:content:) (iOS 15.0+, macOS 12.0+, tvOS 15.0+, watchOS 8.0+, visionOS 1.0+)
    /// Layers the views that you specify in front of this view.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
    nonisolated public func overlay<V>(alignment: Alignment = .center, @ContentBuilder content: () -> V) -> some View
    where V: View {
        StandInView()
    }

    // /documentation/SwiftUI/View/task(name:priority:file:line:_:) (iOS 15.0+, macOS 12.0+, tvOS 15.0+, watchOS 8.0+, visionOS 1.0+)
    /// Adds an asynchronous task to perform before this view appears.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
    @export(implementation) nonisolated public func task(
        name: String? = nil, priority: TaskPriority = .userInitiated, file: String = #fileID, line: Int = #line,
        _ action: sending @escaping @isolated(any) () async -> Void
    ) -> some View {
        StandInView()
    }

    // /documentation/SwiftUI/View/onChange(of:initial:_:)-4psgg (iOS 17.0+, macOS 14.0+, tvOS 17.0+, watchOS 10.0+, visionOS 1.0+)
    /// Adds a modifier for this view that fires an action when a specific value changes.
    @available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
    nonisolated public func onChange<V>(
        of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void
    ) -> some View where V: Equatable {
        StandInView()
    }

    // /documentation/SwiftUI/View/onChange(of:initial:_:) (iOS 17.0+, macOS 14.0+, tvOS 17.0+, watchOS 10.0+, visionOS 1.0+)
    /// Adds a modifier for this view that fires an action when a specific value changes.
    @available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
    nonisolated public func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping () -> Void) -> some View
    where V: Equatable {
        StandInView()
    }
}
