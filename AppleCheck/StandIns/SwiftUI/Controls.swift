// MARK: - Text, images, controls and stacks

// /documentation/SwiftUI/Text (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A view that displays one or more lines of read-only text.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct Text {
    private let content: String

    // /documentation/SwiftUI/Text/init(verbatim:)
    /// Creates a text view that displays a string literal without localization.
    public init(verbatim content: String) { self.content = content }

    // /documentation/SwiftUI/Text/init(_:)-9d1g4
    /// Creates a text view that displays a stored string without localization.
    ///
    /// STAND-IN: the LocalizedStringKey overload (`init(_:tableName:bundle:comment:)`) is
    /// not declared, so a string literal resolves to this one here and to the localized
    /// one on Apple platforms; both compile.
    public init<S>(_ content: S) where S: StringProtocol { self.content = String(content) }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Text: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/LocalizedStringKey (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// The key used to look up an entry in a strings file or strings dictionary file.
///
/// STAND-IN: ExpressibleByStringLiteral only; the interpolation form
/// (`LocalizedStringKey.StringInterpolation`) is not modelled, so `"\(x)"` where a key
/// is expected does not compile here (it does on Apple platforms).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct LocalizedStringKey {
    private let key: String

    // /documentation/SwiftUI/LocalizedStringKey/init(_:)
    /// Creates a localized string key from the given string value.
    public init(_ value: String) { key = value }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension LocalizedStringKey: ExpressibleByStringLiteral {
    // /documentation/SwiftUI/LocalizedStringKey/init(stringLiteral:)
    /// Creates a localized string key from the given string literal.
    public init(stringLiteral value: String) { key = value }
}

/// STAND-IN: the Image type page was not looked up (only its initializer's).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct Image {
    private let name: String

    // /documentation/SwiftUI/Image/init(systemName:) (iOS 13.0+, macOS 11.0+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
    /// Creates a system symbol image.
    @available(macOS 11.0, *)
    public init(systemName: String) { name = systemName }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Image: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/Label (iOS 14.0+, macOS 11.0+, tvOS 14.0+, watchOS 7.0+, visionOS 1.0+)
/// A standard label for user interface items, consisting of an icon with a title.
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
nonisolated public struct Label<Title, Icon> where Title: View, Icon: View {
    private let title: Title
    private let icon: Icon

    // /documentation/SwiftUI/Label/init(title:icon:)
    /// Creates a label with a custom title and icon.
    nonisolated public init(@ContentBuilder title: () -> Title, @ContentBuilder icon: () -> Icon) {
        self.title = title()
        self.icon = icon()
    }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension Label where Title == Text, Icon == Image {
    // /documentation/SwiftUI/Label/init(_:image:)-6zbvg
    /// Creates a label with an icon image and a title generated from a string.
    nonisolated public init<S>(_ title: S, image name: String) where S: StringProtocol {
        self.title = Text(title)
        self.icon = Image(systemName: name)  // STAND-IN: an asset image; no assets here
    }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension Label: View {
    public typealias Body = Never
}

/// STAND-IN: the Button type page was not looked up; `Button<Label> where Label : View`
/// as the initializers' pages use it.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
public struct Button<Label> where Label: View {
    private let action: @MainActor () -> Void
    private let label: Label

    // /documentation/SwiftUI/Button/init(action:label:)
    /// Creates a button that displays a custom label.
    @preconcurrency nonisolated public init(action: @escaping @MainActor () -> Void, @ContentBuilder label: () -> Label)
    {
        self.action = action
        self.label = label()
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Button where Label == Text {
    // /documentation/SwiftUI/Button/init(_:action:)-lpm7
    /// Creates a button that generates its label from a string.
    @preconcurrency nonisolated public init<S>(_ title: S, action: @escaping @MainActor () -> Void)
    where S: StringProtocol {
        self.action = action
        self.label = Text(title)
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Button: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/TextField (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A control that displays an editable text interface.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
nonisolated public struct TextField<Label> where Label: View {
    @usableFromInline let text: Binding<String>
    @usableFromInline let label: Label
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension TextField where Label == Text {
    // /documentation/SwiftUI/TextField/init(_:text:)-2laoi
    /// Creates a text field with a text label generated from a title string.
    @export(implementation) nonisolated public init<S>(_ title: S, text: Binding<String>) where S: StringProtocol {
        self.text = text
        self.label = Text(title)
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension TextField: View {
    public typealias Body = Never
}

/// STAND-IN: the ProgressView type page was not looked up; its generic parameters are
/// the ones EmptyView's page names (`ProgressView<Label, CurrentValueLabel>`).
@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
public struct ProgressView<Label, CurrentValueLabel> {
    private let label: Label?
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension ProgressView where CurrentValueLabel == EmptyView {
    // /documentation/SwiftUI/ProgressView/init()
    /// Creates a progress view for showing indeterminate progress, without a label.
    nonisolated public init() where Label == EmptyView { label = nil }

    // /documentation/SwiftUI/ProgressView/init(_:)-3q5nf
    /// Creates a progress view for showing indeterminate progress that generates its
    /// label from a string.
    nonisolated public init<S>(_ title: S) where Label == Text, S: StringProtocol { label = Text(title) }
}

@available(iOS 14.0, macOS 11.0, tvOS 14.0, watchOS 7.0, visionOS 1.0, *)
extension ProgressView: View where Label: View, CurrentValueLabel: View {
    public typealias Body = Never
}

// /documentation/SwiftUI/Spacer (iOS 13.0+, macOS 10.15+, tvOS 13.0+, watchOS 6.0+, visionOS 1.0+)
/// A flexible space that expands along the major axis of its containing stack layout, or
/// on both axes if not contained in a stack.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct Spacer {
    // /documentation/SwiftUI/Spacer/minLength
    /// The minimum length this spacer can be shrunk to, along the axis or axes of expansion.
    public var minLength: CGFloat?

    // /documentation/SwiftUI/Spacer/init(minLength:)
    public init(minLength: CGFloat? = nil) { self.minLength = minLength }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension Spacer: View {
    public typealias Body = Never
}

/// STAND-IN: the alignment types' pages were not looked up. Each is declared with the one
/// member the stacks' and `overlay`'s default arguments use (`.center`).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct HorizontalAlignment: Equatable {
    private let name: String
    public static let center = HorizontalAlignment(name: "center")
}

/// STAND-IN: see HorizontalAlignment.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct VerticalAlignment: Equatable {
    private let name: String
    public static let center = VerticalAlignment(name: "center")
}

/// STAND-IN: see HorizontalAlignment.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct Alignment: Equatable {
    public var horizontal: HorizontalAlignment
    public var vertical: VerticalAlignment
    public static let center = Alignment(horizontal: .center, vertical: .center)
}

/// STAND-IN: the VStack type page was not looked up; `VStack<Content> where Content : View`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct VStack<Content> where Content: View {
    private let content: Content

    // /documentation/SwiftUI/VStack/init(alignment:spacing:content:)
    /// Creates an instance with the given spacing and horizontal alignment.
    nonisolated public init(
        alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, @ContentBuilder content: () -> Content
    ) {
        self.content = content()
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension VStack: View {
    public typealias Body = Never
}

/// STAND-IN: neither the HStack type page nor its initializer's came up; declared as
/// VStack's (/documentation/SwiftUI/VStack/init(alignment:spacing:content:)) with the
/// vertical alignment HStackLayout's `init(alignment:spacing:)` takes (`VerticalAlignment
/// = .center`, as onestack.dev transcribes it from SDK 27.1).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
@frozen public struct HStack<Content> where Content: View {
    private let content: Content

    nonisolated public init(
        alignment: VerticalAlignment = .center, spacing: CGFloat? = nil, @ContentBuilder content: () -> Content
    ) {
        self.content = content()
    }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, visionOS 1.0, *)
extension HStack: View {
    public typealias Body = Never
}
