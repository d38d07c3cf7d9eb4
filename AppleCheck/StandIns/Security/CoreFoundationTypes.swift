import Foundation

// CoreFoundation types, as Security's API hands them out. On Apple platforms they are CF
// classes, toll-free bridged to Foundation's; Swift bridges `String as CFString`,
// `cfData as Data`, `cfArray as? [SecCertificate]` through that. Linux has no
// CoreFoundation module for apps, and `as` cannot bridge to a type of ours, so each is a
// typealias of the Foundation class it is toll-free bridged to, which swift-corelibs-
// foundation bridges the same way (`String as NSString`, `NSData as Data`,
// `NSArray as? [T]` all compile and work here).

/// /documentation/CoreFoundation/CFString
// STAND-IN: a typealias of NSString (its toll-free bridged class), not a distinct CF type.
public typealias CFString = NSString

/// /documentation/CoreFoundation/CFData
// STAND-IN: a typealias of NSData (toll-free bridged), not a distinct CF type.
public typealias CFData = NSData

/// /documentation/CoreFoundation/CFArray
// STAND-IN: a typealias of NSArray (toll-free bridged), not a distinct CF type.
public typealias CFArray = NSArray

/// /documentation/CoreFoundation/CFError
// STAND-IN: a typealias of NSError (toll-free bridged), not a distinct CF type.
public typealias CFError = NSError

/// /documentation/CoreFoundation/CFTypeRef
// STAND-IN: `AnyObject`, as Swift imports `CFTypeRef` on Apple platforms.
public typealias CFTypeRef = AnyObject

/// /documentation/CoreFoundation/CFAllocator
// STAND-IN: an empty class; the stand-in never allocates through it (pass nil).
public final class CFAllocator {}

/// /documentation/Kernel/OSStatus
// STAND-IN: declared here (Apple: MacTypes, re-exported by Security). `Int32`, as Apple's
// NWError.tls(_:) symbol (`s5Int32V`) shows.
public typealias OSStatus = Int32

// Result codes (/documentation/Security/security-framework-result-codes), values from
// Apple's open-source Security headers (SecBase.h). Imported by Swift as `var … { get }`.

/// /documentation/Security/errSecSuccess
@_alwaysEmitIntoClient public var errSecSuccess: OSStatus { 0 }
/// /documentation/Security/errSecUnimplemented
@_alwaysEmitIntoClient public var errSecUnimplemented: OSStatus { -4 }
/// /documentation/Security/errSecParam
@_alwaysEmitIntoClient public var errSecParam: OSStatus { -50 }
/// /documentation/Security/errSecNotTrusted
@_alwaysEmitIntoClient public var errSecNotTrusted: OSStatus { -67843 }
