import CLibUV

#if canImport(Glibc)
import Glibc
#endif

/// A numeric IPv4 or IPv6 address and port, as libuv takes it.
///
/// Only numeric hosts are accepted (plus `localhost`, mapped to `127.0.0.1`): a
/// daemon's listen address should not depend on DNS, and the client SDK resolves
/// names before it gets here.
public struct SocketAddress: Sendable, CustomStringConvertible {
    var storage = sockaddr_storage()
    public let host: String
    public let port: Int

    /// Parses `host` (IPv4 or IPv6 literal, or `localhost`) and `port`.
    public init(host: String, port: Int) throws(UVError) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        self.host = numeric
        self.port = port
        var result: Int32 = 0
        withUnsafeMutableBytes(of: &storage) { raw in
            let v4 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
            result = uv_ip4_addr(numeric, Int32(port), v4)
            if result != 0 {
                let v6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                result = uv_ip6_addr(numeric, Int32(port), v6)
            }
        }
        try UVError.check(result, "parse address \(host)")
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self)) }
    }

    /// Reads a `sockaddr` filled in by libuv.
    static func describe(_ storage: sockaddr_storage) -> (host: String, port: Int)? {
        var copy = storage
        return withUnsafeMutableBytes(of: &copy) { raw -> (String, Int)? in
            let sa = raw.baseAddress!.assumingMemoryBound(to: sockaddr.self)
            var name = [CChar](repeating: 0, count: 64)
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                let v4 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                uv_ip4_name(v4, &name, name.count)
                return (cString(name), Int(UInt16(bigEndian: v4.pointee.sin_port)))
            case AF_INET6:
                let v6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                uv_ip6_name(v6, &name, name.count)
                return (cString(name), Int(UInt16(bigEndian: v6.pointee.sin6_port)))
            default:
                return nil
            }
        }
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A NUL-terminated C buffer as a String.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
