import Foundation

// UIKit's own additions to IndexPath (Foundation on Linux has only init(indexes:)).
extension IndexPath {
    // /documentation/Foundation/IndexPath/init(row:section:) (iOS 7.0+ on its page, UIKit)
    /// Initializes an index path with the indexes of a specific row and section in a table view.
    public init(row: Int, section: Int) {
        self.init(indexes: [section, row])
    }

    // /documentation/Foundation/IndexPath/init(item:section:) (iOS 6.0+, UIKit)
    /// Initializes an index path with the indexes of a specific item and section in a collection view.
    public init(item: Int, section: Int) {
        self.init(indexes: [section, item])
    }

    // /documentation/Foundation/IndexPath/section (iOS 2.0+, UIKit)
    /// The section of this index path, when used with a table or collection view.
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }

    // /documentation/Foundation/IndexPath/row (iOS 2.0+, UIKit)
    /// The row of this index path, when used with a table view.
    public var row: Int {
        get { self[1] }
        set { self[1] = newValue }
    }

    // /documentation/Foundation/IndexPath/item (iOS 6.0+, UIKit)
    /// The item of this index path, when used with a collection view.
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
}
