import Foundation

// /documentation/UIKit/UIResponder (iOS 2.0+)
/// An abstract interface for responding to and handling events.
@MainActor
open class UIResponder: NSObject {
    // /documentation/UIKit/UIResponder/init() — NSObject's initializer.
    public override init() {
        super.init()
    }

    // /documentation/UIKit/UIResponder/next (iOS 2.0+)
    /// Returns the next responder in the responder chain, or nil if there is no next responder.
    open var next: UIResponder? { nil }

    // /documentation/UIKit/UIResponder/canBecomeFirstResponder (iOS 3.0+)
    open var canBecomeFirstResponder: Bool { false }

    // /documentation/UIKit/UIResponder/becomeFirstResponder() (iOS 2.0+)
    @discardableResult
    open func becomeFirstResponder() -> Bool { canBecomeFirstResponder }

    // /documentation/UIKit/UIResponder/resignFirstResponder() (iOS 2.0+)
    @discardableResult
    open func resignFirstResponder() -> Bool { true }

    // /documentation/UIKit/UIResponder/isFirstResponder (iOS 2.0+)
    open var isFirstResponder: Bool { false }
}
