// MARK: - App and scenes

// /documentation/SwiftUI/App (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
/// A type that represents the structure and behavior of an app.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
@MainActor @preconcurrency public protocol App {
    // /documentation/SwiftUI/App/Body-swift.associatedtype
    associatedtype Body: Scene
    // /documentation/SwiftUI/App/body-swift.property
    @SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }
    /// STAND-IN: the App page lists an `init()` requirement (what `main()` calls); its own
    /// page was not looked up, so it is declared as the protocol's isolation implies.
    @MainActor @preconcurrency init()
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension App {
    // /documentation/SwiftUI/App/main()
    /// Initializes and runs the app.
    ///
    /// STAND-IN: there is no app to run on Linux; the AppleCheck executables that hold an
    /// `@main` App are built, never run.
    @MainActor @preconcurrency public static func main() {
        fatalError("STAND-IN: SwiftUI apps do not run on Linux")
    }
}

// /documentation/SwiftUI/Scene (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
/// A part of an app's user interface with a life cycle managed by the system.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
@MainActor @preconcurrency public protocol Scene {
    /// STAND-IN: `Body-swift.associatedtype` is listed on the Scene page; its constraint
    /// (`Scene`) is the one `body`'s page implies.
    associatedtype Body: Scene
    // /documentation/SwiftUI/Scene/body-swift.property
    @SceneBuilder @MainActor @preconcurrency var body: Self.Body { get }
}

/// STAND-IN: primitive scenes have no body (as primitive views; see `Never: View`).
extension Never: Scene {}

/// STAND-IN: what `SceneBuilder` builds here (SwiftUI's own scene types are not public).
@usableFromInline nonisolated struct StandInScene: Scene {
    @usableFromInline typealias Body = Never
    @usableFromInline nonisolated init() {}
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension Scene where Body == Never {
    /// STAND-IN: see `Never: Scene`.
    public var body: Never { fatalError("STAND-IN: a primitive scene has no body") }
}

/// STAND-IN: the type `@SceneBuilder` names; its `buildBlock(_:)` page gives the one
/// method declared here. The struct's own page was not looked up.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
@resultBuilder public struct SceneBuilder {
    private init() {}

    // /documentation/SwiftUI/SceneBuilder/buildBlock(_:)
    @export(implementation) public static func buildBlock<each Content>(_ content: repeat each Content) -> some Scene
    where repeat each Content: Scene {
        StandInScene()
    }
}

// /documentation/SwiftUI/WindowGroup (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
/// A scene that presents a group of identically structured windows.
///
/// STAND-IN: the declaration is the one onestack.dev transcribes from the SDK 27.1
/// interface (`nonisolated struct WindowGroup<Content> where Content : View`); Apple's
/// type page did not come up in the search.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
nonisolated public struct WindowGroup<Content> where Content: View {
    @usableFromInline let content: () -> Content

    // /documentation/SwiftUI/WindowGroup/init(makeContent:)
    /// Creates a window group.
    ///
    /// STAND-IN: `init(content:)` (the same, with a non-escaping closure, deprecated in
    /// iOS 18 per /documentation/SwiftUI/WindowGroup/init(content:)) is not declared: with
    /// both, `WindowGroup { … }` is ambiguous here, and the SDK's tie-breaker (an
    /// underscored attribute) is not on the pages.
    @export(implementation) nonisolated public init(@ContentBuilder makeContent: @escaping () -> Content) {
        self.content = makeContent
    }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension WindowGroup: Scene {
    public typealias Body = Never
}

// /documentation/SwiftUI/ScenePhase (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
/// An indication of a scene's operational state.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
public enum ScenePhase {
    /// STAND-IN: page /documentation/SwiftUI/ScenePhase/background (linked from the
    /// `inactive` page) was not fetched; declared as the other two cases are.
    case background
    // /documentation/SwiftUI/ScenePhase/inactive
    /// The scene is in the foreground but should pause its work.
    case inactive
    // /documentation/SwiftUI/ScenePhase/active
    /// The scene is in the foreground and interactive.
    case active
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension EnvironmentValues {
    // /documentation/SwiftUI/EnvironmentValues/scenePhase
    /// The current phase of the scene.
    public var scenePhase: ScenePhase {
        get { storage["scenePhase"] as? ScenePhase ?? .active }
        set { storage["scenePhase"] = newValue }
    }
}
