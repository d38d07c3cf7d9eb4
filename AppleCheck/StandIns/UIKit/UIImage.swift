import Foundation

// /documentation/UIKit/UIImage (iOS 2.0+)
/// An object that manages image data in your app.
///
/// STAND-IN: holds only the name it was created with; no pixels. Sendable is `@unchecked`.
open class UIImage: NSObject, @unchecked Sendable {
    /// The SF Symbol or asset name the image was created with.
    let name: String

    init(name: String) {
        self.name = name
        super.init()
    }

    // /documentation/UIKit/UIImage/init(systemName:) (iOS 13.0+)
    /// Creates an image object that contains a system symbol image.
    @available(iOS 13.0, *)
    public convenience init?(systemName name: String) {
        guard !name.isEmpty else { return nil }
        self.init(name: name)
    }

    // /documentation/UIKit/UIImage/init(named:) (iOS 2.0+)
    public convenience init?(named name: String) {
        guard !name.isEmpty else { return nil }
        self.init(name: name)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        (object as? UIImage)?.name == name
    }
}
