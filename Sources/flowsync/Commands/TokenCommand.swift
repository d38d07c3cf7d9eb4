import ArgumentParser
import Foundation
import JWTKit
import TOMLKit

/// `flowsync token`: mints an HS256 development token from a configured key.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a signed HS256 token (JWT) for development.",
        discussion: """
            The key is --secret, or the [[auth.keys]] entry with --key-id (alg HS256) in the \
            flowsyncd configuration given by --config. Patterns: an exact list name, a namespace \
            such as 'team/42/*', or '*' for every list. Production tokens should come from your \
            identity service, not from this command.

            Example:
              export FLOWSYNC_TOKEN=$(flowsync token --config /etc/flowsyncd/flowsyncd.toml \\
                  --key-id dev --sub ada --read 'team/42/*' --write 'team/42/inbox' --ttl 3600)
            """)

    @Option(name: .customLong("key-id"), help: "The key's kid (put in the token's header).") var keyID: String
    @Option(help: "The HS256 secret (at least 32 bytes).") var secret: String?
    @Option(help: "A flowsyncd configuration file holding the key (secret or secret_file).") var config: String?
    @Option(help: "The user (the sub claim).") var sub: String
    @Option(help: "A list pattern the token may read (repeatable).") var read: [String] = []
    @Option(help: "A list pattern the token may write (repeatable).") var write: [String] = []
    @Option(help: "Lifetime in seconds.") var ttl: Int = 3_600
    @Option(help: "The iss claim (when the server checks auth.issuer).") var issuer: String?
    @Option(help: "The aud claim (when the server checks auth.audience).") var audience: String?

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var iss: IssuerClaim?
        var aud: AudienceClaim?
        var read: [String]
        var write: [String]
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func run() async {
        await runCommand {
            let secret = try resolveSecret()
            guard secret.utf8.count >= 32 else { throw CLIError.input("an HS256 secret needs at least 32 bytes") }
            guard ttl > 0 else { throw CLIError.input("--ttl must be positive") }
            for pattern in read + write where !Self.isValidPattern(pattern) {
                throw CLIError.input("malformed list pattern \"\(pattern)\" (an exact name, 'prefix/*', or '*')")
            }
            let keys = JWTKeyCollection()
            let kid = JWKIdentifier(string: keyID)
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: kid)
            let now = Date()
            let claims = Claims(
                sub: SubjectClaim(value: sub), exp: ExpirationClaim(value: now.addingTimeInterval(Double(ttl))),
                iat: IssuedAtClaim(value: now), iss: issuer.map { IssuerClaim(value: $0) },
                aud: audience.map { AudienceClaim(value: [$0]) }, read: read, write: write)
            print(try await keys.sign(claims, kid: kid))
        }
    }

    /// The same rule as the server's `ListPattern`.
    static func isValidPattern(_ text: String) -> Bool {
        if text == "*" { return true }
        if text.isEmpty { return false }
        if text.hasSuffix("/*") { return text.count > 2 && !text.dropLast().contains("*") }
        return !text.contains("*")
    }

    private func resolveSecret() throws -> String {
        if let secret {
            guard config == nil else { throw CLIError.input("give --secret or --config, not both") }
            return secret
        }
        guard let config else { throw CLIError.input("give --secret or --config") }
        guard let text = try? String(contentsOfFile: config, encoding: .utf8) else {
            throw CLIError.input("cannot read \(config)")
        }
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch { throw CLIError.input("\(config): \(error)") }
        for entry in table["auth"]?.table?["keys"]?.array ?? [] {
            guard let key = entry.table, key["kid"]?.string == keyID else { continue }
            guard (key["alg"]?.string ?? "").uppercased() == "HS256" else {
                throw CLIError.input("key \"\(keyID)\" is not HS256")
            }
            if let secret = key["secret"]?.string { return secret }
            if let file = key["secret_file"]?.string {
                guard let s = try? String(contentsOfFile: file, encoding: .utf8) else {
                    throw CLIError.input("cannot read \(file)")
                }
                return s.trimmingCharacters(in: .newlines)
            }
            throw CLIError.input("key \"\(keyID)\" has no secret")
        }
        throw CLIError.input("no [[auth.keys]] with kid \"\(keyID)\" in \(config)")
    }
}
