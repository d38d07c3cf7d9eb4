// MARK: - View and the content builder

// /documentation/SwiftUI/View (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A type that represents part of your app's user interface.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@MainActor @preconcurrency public protocol View {
    // /documentation/SwiftUI/View/Body-swift.associatedtype
    associatedtype Body: View
    // /documentation/SwiftUI/View/body-8kl5o
    @ContentBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

// STAND-IN: Apple's interface declares `Never: View` and a `body` for views whose Body is
// Never (the primitive views); no documentation page shows them. They let the stand-in's
// primitive views conform, and `fatalError()` stand for `some View` results.
extension Never: View {}

extension Never {
    /// STAND-IN: see `Never: View`.
    public typealias Body = Never
    /// STAND-IN: see `Never: View`.
    public var body: Never { fatalError("STAND-IN: Never has no body") }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension View where Body == Never {
    /// STAND-IN: see `Never: View` above.
    public var body: Never { fatalError("STAND-IN: a primitive view has no body") }
}

/// STAND-IN: what the view modifiers return here (SwiftUI's modified-content types are not
/// part of the pages looked up); nothing is ever drawn.
@usableFromInline nonisolated struct StandInView: View {
    @usableFromInline typealias Body = Never
    @usableFromInline nonisolated init() {}
}

// /documentation/SwiftUI/ContentBuilder (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A custom parameter attribute that constructs views and other content types from closures.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public typealias ContentBuilder = ViewBuilder

// /documentation/SwiftUI/ViewBuilder (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A custom parameter attribute that constructs views from closures.
///
/// As the Xcode 27 pages show it: the single-content and conditional builders do not
/// require `View`; the tuple builder does.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@resultBuilder public struct ViewBuilder {
    // STAND-IN: the type page lists no initializer; the builder is never instantiated.
    private init() {}

    // /documentation/SwiftUI/ViewBuilder/buildBlock() (listed on the ViewBuilder page:
    // `static func buildBlock() -> EmptyContent`)
    @export(implementation) public static func buildBlock() -> EmptyContent { EmptyView() }

    // /documentation/SwiftUI/ViewBuilder/buildBlock(_:)
    @export(implementation) public static func buildBlock<Content>(_ content: Content) -> Content { content }

    // /documentation/SwiftUI/ViewBuilder/buildBlock(_:)-2bj1g
    @export(implementation) public static func buildBlock<each Content>(
        _ content: repeat each Content
    ) -> TupleView<(repeat each Content)> where repeat each Content: View {
        TupleView((repeat each content))
    }

    // /documentation/SwiftUI/ViewBuilder/buildIf(_:)
    @export(implementation) public static func buildIf<Content>(_ content: Content?) -> Content? { content }

    // /documentation/SwiftUI/ViewBuilder/buildEither(first:)
    @export(implementation) public static func buildEither<TrueContent, FalseContent>(
        first: TrueContent
    ) -> _ConditionalContent<TrueContent, FalseContent> {
        _ConditionalContent(storage: .trueContent(first))
    }

    // /documentation/SwiftUI/ViewBuilder/buildEither(second:)
    @export(implementation) public static func buildEither<TrueContent, FalseContent>(
        second: FalseContent
    ) -> _ConditionalContent<TrueContent, FalseContent> {
        _ConditionalContent(storage: .falseContent(second))
    }
}

// /documentation/SwiftUI/EmptyView (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A view that doesn't contain any content.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen nonisolated public struct EmptyView {
    // /documentation/SwiftUI/EmptyView/init()
    nonisolated public init() {}
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension EmptyView: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/EmptyContent (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// Content which contains nothing.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public typealias EmptyContent = EmptyView

// /documentation/SwiftUI/TupleView (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A View created from a swift tuple of View values.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen nonisolated public struct TupleView<T> {
    // /documentation/SwiftUI/TupleView/value
    public var value: T
    // /documentation/SwiftUI/TupleView/init(_:)
    nonisolated public init(_ value: T) { self.value = value }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension TupleView: View {
    public typealias Body = Never
}

/// STAND-IN: no page documents `_ConditionalContent` itself; it is the type
/// `ViewBuilder.buildEither(first:)` and `buildEither(second:)` return (their pages), and
/// it is a view when both branches are.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct _ConditionalContent<TrueContent, FalseContent> {
    @usableFromInline enum Storage {
        case trueContent(TrueContent)
        case falseContent(FalseContent)
    }
    @usableFromInline let storage: Storage
    @usableFromInline init(storage: Storage) { self.storage = storage }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension _ConditionalContent: View where TrueContent: View, FalseContent: View {
    public typealias Body = Never
}

/// STAND-IN: `Optional` is a view when its wrapped value is (what `buildIf` relies on);
/// Apple's interface declares it, no page shows it.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Optional: View where Wrapped: View {
    public typealias Body = Never
}
