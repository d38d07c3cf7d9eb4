import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// /documentation/Network/NWEndpoint — `enum NWEndpoint`, iOS 12.0+, macOS 10.14+
// STAND-IN: only `hostPort`; `service`, `unix` and `url` are not declared (nothing uses them).
public enum NWEndpoint {
    /// /documentation/Network/NWEndpoint/hostPort(host:port:) — `case hostPort(host: NWEndpoint.Host, port: NWEndpoint.Port)`
    case hostPort(host: NWEndpoint.Host, port: NWEndpoint.Port)

    /// /documentation/Network/NWEndpoint/Host — `enum Host`, iOS 12.0+, macOS 10.14+
    public enum Host: CustomDebugStringConvertible {
        /// /documentation/Network/NWEndpoint/Host/name(_:_:) — `case name(String, NWInterface?)`
        case name(String, NWInterface?)
        /// /documentation/Network/NWEndpoint/Host/ipv4(_:) — `case ipv4(IPv4Address)`
        case ipv4(IPv4Address)
        /// /documentation/Network/NWEndpoint/Host/ipv6(_:) — `case ipv6(IPv6Address)`
        case ipv6(IPv6Address)

        /// /documentation/Network/NWEndpoint/Host/init(_:) — `init(_ string: String)`.
        /// An IPv4 or IPv6 literal becomes `.ipv4`/`.ipv6`, anything else `.name`.
        public init(_ string: String) {
            if let v4 = IPv4Address(string) {
                self = .ipv4(v4)
            } else if let v6 = IPv6Address(string) {
                self = .ipv6(v6)
            } else {
                self = .name(string, nil)
            }
        }

        public var debugDescription: String { text }

        /// The text to resolve (a name or an address literal). Not Apple API.
        var text: String {
            switch self {
            case .name(let name, _): return name
            case .ipv4(let address): return address.text
            case .ipv6(let address): return address.text
            }
        }
    }

    /// /documentation/Network/NWEndpoint/Port — `struct Port`, iOS 12.0+, macOS 10.14+
    public struct Port: RawRepresentable, ExpressibleByIntegerLiteral, CustomDebugStringConvertible {
        // STAND-IN: RawRepresentable with UInt16 — no declaration page was found for
        // `init?(rawValue:)`/`rawValue`; public code calls `NWEndpoint.Port(rawValue: UInt16)`
        // as a failable initializer (checked in the code index). The stand-in never fails.
        public let rawValue: UInt16
        public init?(rawValue: UInt16) { self.rawValue = rawValue }

        /// /documentation/Network/NWEndpoint/Port/init(_:) — `init?(_ service: String)`:
        /// "numeric values between 0 and 65535. Initializing with any other string will fail."
        public init?(_ service: String) {
            guard let value = UInt16(service) else { return nil }
            rawValue = value
        }

        /// `init(integerLiteral value: NWEndpoint.Port.IntegerLiteralType)` (a Port member; page
        /// path /documentation/Network/NWEndpoint/Port/init(integerLiteral:)).
        public init(integerLiteral value: UInt16) { rawValue = value }

        /// /documentation/Network/NWEndpoint/Port/any — `static let any: NWEndpoint.Port` (port 0)
        // STAND-IN: `nonisolated(unsafe)` — Port declares no Sendable conformance here.
        nonisolated(unsafe) public static let any: NWEndpoint.Port = 0

        public var debugDescription: String { String(rawValue) }
    }
}

/// /documentation/Network/NWInterface
// STAND-IN: an empty struct; only named as `Host.name`'s payload type.
public struct NWInterface {}

/// /documentation/Network/IPv4Address
// STAND-IN: only `init?(_:)` (parsed with inet_pton) and what the stand-in needs.
public struct IPv4Address {
    let text: String
    public init?(_ string: String) {
        var address = in_addr()
        guard inet_pton(AF_INET, string, &address) == 1 else { return nil }
        text = string
    }
}

/// /documentation/Network/IPv6Address
// STAND-IN: only `init?(_:)` (parsed with inet_pton, brackets and zone accepted) and what
// the stand-in needs.
public struct IPv6Address {
    let text: String
    public init?(_ string: String) {
        var literal = string
        if literal.hasPrefix("[") && literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        let bare = literal.split(separator: "%", maxSplits: 1).first.map(String.init) ?? literal
        var address = in6_addr()
        guard inet_pton(AF_INET6, bare, &address) == 1 else { return nil }
        text = literal
    }
}
