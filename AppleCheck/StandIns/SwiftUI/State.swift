// MARK: - State, bindings and the environment

// /documentation/SwiftUI/State (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A property wrapper type that can read and write a value managed by SwiftUI.
///
/// STAND-IN: with Xcode 27, `@State` is a macro (/documentation/SwiftUI/State(initialValue:));
/// the page says that Xcode 26 and earlier use this property wrapper, which the stand-in
/// models instead (a macro needs a compiler plug-in). Storage is a box, so a copy of the
/// view shares it, as SwiftUI's storage outlives the view value.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen @propertyWrapper public struct State<Value> {
    @usableFromInline let box: Box<Value>

    // /documentation/SwiftUI/State/init(wrappedValue:)
    /// Creates a state property that stores an initial wrapped value.
    public init(wrappedValue value: Value) { box = Box(value) }

    // /documentation/SwiftUI/State/init(initialValue:)
    /// Creates a state property that stores an initial value.
    @export(implementation) public init(initialValue value: Value) { box = Box(value) }

    // /documentation/SwiftUI/State/wrappedValue
    /// The underlying value referenced by the state variable.
    public var wrappedValue: Value {
        get { box.value }
        nonmutating set { box.value = newValue }
    }

    // /documentation/SwiftUI/State/projectedValue
    /// A binding to the state value.
    public var projectedValue: Binding<Value> {
        let box = self.box
        return Binding(get: { box.value }, set: { box.value = $0 })
    }
}

/// STAND-IN: State's storage.
@usableFromInline final class Box<Value> {
    @usableFromInline var value: Value
    @usableFromInline init(_ value: Value) { self.value = value }
}

// /documentation/SwiftUI/Binding (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A property wrapper type that can read and write a value owned by a source of truth.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen @propertyWrapper @dynamicMemberLookup public struct Binding<Value> {
    private let get: () -> Value
    private let set: (Value) -> Void

    /// STAND-IN: `init(get:set:)` exists in SwiftUI but its page was not looked up; this
    /// internal initializer is what `State.projectedValue` uses.
    init(get: @escaping () -> Value, set: @escaping (Value) -> Void) {
        self.get = get
        self.set = set
    }

    // /documentation/SwiftUI/Binding/wrappedValue
    /// The underlying value referenced by the binding variable.
    public var wrappedValue: Value {
        get { get() }
        nonmutating set { set(newValue) }
    }

    // /documentation/SwiftUI/Binding/subscript(dynamicMember:)
    /// Returns a binding to the resulting value of a given key path.
    public subscript<Subject>(dynamicMember keyPath: WritableKeyPath<Value, Subject>) -> Binding<Subject> {
        let get = self.get, set = self.set
        return Binding<Subject>(
            get: { get()[keyPath: keyPath] },
            set: { newValue in
                var value = get()
                value[keyPath: keyPath] = newValue
                set(value)
            })
    }
}

// /documentation/SwiftUI/Bindable (iOS 17.0+, macOS 14.0+, tvOS 17.0+, watchOS 10.0+, visionOS 1.0+)
/// A property wrapper type that supports creating bindings to the mutable properties of
/// observable objects.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@dynamicMemberLookup @propertyWrapper public struct Bindable<Value> {
    // /documentation/SwiftUI/Bindable/wrappedValue
    /// The wrapped object.
    public var wrappedValue: Value

    // /documentation/SwiftUI/Bindable/projectedValue
    /// The bindable wrapper for the object that creates bindings to its properties using
    /// dynamic member lookup.
    public var projectedValue: Bindable<Value> { self }

    /// STAND-IN: keeps the compiler from synthesizing an internal `init(wrappedValue:)`
    /// that would clash with the public one below.
    init(standIn value: Value) { wrappedValue = value }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
extension Bindable where Value: AnyObject {
    // /documentation/SwiftUI/Bindable/subscript(dynamicMember:)
    /// Returns a binding to the value of a given key path.
    public subscript<Subject>(dynamicMember keyPath: ReferenceWritableKeyPath<Value, Subject>) -> Binding<Subject> {
        let object = wrappedValue
        return Binding(get: { object[keyPath: keyPath] }, set: { object[keyPath: keyPath] = $0 })
    }
}

@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
extension Bindable where Value: AnyObject, Value: Observable {
    // /documentation/SwiftUI/Bindable/init(wrappedValue:)
    /// Creates a bindable object from an observable object.
    public init(wrappedValue: Value) { self.init(standIn: wrappedValue) }

    // /documentation/SwiftUI/Bindable/init(_:)
    /// Creates a bindable object from an observable object.
    public init(_ wrappedValue: Value) { self.init(standIn: wrappedValue) }
}

// /documentation/SwiftUI/Environment (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A property wrapper that reads a value from a view's environment.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen @propertyWrapper public struct Environment<Value> {
    private let keyPath: KeyPath<EnvironmentValues, Value>

    // /documentation/SwiftUI/Environment/init(_:)
    /// Creates an environment property to read the specified key path.
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) { self.keyPath = keyPath }

    // /documentation/SwiftUI/Environment/wrappedValue
    /// The current value of the environment property.
    ///
    /// STAND-IN: there is no view graph; the value is the default environment's.
    public var wrappedValue: Value { EnvironmentValues()[keyPath: keyPath] }
}

/// STAND-IN: the EnvironmentValues type page was not looked up; declared as the struct
/// its `init()` page and the `scenePhase` property page imply.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public struct EnvironmentValues {
    /// STAND-IN: storage for the properties declared in extensions.
    var storage: [String: Any] = [:]

    // /documentation/SwiftUI/EnvironmentValues/init()
    /// Creates an environment values instance.
    public init() {}
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension View {
    // /documentation/SwiftUI/View/environment(_:_:)
    /// Sets the environment value of the specified key path to the given value.
    nonisolated public func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V) -> some View {
        StandInView()
    }
}
