import Foundation

// /documentation/UIKit/UIControl (iOS 2.0+)
/// The base class for controls, which are visual elements that convey a specific action
/// or intention in response to user interactions.
@MainActor
open class UIControl: UIView {
    private var actions: [(action: UIAction, events: UIControl.Event)] = []

    // /documentation/UIKit/UIControl/isEnabled (iOS 2.0+)
    open var isEnabled: Bool = true
    // /documentation/UIKit/UIControl/isSelected (iOS 2.0+)
    open var isSelected: Bool = false
    // /documentation/UIKit/UIControl/isHighlighted (iOS 2.0+)
    open var isHighlighted: Bool = false

    // /documentation/UIKit/UIControl/addAction(_:for:) (iOS 14.0+)
    @available(iOS 14.0, *)
    open func addAction(_ action: UIAction, for controlEvents: UIControl.Event) {
        actions.append((action, controlEvents))
    }

    // /documentation/UIKit/UIControl/removeAction(_:for:) (iOS 14.0+)
    @available(iOS 14.0, *)
    open func removeAction(_ action: UIAction, for controlEvents: UIControl.Event) {
        actions.removeAll { $0.action === action && $0.events == controlEvents }
    }

    // /documentation/UIKit/UIControl/sendActions(for:) (iOS 2.0+)
    open func sendActions(for controlEvents: UIControl.Event) {
        for entry in actions where !entry.events.isDisjoint(with: controlEvents) {
            entry.action.perform(sender: self)
        }
    }
}

extension UIControl {
    // /documentation/UIKit/UIControl/Event (iOS 2.0+)
    /// Constants describing the types of events possible for controls.
    public struct Event: OptionSet, Hashable, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        // /documentation/UIKit/UIControl/Event/touchDown
        public static let touchDown = Event(rawValue: 1 << 0)
        // /documentation/UIKit/UIControl/Event/touchUpInside
        public static let touchUpInside = Event(rawValue: 1 << 6)
        // /documentation/UIKit/UIControl/Event/valueChanged
        public static let valueChanged = Event(rawValue: 1 << 12)
        // /documentation/UIKit/UIControl/Event/primaryActionTriggered (iOS 9.0+)
        public static let primaryActionTriggered = Event(rawValue: 1 << 13)
        // /documentation/UIKit/UIControl/Event/editingDidBegin
        public static let editingDidBegin = Event(rawValue: 1 << 16)
        // /documentation/UIKit/UIControl/Event/editingChanged
        public static let editingChanged = Event(rawValue: 1 << 17)
        // /documentation/UIKit/UIControl/Event/editingDidEnd
        public static let editingDidEnd = Event(rawValue: 1 << 18)
    }
}
