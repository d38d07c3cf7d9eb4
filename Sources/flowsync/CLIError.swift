import ArgumentParser
import FlowSyncClient
import Foundation

/// The CLI's exit codes (documented in `flowsync --help` and the README):
///
/// | code | meaning |
/// | --- | --- |
/// | 0 | success |
/// | 1 | bad input: arguments, JSON, or an edit that does not apply to the list |
/// | 2 | no connection to the server within `--timeout` |
/// | 3 | the server refused the write; the message carries its error code |
/// | 4 | the server refused the list (unknown, forbidden…) or closed the connection for good |
/// | 64 | usage error (from the argument parser) |
struct CLIError: Error, CustomStringConvertible {
    var message: String
    var exitCode: Int32

    static func input(_ message: String) -> CLIError { CLIError(message: message, exitCode: 1) }
    static func timeout(_ message: String) -> CLIError { CLIError(message: message, exitCode: 2) }

    /// The exit code and message for an SDK error.
    static func from(_ error: FlowSyncError) -> CLIError {
        switch error {
        case .invalidEdit(let mutation):
            let code = error.code!
            return CLIError(
                message: "the edit does not apply to the list: error \(code): \(mutation.message)", exitCode: 1)
        case .modelCoding, .persistenceUnavailable:
            return CLIError(message: "\(error)", exitCode: 1)
        case .rejected(let code, let message):
            return CLIError(message: "server refused the write: error \(code): \(message)", exitCode: 3)
        case .listFailed(let code, let message), .connectionRefused(let code, let message):
            return CLIError(message: "server error \(code): \(message)", exitCode: 4)
        case .closed:
            return CLIError(message: "connection closed", exitCode: 2)
        }
    }

    var description: String { message }
}

extension CLIError {
    /// Prints the message to stderr and exits with the code.
    func exit() -> Never {
        var stderr = StandardError()
        print("flowsync: \(message)", to: &stderr)
        Foundation.exit(exitCode)
    }
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) { FileHandle.standardError.write(Data(string.utf8)) }
}
