import Dispatch
import Foundation

// The os_object side of Security (SecProtocolTypes.h, SecProtocolOptions.h): ARC-able
// wrappers that Network hands to a TLS verify block. On Apple platforms each `sec_*_t` is
// an existential of an Objective-C protocol refining NSObjectProtocol; Foundation's
// NSObjectProtocol exists on Linux, so the declarations are Apple's as written. The C type
// names are Apple's too, so swift-format's capitalization rule is switched off for each.

/// /documentation/Security/OS_sec_object — `protocol OS_sec_object : NSObjectProtocol`
public protocol OS_sec_object: NSObjectProtocol {}

/// /documentation/Security/OS_sec_trust — `protocol OS_sec_trust : NSObjectProtocol`
public protocol OS_sec_trust: NSObjectProtocol {}
/// /documentation/Security/sec_trust_t — `typealias sec_trust_t = any OS_sec_trust`
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias sec_trust_t = any OS_sec_trust

/// /documentation/Security/OS_sec_protocol_options — `protocol OS_sec_protocol_options : NSObjectProtocol`
public protocol OS_sec_protocol_options: NSObjectProtocol {}
/// /documentation/Security/sec_protocol_options_t — `typealias sec_protocol_options_t = any OS_sec_protocol_options`
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias sec_protocol_options_t = any OS_sec_protocol_options

/// /documentation/Security/OS_sec_protocol_metadata
// STAND-IN: page not retrieved; declared as its siblings above (Network's
// `securityProtocolMetadata` symbol names the type `OS_sec_protocol_metadata` existential).
public protocol OS_sec_protocol_metadata: NSObjectProtocol {}
/// /documentation/Security/sec_protocol_metadata_t
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias sec_protocol_metadata_t = any OS_sec_protocol_metadata

/// /documentation/Security/sec_protocol_verify_complete_t — `typealias sec_protocol_verify_complete_t = (Bool) -> Void`
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias sec_protocol_verify_complete_t = (Bool) -> Void
/// /documentation/Security/sec_protocol_verify_t —
/// `typealias sec_protocol_verify_t = (sec_protocol_metadata_t, sec_trust_t, @escaping sec_protocol_verify_complete_t) -> Void`
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias sec_protocol_verify_t = (
    sec_protocol_metadata_t, sec_trust_t, @escaping sec_protocol_verify_complete_t
) -> Void

/// /documentation/Security/tls_protocol_version_t — `enum tls_protocol_version_t`
/// (RawRepresentable, Equatable), iOS 13.0+, macOS 10.15+. Raw values are the TLS wire
/// versions (SecProtocolTypes.h: `tls_protocol_version_TLSv12 = 0x0303`, …).
// STAND-IN: raw type UInt16 as in the C enum (`typedef CF_ENUM(uint16_t, …)`).
// swift-format-ignore: TypeNamesShouldBeCapitalized
public enum tls_protocol_version_t: UInt16, Sendable {
    /// /documentation/Security/tls_protocol_version_t/TLSv10
    case TLSv10 = 0x0301
    /// /documentation/Security/tls_protocol_version_t/TLSv11
    case TLSv11 = 0x0302
    /// /documentation/Security/tls_protocol_version_t/TLSv12
    case TLSv12 = 0x0303
    /// /documentation/Security/tls_protocol_version_t/TLSv13
    case TLSv13 = 0x0304
    /// /documentation/Security/tls_protocol_version_t/DTLSv10
    case DTLSv10 = 0xfeff
    /// /documentation/Security/tls_protocol_version_t/DTLSv12
    case DTLSv12 = 0xfefd
}

/// The stand-in's `sec_protocol_options_t`: records what was set, for Network and for the
/// tests (StandInHooks.swift). Not Apple API.
final class SecProtocolOptionsStorage: NSObject, OS_sec_protocol_options, @unchecked Sendable {
    private let lock = NSLock()
    private var _minimumTLSVersion: tls_protocol_version_t?
    private var _serverName: String?
    private var _verify: (block: sec_protocol_verify_t, queue: DispatchQueue)?
    private var _applicationProtocols: [String] = []

    var minimumTLSVersion: tls_protocol_version_t? {
        get { lock.withLock { _minimumTLSVersion } }
        set { lock.withLock { _minimumTLSVersion = newValue } }
    }
    var serverName: String? {
        get { lock.withLock { _serverName } }
        set { lock.withLock { _serverName = newValue } }
    }
    var verify: (block: sec_protocol_verify_t, queue: DispatchQueue)? {
        get { lock.withLock { _verify } }
        set { lock.withLock { _verify = newValue } }
    }
    /// ALPN names added, in order.
    var applicationProtocols: [String] {
        get { lock.withLock { _applicationProtocols } }
        set { lock.withLock { _applicationProtocols = newValue } }
    }
}

/// The stand-in's `sec_trust_t`: wraps a SecTrust. Not Apple API.
final class SecTrustWrapper: NSObject, OS_sec_trust, @unchecked Sendable {
    let trust: SecTrust
    init(_ trust: SecTrust) { self.trust = trust }
}

/// The stand-in's `sec_protocol_metadata_t` (carries nothing). Not Apple API.
final class SecProtocolMetadataStorage: NSObject, OS_sec_protocol_metadata, @unchecked Sendable {}

/// /documentation/Security/sec_protocol_options_set_min_tls_protocol_version(_:_:) — iOS 13.0+, macOS 10.15+
public func sec_protocol_options_set_min_tls_protocol_version(
    _ options: sec_protocol_options_t, _ version: tls_protocol_version_t
) {
    (options as? SecProtocolOptionsStorage)?.minimumTLSVersion = version
}

/// /documentation/Security/sec_protocol_options_set_tls_server_name(_:_:) — iOS 12.0+, macOS 10.14+
public func sec_protocol_options_set_tls_server_name(
    _ options: sec_protocol_options_t, _ server_name: UnsafePointer<CChar>
) {
    (options as? SecProtocolOptionsStorage)?.serverName = String(cString: server_name)
}

/// /documentation/Security/sec_protocol_options_add_tls_application_protocol(_:_:) — iOS 12.0+, macOS 10.14+
/// ("Add an application protocol supported by clients of this protocol instance.")
public func sec_protocol_options_add_tls_application_protocol(
    _ options: sec_protocol_options_t, _ application_protocol: UnsafePointer<CChar>
) {
    (options as? SecProtocolOptionsStorage)?.applicationProtocols.append(String(cString: application_protocol))
}

/// /documentation/Security/sec_protocol_options_set_verify_block(_:_:_:) — iOS 12.0+, macOS 10.14+
// STAND-IN: `dispatch_queue_t` is spelled `DispatchQueue`, as Swift imports it on Apple platforms.
public func sec_protocol_options_set_verify_block(
    _ options: sec_protocol_options_t, _ verify_block: @escaping sec_protocol_verify_t,
    _ verify_block_queue: DispatchQueue
) {
    (options as? SecProtocolOptionsStorage)?.verify = (verify_block, verify_block_queue)
}

/// /documentation/Security/sec_trust_create(_:) — iOS 12.0+, macOS 10.14+
public func sec_trust_create(_ trust: SecTrust) -> sec_trust_t? {
    SecTrustWrapper(trust)
}

/// sec_trust_copy_ref (no Swift declaration page was found; the Objective-C page is
/// /documentation/Security/sec_trust_copy_ref, iOS 12.0+, macOS 10.14+).
// STAND-IN: declared from the C header (SecProtocolTypes.h: `SecTrustRef
// sec_trust_copy_ref(sec_trust_t trust);`, "Copy a retained reference", with no
// CF_RETURNS_RETAINED and outside a CF-audited region), which Swift imports as
// `Unmanaged<SecTrust>`: the caller balances the copy with `takeRetainedValue()`.
public func sec_trust_copy_ref(_ trust: sec_trust_t) -> Unmanaged<SecTrust> {
    guard let wrapper = trust as? SecTrustWrapper else {
        preconditionFailure("sec_trust_copy_ref: not a sec_trust_t made by sec_trust_create")
    }
    return Unmanaged.passRetained(wrapper.trust)
}
