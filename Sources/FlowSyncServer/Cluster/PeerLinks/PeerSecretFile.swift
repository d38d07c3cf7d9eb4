import Foundation

/// Reading `[cluster] peer_secret_file` (issue #33; docs/CLUSTER.md, "Peer links"): the
/// one place that says what a usable secret file is, for a start and for
/// `flowsyncd --check-config` alike, so the check cannot pass a file a start refuses.
enum PeerSecretFile {
    /// Why a secret file is unusable: a sentence naming the key and the file.
    struct Problem: Error, Hashable {
        var message: String
    }

    /// The secret in `path`: the file must exist, be readable and hold at least
    /// ``PeerCredential/minimumSecretBytes`` bytes once a trailing newline (an editor's,
    /// or `echo`'s) is stripped. Throws the problem, naming the key and the file.
    static func read(_ path: String) throws(Problem) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            // Say which of the two it is: the operator's fix differs.
            let reason =
                FileManager.default.fileExists(atPath: path)
                ? "cannot read \(path) (check its owner and mode: the daemon's user must read it)"
                : "cannot read \(path): no such file"
            throw Problem(message: "cluster.peer_secret_file: \(reason)")
        }
        var secret = [UInt8](data)
        while let last = secret.last, last == 0x0A || last == 0x0D { secret.removeLast() }
        guard secret.count >= PeerCredential.minimumSecretBytes else {
            throw Problem(
                message:
                    "cluster.peer_secret_file: \(path) holds \(secret.count) bytes; at least \(PeerCredential.minimumSecretBytes) are needed"
            )
        }
        return secret
    }
}

extension ServerConfiguration {
    /// Reads the peer secret file as a start would, for `flowsyncd --check-config`:
    /// `nil` when it is usable or links are off (no file set, or not in cluster mode),
    /// else the problem, naming the key and the file.
    public func checkPeerSecretFile() -> String? {
        guard cluster.isEnabled, let path = cluster.peerSecretFile else { return nil }
        do throws(PeerSecretFile.Problem) {
            _ = try PeerSecretFile.read(path)
            return nil
        } catch {
            return error.message
        }
    }
}
