import CLibPQ

/// TLS to PostgreSQL for the cluster's connections (issue #32). libpq does the TLS
/// itself (it links OpenSSL and drives the handshake inside `PQconnectPoll`, so the
/// non-blocking connect under the loop's `uv_poll_t` is unchanged); what is decided
/// here is only the default of `sslmode`.
///
/// libpq's own default, `prefer`, encrypts when the server offers it but checks no
/// certificate and falls back to plaintext: an attacker on the path sees the writes and
/// could forge the fence. So, as every other client of the project does beyond
/// loopback, a connection string that names no `sslmode` and reaches a host that is not
/// loopback gets `sslmode=verify-full`: the server's chain is checked against
/// `sslrootcert` (libpq's default `~/.postgresql/root.crt`; for a public CA,
/// `sslrootcert=/etc/ssl/certs/ca-certificates.crt`) and its name against the host.
/// Loopback and Unix-socket connections keep libpq's default. An explicit weaker mode
/// beyond loopback is kept, with a warning (docs/CLUSTER.md, "TLS to PostgreSQL").
public enum PostgresTLS {
    /// `conninfo` with `sslmode=verify-full` added where the rule above says so, and a
    /// warning for an explicit `sslmode` that does not verify the server beyond loopback.
    /// A string libpq cannot parse is returned unchanged (the connect reports it).
    public static func defaultingToVerifyFull(_ conninfo: String) -> (conninfo: String, warning: String?) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            if let message { PQfreemem(message) }
            return (conninfo, nil)
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        let hosts =
            (values["host"] ?? "").split(separator: ",").map(String.init)
            + (values["hostaddr"] ?? "").split(separator: ",").map(String.init)
        let remote = hosts.filter { !isLocal($0) }
        guard !remote.isEmpty else { return (conninfo, nil) }
        if let mode = values["sslmode"] {
            guard mode != "verify-full" else { return (conninfo, nil) }
            return (
                conninfo,
                "cluster.postgres reaches \(remote.joined(separator: ", ")) with sslmode=\(mode), which \(mode == "verify-ca" ? "does not check the server's name" : "does not verify the server's certificate"): use sslmode=verify-full"
            )
        }
        let isURI = conninfo.hasPrefix("postgresql://") || conninfo.hasPrefix("postgres://")
        let secured =
            isURI
            ? conninfo + (conninfo.contains("?") ? "&" : "?") + "sslmode=verify-full"
            : conninfo + " sslmode=verify-full"
        return (secured, nil)
    }

    /// Loopback (`localhost`, `127.0.0.0/8`, `::1`) or a Unix-socket directory (an
    /// absolute path, or `@` for the abstract namespace).
    static func isLocal(_ host: String) -> Bool {
        let name = host.trimmingWhitespace.lowercased()
        return name.isEmpty || name.hasPrefix("/") || name.hasPrefix("@") || name == "localhost" || name == "::1"
            || name.hasPrefix("127.")
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
