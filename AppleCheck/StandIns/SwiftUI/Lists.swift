// MARK: - Lists, sections and editing

/// STAND-IN: the List type page was not looked up. Its generic parameters are those its
/// initializers' pages constrain (`SelectionValue`, `Content`); `SelectionValue :
/// Hashable` and `Content : View` are what `List` has required since iOS 13.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
nonisolated public struct List<SelectionValue, Content> where SelectionValue: Hashable, Content: View {
    @usableFromInline let content: Content
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension List where SelectionValue == Never {
    // /documentation/SwiftUI/List/init(content:)
    /// Creates a list with the given content.
    nonisolated public init(@ContentBuilder content: () -> Content) {
        self.content = content()
    }

    // /documentation/SwiftUI/List/init(_:rowContent:)-3vn6i
    /// Creates a list that computes its rows on demand from an underlying collection of
    /// identifiable data.
    @export(implementation) nonisolated public init<Data, RowContent>(
        _ data: Data, @ContentBuilder rowContent: @escaping (Data.Element) -> RowContent
    )
    where
        Content == ForEach<Data, Data.Element.ID, RowContent>, Data: RandomAccessCollection, RowContent: View,
        Data.Element: Identifiable
    {
        self.content = ForEach(data, content: rowContent)
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension List: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/ForEach (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A structure that computes views on demand from an underlying collection of identified
/// data.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public struct ForEach<Data, ID, Content> where Data: RandomAccessCollection, ID: Hashable {
    // /documentation/SwiftUI/ForEach/data
    /// The collection of underlying identified data that SwiftUI uses to create views
    /// dynamically.
    public var data: Data
    // /documentation/SwiftUI/ForEach/content
    /// A function to create content on demand using the underlying data.
    public var content: (Data.Element) -> Content
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension ForEach where ID == Data.Element.ID, Data.Element: Identifiable {
    /// Creates an instance that uniquely identifies and creates views across updates
    /// based on the identity of the underlying data.
    ///
    /// STAND-IN: the page of this (view) initializer did not come up; its shape is that
    /// of its MapKit sibling /documentation/SwiftUI/ForEach/init(_:content:) with
    /// `@ContentBuilder`, as the Range<Int> overload
    /// /documentation/SwiftUI/ForEach/init(_:content:)-ktgx shows it, and it builds the
    /// `ForEach<Data, Data.Element.ID, RowContent>` of
    /// /documentation/SwiftUI/List/init(_:rowContent:)-3vn6i.
    public init(_ data: Data, @ContentBuilder content: @escaping (Data.Element) -> Content) {
        self.data = data
        self.content = content
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension ForEach: View where Content: View {
    public typealias Body = Never
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension ForEach: DynamicViewContent where Content: View {}

// /documentation/SwiftUI/DynamicViewContent (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A type of view that generates views from an underlying collection of data.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public protocol DynamicViewContent<Data>: View {
    /// STAND-IN: `Data-swift.associatedtype` (listed on the protocol's page) declared as
    /// DynamicTableRowContent's is (/documentation/SwiftUI/DynamicTableRowContent/Data-swift.associatedtype).
    associatedtype Data: Collection
    /// STAND-IN: `data-swift.property` (listed on the protocol's page), not fetched.
    var data: Self.Data { get }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension DynamicViewContent {
    // /documentation/SwiftUI/DynamicViewContent/onMove(perform:)
    /// Sets the move action for the dynamic view.
    nonisolated public func onMove(perform action: ((IndexSet, Int) -> Void)?) -> some DynamicViewContent {
        StandInDynamicContent()
    }

    // /documentation/SwiftUI/DynamicViewContent/onDelete(perform:)
    /// Sets the deletion action for the dynamic view.
    nonisolated public func onDelete(perform action: ((IndexSet) -> Void)?) -> some DynamicViewContent {
        StandInDynamicContent()
    }
}

/// STAND-IN: the result of `onMove` and `onDelete` here (SwiftUI's own is not public).
@usableFromInline nonisolated struct StandInDynamicContent: DynamicViewContent {
    @usableFromInline typealias Body = Never
    @usableFromInline var data: [Never] { [] }
    @usableFromInline nonisolated init() {}
}

// /documentation/SwiftUI/Section (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A container view that you can use to add hierarchy within certain views.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public struct Section<Parent, Content, Footer> {
    @usableFromInline let parent: Parent
    @usableFromInline let content: Content
    @usableFromInline let footer: Footer
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Section where Footer == EmptyView {
    // /documentation/SwiftUI/Section/init(content:header:)
    /// Creates a section with a header and the provided section content.
    @export(implementation) public init(@ContentBuilder content: () -> Content, @ContentBuilder header: () -> Parent) {
        self.content = content()
        self.parent = header()
        self.footer = EmptyView()
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Section where Parent == EmptyView, Footer == EmptyView {
    // /documentation/SwiftUI/Section/init(content:)
    /// Creates a section with the provided section content.
    @export(implementation) public init(@ContentBuilder content: () -> Content) {
        self.content = content()
        self.parent = EmptyView()
        self.footer = EmptyView()
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Section {
    // /documentation/SwiftUI/Section/init(content:header:footer:)
    /// Creates a section with a header, footer, and the provided section content.
    @export(implementation) public init(
        @ContentBuilder content: () -> Content, @ContentBuilder header: () -> Parent,
        @ContentBuilder footer: () -> Footer
    ) {
        self.content = content()
        self.parent = header()
        self.footer = footer()
    }
}

/// STAND-IN: Section's conformance (not on the pages seen): a view when its parts are.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Section: View where Parent: View, Content: View, Footer: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/EditButton (iOS 13.0+, macCatalyst 13.0+, visionOS 1.0+)
/// A button that toggles the edit mode environment value.
@available(iOS 13.0, macCatalyst 13.0, visionOS 1.0, *)
@available(macOS, unavailable)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
nonisolated public struct EditButton {
    // /documentation/SwiftUI/EditButton/init()
    /// Creates an Edit button instance.
    nonisolated public init() {}
}

@available(iOS 13.0, macCatalyst 13.0, visionOS 1.0, *)
extension EditButton: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/EditMode (iOS 13.0+, macCatalyst 13.0+, tvOS 13.0+, visionOS 1.0+)
/// A mode that indicates whether the user can edit a view's content.
@available(iOS 13.0, macCatalyst 13.0, tvOS 13.0, visionOS 1.0, *)
@available(macOS, unavailable)
@available(watchOS, unavailable)
public enum EditMode {
    /// STAND-IN: listed on the EditMode page's Topics; its own page not fetched.
    case inactive
    /// STAND-IN: listed on the EditMode page's Topics; its own page not fetched.
    case transient
    // /documentation/SwiftUI/EditMode/active
    /// The user can edit the view content.
    case active
}
