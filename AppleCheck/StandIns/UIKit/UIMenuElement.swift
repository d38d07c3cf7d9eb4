import Foundation

// /documentation/UIKit/UIMenuElement (iOS 13.0+)
/// An object representing a menu, action, or command.
@available(iOS 13.0, *)
@MainActor
open class UIMenuElement: NSObject {
    var storedTitle: String
    var storedImage: UIImage?

    init(title: String, image: UIImage?) {
        storedTitle = title
        storedImage = image
        super.init()
    }

    // /documentation/UIKit/UIMenuElement/title (iOS 13.0+)
    /// The element's title.
    /// `var title: String { get }` (read-only here; UIAction redeclares it settable: audit fix).
    open var title: String { storedTitle }

    // /documentation/UIKit/UIMenuElement/image (iOS 13.0+)
    /// The element's image.
    /// `var image: UIImage? { get }` (read-only here; UIAction redeclares it settable: audit fix).
    open var image: UIImage? { storedImage }
}

@available(iOS 13.0, *)
extension UIMenuElement {
    // /documentation/UIKit/UIMenuElement/Attributes (iOS 13.0+)
    /// Attributes that determine the style of the menu element.
    public struct Attributes: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        // /documentation/UIKit/UIMenuElement/Attributes/disabled
        public static let disabled = Attributes(rawValue: 1 << 0)
        // /documentation/UIKit/UIMenuElement/Attributes/destructive
        public static let destructive = Attributes(rawValue: 1 << 1)
        // /documentation/UIKit/UIMenuElement/Attributes/hidden
        public static let hidden = Attributes(rawValue: 1 << 2)
        // /documentation/UIKit/UIMenuElement/Attributes/keepsMenuPresented (iOS 16.0+)
        @available(iOS 16.0, *)
        public static let keepsMenuPresented = Attributes(rawValue: 1 << 3)
    }

    // /documentation/UIKit/UIMenuElement/State (iOS 13.0+)
    /// Constants that indicate the state of an action- or command-based menu element.
    public enum State: Int, Sendable {
        case off = 0
        case on = 1
        case mixed = 2
    }
}

// /documentation/UIKit/UIActionHandler (iOS 13.0+)
/// A type that defines the closure for an action handler.
@available(iOS 13.0, *)
public typealias UIActionHandler = (UIAction) -> Void

// /documentation/UIKit/UIAction (iOS 13.0+)
/// A menu element that performs its action in a closure.
@available(iOS 13.0, *)
@MainActor
open class UIAction: UIMenuElement {
    let handler: UIActionHandler
    private var currentSender: Any?

    // /documentation/UIKit/UIAction/init(title:image:identifier:discoverabilityTitle:attributes:state:handler:) (iOS 13.0+)
    /// Creates an action with the specified title, image, identifier, discoverability title,
    /// attributes, state, and handler.
    @MainActor @preconcurrency
    public convenience init(
        title: String = "", image: UIImage? = nil, identifier: UIAction.Identifier? = nil,
        discoverabilityTitle: String? = nil, attributes: UIMenuElement.Attributes = [],
        state: UIMenuElement.State = .off, handler: @escaping UIActionHandler
    ) {
        self.init(
            storedTitle: title, image: image, identifier: identifier, discoverabilityTitle: discoverabilityTitle,
            attributes: attributes, state: state, handler: handler)
    }

    init(
        storedTitle: String, image: UIImage?, identifier: UIAction.Identifier?, discoverabilityTitle: String?,
        attributes: UIMenuElement.Attributes, state: UIMenuElement.State, handler: @escaping UIActionHandler
    ) {
        self.storedIdentifier = identifier ?? UIAction.Identifier(rawValue: UUID().uuidString)
        self.discoverabilityTitle = discoverabilityTitle
        self.attributes = attributes
        self.state = state
        self.handler = handler
        super.init(title: storedTitle, image: image)
    }

    // /documentation/UIKit/UIAction/title (iOS 13.0+)
    /// `var title: String { get set }`.
    open override var title: String {
        get { storedTitle }
        set { storedTitle = newValue }
    }

    // /documentation/UIKit/UIAction/image (iOS 13.0+)
    /// `var image: UIImage? { get set }`.
    open override var image: UIImage? {
        get { storedImage }
        set { storedImage = newValue }
    }

    // /documentation/UIKit/UIAction/identifier (iOS 13.0+)
    /// The unique identifier for the action. (`{ get }`, not a `let`: audit fix.)
    open var identifier: UIAction.Identifier { storedIdentifier }
    private let storedIdentifier: UIAction.Identifier

    // /documentation/UIKit/UIAction/discoverabilityTitle (iOS 13.0+)
    open var discoverabilityTitle: String?

    // /documentation/UIKit/UIAction/attributes (iOS 13.0+)
    /// The attributes indicating the style of the action.
    open var attributes: UIMenuElement.Attributes

    // /documentation/UIKit/UIAction/state (iOS 13.0+)
    /// The state of the action.
    open var state: UIMenuElement.State

    // /documentation/UIKit/UIAction/sender (iOS 14.0+)
    /// The object responsible for the action handler, if any.
    @available(iOS 14.0, *)
    open var sender: Any? { currentSender }

    /// Runs the handler with `sender` (as UIKit does when the control or item fires).
    func perform(sender: Any?) {
        currentSender = sender
        defer { currentSender = nil }
        handler(self)
    }
}

@available(iOS 13.0, *)
extension UIAction {
    // /documentation/UIKit/UIAction/Identifier (iOS 13.0+)
    /// A type that represents an action identifier.
    public struct Identifier: Hashable, Equatable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
    }

    /// Runs the action's handler as a tap on its item or control would.
    @_spi(Simulation) public func simulatePerform(sender: Any? = nil) {
        perform(sender: sender)
    }
}

// /documentation/UIKit/UIMenu (iOS 13.0+)
/// A container for grouping related menu elements in an app menu or contextual menu.
@available(iOS 13.0, *)
@MainActor
open class UIMenu: UIMenuElement {
    // /documentation/UIKit/UIMenu/init(title:image:identifier:options:children:) (iOS 13.0+)
    /// Creates a new menu with the specified values.
    @MainActor @preconcurrency
    public convenience init(
        title: String = "", image: UIImage? = nil, identifier: UIMenu.Identifier? = nil, options: UIMenu.Options = [],
        children: [UIMenuElement] = []
    ) {
        self.init(storedTitle: title, image: image, identifier: identifier, options: options, children: children)
    }

    init(
        storedTitle: String, image: UIImage?, identifier: UIMenu.Identifier?, options: UIMenu.Options,
        children: [UIMenuElement]
    ) {
        self.storedIdentifier = identifier ?? UIMenu.Identifier(rawValue: UUID().uuidString)
        self.storedOptions = options
        self.storedChildren = children
        super.init(title: storedTitle, image: image)
    }

    // /documentation/UIKit/UIMenu/identifier (iOS 13.0+)
    open var identifier: UIMenu.Identifier { storedIdentifier }
    private let storedIdentifier: UIMenu.Identifier
    // /documentation/UIKit/UIMenu/options (iOS 13.0+)
    open var options: UIMenu.Options { storedOptions }
    private let storedOptions: UIMenu.Options
    // /documentation/UIKit/UIMenu/children (iOS 13.0+)
    open var children: [UIMenuElement] { storedChildren }
    private let storedChildren: [UIMenuElement]
}

@available(iOS 13.0, *)
extension UIMenu {
    // /documentation/UIKit/UIMenu/Identifier (iOS 13.0+)
    public struct Identifier: Hashable, Equatable, RawRepresentable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
    }

    // /documentation/UIKit/UIMenu/Options (iOS 13.0+)
    public struct Options: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        // /documentation/UIKit/UIMenu/Options/displayInline
        public static let displayInline = Options(rawValue: 1 << 0)
        // /documentation/UIKit/UIMenu/Options/destructive
        public static let destructive = Options(rawValue: 1 << 1)
        // /documentation/UIKit/UIMenu/Options/singleSelection (iOS 15.0+)
        @available(iOS 15.0, *)
        public static let singleSelection = Options(rawValue: 1 << 5)
    }
}
