import Dispatch
import Foundation

/// Test hooks of the Security stand-in. NOT Apple API: Apple's sec_protocol_options_t has
/// no getters. They let a test see what the project configured and run its verify block as
/// Network would, against test data.
public enum SecurityStandIn {
    /// A `sec_protocol_options_t` the stand-in made (Network's NWProtocolTLS.Options uses it).
    public static func makeProtocolOptions() -> sec_protocol_options_t { SecProtocolOptionsStorage() }

    /// The minimum TLS version set on `options`, if any.
    public static func minimumTLSVersion(of options: sec_protocol_options_t) -> tls_protocol_version_t? {
        (options as? SecProtocolOptionsStorage)?.minimumTLSVersion
    }

    /// The TLS server name set on `options`, if any.
    public static func serverName(of options: sec_protocol_options_t) -> String? {
        (options as? SecProtocolOptionsStorage)?.serverName
    }

    /// The ALPN names added to `options`, in order.
    public static func applicationProtocols(of options: sec_protocol_options_t) -> [String] {
        (options as? SecProtocolOptionsStorage)?.applicationProtocols ?? []
    }

    /// The verify block and its queue set on `options`, if any.
    public static func verifyBlock(
        of options: sec_protocol_options_t
    ) -> (block: sec_protocol_verify_t, queue: DispatchQueue)? {
        (options as? SecProtocolOptionsStorage)?.verify
    }

    /// The anchors set on `trust` (SecTrustSetAnchorCertificates, as DER) and whether
    /// only they are trusted (SecTrustSetAnchorCertificatesOnly).
    public static func anchors(of trust: SecTrust) -> (certificates: [Data]?, only: Bool) {
        (trust.anchorCertificates?.map(\.der), trust.anchorCertificatesOnly)
    }

    /// A `sec_protocol_metadata_t` carrying nothing, for calling a verify block.
    public static func makeMetadata() -> sec_protocol_metadata_t { SecProtocolMetadataStorage() }
}
