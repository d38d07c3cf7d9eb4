import Foundation

/// /documentation/Security/SecCertificate
// STAND-IN: holds the DER bytes it was created from. The page was not retrieved; declared
// as the SecTrust page shows its sibling (`class SecTrust`, Equatable, Hashable): CF types
// import as classes. Equality is identity (Apple: CFEqual).
public final class SecCertificate: Hashable, @unchecked Sendable {
    let der: Data
    init(der: Data) { self.der = der }
    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// /documentation/Security/SecPolicy
// STAND-IN: records what it was created with. Page not retrieved; see SecCertificate.
public final class SecPolicy: Hashable, @unchecked Sendable {
    let isServer: Bool
    let hostname: String?
    init(isServer: Bool, hostname: String?) {
        self.isServer = isServer
        self.hostname = hostname
    }
    public static func == (lhs: SecPolicy, rhs: SecPolicy) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// /documentation/Security/SecTrust — `class SecTrust` (Equatable, Hashable), iOS 2.0+, macOS 10.0+
// STAND-IN: holds its certificates and policies; not thread-safe beyond what the Security
// documentation promises (SecTrustSetPolicies concurrently with a use is not supported there
// either), hence `@unchecked Sendable` only so it can cross to a verify queue as on Apple.
public final class SecTrust: Hashable, @unchecked Sendable {
    let certificates: [SecCertificate]
    var policies: [SecPolicy]
    /// Set by SecTrustSetAnchorCertificates (nil: the system's anchors).
    var anchorCertificates: [SecCertificate]?
    /// Set by SecTrustSetAnchorCertificatesOnly; Apple's default once anchors are set is true.
    var anchorCertificatesOnly = false
    init(certificates: [SecCertificate], policies: [SecPolicy]) {
        self.certificates = certificates
        self.policies = policies
    }
    public static func == (lhs: SecTrust, rhs: SecTrust) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// /documentation/Security/SecCertificateCreateWithData(_:_:) — iOS 2.0+, macOS 10.6+
/// Returns nil unless `data` is one well-formed DER SEQUENCE (tag 0x30, definite length
/// covering the whole input).
// STAND-IN: that outer check is all; Apple parses the whole X.509 structure.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    let bytes = [UInt8](data as Data)
    guard bytes.count >= 2, bytes[0] == 0x30 else { return nil }
    var length = 0
    var header = 2
    if bytes[1] < 0x80 {
        length = Int(bytes[1])
    } else {
        let count = Int(bytes[1] & 0x7f)
        guard count >= 1, count <= 4, bytes.count >= 2 + count else { return nil }
        for byte in bytes[2..<(2 + count)] { length = length << 8 | Int(byte) }
        header += count
    }
    guard header + length == bytes.count else { return nil }
    return SecCertificate(der: Data(bytes))
}

/// /documentation/Security/SecCertificateCopyData(_:) — iOS 2.0+, macOS 10.6+
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    certificate.der as NSData
}

/// /documentation/Security/SecPolicyCreateSSL(_:_:) — iOS 2.0+, macOS 10.6+
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(isServer: server, hostname: hostname.map { String($0) })
}

/// /documentation/Security/SecTrustCreateWithCertificates(_:_:_:) — iOS 2.0+, macOS 10.3+
/// `certificates`: a SecCertificate or an array of them (leaf first); `policies`: a
/// SecPolicy, an array of them, or nil. errSecParam for anything else.
@discardableResult  // STAND-IN: C functions import as discardable on Apple platforms.
public func SecTrustCreateWithCertificates(
    _ certificates: CFTypeRef, _ policies: CFTypeRef?,
    _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    let certificateList: [SecCertificate]
    if let one = certificates as? SecCertificate {
        certificateList = [one]
    } else if let many = (certificates as? NSArray) as? [SecCertificate], !many.isEmpty {
        certificateList = many
    } else {
        return errSecParam
    }
    guard let policyList = policyArray(policies) else { return errSecParam }
    trust.pointee = SecTrust(certificates: certificateList, policies: policyList)
    return errSecSuccess
}

/// /documentation/Security/SecTrustSetPolicies(_:_:) — iOS 6.0+, macOS 10.3+
@discardableResult  // STAND-IN: C functions import as discardable on Apple platforms.
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus {
    guard let list = policyArray(policies) else { return errSecParam }
    trust.policies = list
    return errSecSuccess
}

/// /documentation/Security/SecTrustSetAnchorCertificates(_:_:) — iOS 2.0+, macOS 10.3+
/// Records the anchors; from then on only they are trusted unless
/// SecTrustSetAnchorCertificatesOnly(_, false) follows (as the page says). `nil` goes
/// back to the system's anchors. errSecParam unless every element is a SecCertificate.
// STAND-IN: there is no trust store, so anchors change no verdict here
// (SecTrustEvaluateWithError stays false); they are recorded for the tests to read
// (SecurityStandIn.anchors(of:)).
@discardableResult  // STAND-IN: C functions import as discardable on Apple platforms.
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus {
    guard let anchorCertificates else {
        trust.anchorCertificates = nil
        trust.anchorCertificatesOnly = false
        return errSecSuccess
    }
    guard let list = (anchorCertificates as NSArray) as? [SecCertificate] else { return errSecParam }
    trust.anchorCertificates = list
    trust.anchorCertificatesOnly = true
    return errSecSuccess
}

/// /documentation/Security/SecTrustSetAnchorCertificatesOnly(_:_:) — iOS 2.0+, macOS 10.6+
/// `false` re-enables the built-in anchors beside those of SecTrustSetAnchorCertificates.
// STAND-IN: recorded only (see SecTrustSetAnchorCertificates).
@discardableResult  // STAND-IN: C functions import as discardable on Apple platforms.
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.anchorCertificatesOnly = anchorCertificatesOnly
    return errSecSuccess
}

/// /documentation/Security/SecTrustEvaluateWithError(_:_:) — iOS 12.0+, macOS 10.14+
/// Always `false`, with `errSecNotTrusted` in `error`.
// STAND-IN: there is no trust store here, so no chain is trusted. What the project does with
// an untrusted chain (pins, `requiresSystemTrust`, the hook) is what the tests can check;
// a chain the system would trust can only be seen on a device.
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    error?.pointee = NSError(
        domain: NSOSStatusErrorDomain, code: Int(errSecNotTrusted),
        userInfo: [NSLocalizedDescriptionKey: "the Security stand-in has no trust store"])
    return false
}

/// /documentation/Security/SecTrustCopyCertificateChain(_:) — iOS 15.0+, macOS 12.0+
/// The certificates the trust was created with, leaf first.
// STAND-IN: Apple returns the chain it built during evaluation (possibly adding
// intermediates and the anchor); with no trust store, the stand-in builds none.
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    NSArray(array: trust.certificates)
}

private func policyArray(_ policies: CFTypeRef?) -> [SecPolicy]? {
    guard let policies else { return [] }
    if let one = policies as? SecPolicy { return [one] }
    return (policies as? NSArray) as? [SecPolicy]
}

/// `NSOSStatusErrorDomain` on Apple platforms (Foundation); declared for the error above.
// STAND-IN: swift-corelibs-foundation does not define it.
public let NSOSStatusErrorDomain = "NSOSStatusErrorDomain"
