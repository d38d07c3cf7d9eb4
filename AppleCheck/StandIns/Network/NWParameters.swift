import Foundation
import Security

/// /documentation/Network/NWProtocol
// STAND-IN: page not retrieved; the base class NWProtocolTLS and NWProtocolTCP inherit
// from, per their pages. Empty.
public class NWProtocol {
    init() {}
}

/// /documentation/Network/NWProtocolOptions
// STAND-IN: page not retrieved; the base class of the protocol options, per their pages. Empty.
public class NWProtocolOptions {
    init() {}
}

/// /documentation/Network/NWProtocolTLS — a class inheriting from NWProtocol.
// STAND-IN: its `definition` and `Metadata` are not declared.
public class NWProtocolTLS: NWProtocol {
    /// /documentation/Network/NWProtocolTLS/Options — `class Options` (Sendable; inherits
    /// NWProtocolOptions), iOS 12.0+, macOS 10.14+
    public class Options: NWProtocolOptions, @unchecked Sendable {
        /// /documentation/Network/NWProtocolTLS/Options/securityProtocolOptions —
        /// `var securityProtocolOptions: sec_protocol_options_t { get }`
        public let securityProtocolOptions: sec_protocol_options_t

        /// /documentation/Network/NWProtocolTLS/Options/init() — `init()`
        public override init() {
            securityProtocolOptions = SecurityStandIn.makeProtocolOptions()
            super.init()
        }
    }
}

/// /documentation/Network/NWProtocolTCP — `class NWProtocolTCP` (Sendable; inherits NWProtocol)
// STAND-IN: `definition` and `Metadata` not declared; no TCP option is modelled (the
// stand-in always sets TCP_NODELAY, as the project's other transports do).
public class NWProtocolTCP: NWProtocol, @unchecked Sendable {
    /// /documentation/Network/NWProtocolTCP/Options
    public class Options: NWProtocolOptions, @unchecked Sendable {
        /// /documentation/Network/NWProtocolTCP/Options/init() — `init()`
        public override init() { super.init() }
    }
}

/// /documentation/Network/NWParameters — `final class NWParameters`, iOS 12.0+, macOS 10.14+
public final class NWParameters {
    /// The TLS options when the parameters use TLS (the stand-in refuses to connect then).
    let tls: NWProtocolTLS.Options?
    let tcp: NWProtocolTCP.Options

    // STAND-IN: `init()` — Apple's NWParameters has one (a parameters object with no
    // protocols); not looked up, internal here.
    init(tlsOptions: NWProtocolTLS.Options?, tcpOptions: NWProtocolTCP.Options) {
        tls = tlsOptions
        tcp = tcpOptions
    }

    /// /documentation/Network/NWParameters/init(tls:tcp:) —
    /// `convenience init(tls: NWProtocolTLS.Options?, tcp: NWProtocolTCP.Options = NWProtocolTCP.Options())`
    public convenience init(tls: NWProtocolTLS.Options?, tcp: NWProtocolTCP.Options = NWProtocolTCP.Options()) {
        self.init(tlsOptions: tls, tcpOptions: tcp)
    }

    /// /documentation/Network/NWParameters/tcp
    // STAND-IN: the declaration page was not retrievable; spelled as its sibling
    // /documentation/Network/NWParameters/tls (`final class var tls: NWParameters { get }`),
    // and used as `NWParameters.tcp` / `.tcp` in public code.
    public final class var tcp: NWParameters { NWParameters(tlsOptions: nil, tcpOptions: NWProtocolTCP.Options()) }

    /// /documentation/Network/NWParameters/tls — `final class var tls: NWParameters { get }`
    public final class var tls: NWParameters {
        NWParameters(tlsOptions: NWProtocolTLS.Options(), tcpOptions: NWProtocolTCP.Options())
    }
}
