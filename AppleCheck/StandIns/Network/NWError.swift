import Foundation
import Security

/// /documentation/Network/NWError — `enum NWError`, iOS 12.0+, macOS 10.14+.
/// Conforms (per the page) to Equatable, CustomNSError, CustomDebugStringConvertible,
/// Sendable, Error.
public enum NWError: Error, Equatable, CustomNSError, CustomDebugStringConvertible, Sendable {
    /// /documentation/Network/NWError/posix(_:) — `case posix(POSIXErrorCode)`
    // STAND-IN: POSIXErrorCode is Glibc's, so codes carry Linux numbering (ECONNREFUSED is
    // 111 here, 61 on Darwin); compare cases, never raw numbers.
    case posix(POSIXErrorCode)
    /// /documentation/Network/NWError/dns(_:) — `case dns(DNSServiceErrorType)`
    case dns(DNSServiceErrorType)
    /// /documentation/Network/NWError/tls(_:) — `case tls(OSStatus)`
    case tls(OSStatus)

    public var debugDescription: String {
        switch self {
        case .posix(let code):
            return "POSIXErrorCode(rawValue: \(code.rawValue)): \(String(cString: strerror(code.rawValue)))"
        case .dns(let code): return "DNSServiceErrorType(\(code))"
        case .tls(let status): return "OSStatus(\(status))"
        }
    }
}

/// DNSServiceErrorType (dns_sd.h: `typedef int32_t DNSServiceErrorType`); Apple's
/// NWError.dns(_:) symbol shows it as `Int32`.
// STAND-IN: declared here; on Apple platforms it comes from the dnssd module.
public typealias DNSServiceErrorType = Int32

/// dns_sd.h `kDNSServiceErr_NoSuchRecord`: what the stand-in reports for a name that does
/// not resolve (getaddrinfo's EAI_NONAME/EAI_NODATA). Not Apple API by this spelling.
let standInNoSuchRecord: DNSServiceErrorType = -65554
/// dns_sd.h `kDNSServiceErr_Unknown`: any other resolver failure.
let standInDNSUnknown: DNSServiceErrorType = -65537
