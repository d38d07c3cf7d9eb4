/// The README's synopsis, `flowsync [--host H[:P] …] [--port P] [--token T] [--timeout S]
/// [--plaintext] COMMAND …`, puts the connection options before the command, as
/// `redis-cli` users write them. ArgumentParser only takes a subcommand's options after
/// the subcommand's name, so ``commandFirst(_:)`` moves the leading connection options
/// to just after the command before parsing: `flowsync --port 7400 get todo` is parsed as
/// `flowsync get --port 7400 todo`. Options after the command are left where they are,
/// so both places work (issue #20).
///
/// Only the options of ``ConnectionOptions`` move, and only while they come first: the
/// first argument that is none of them ends the scan. What is *not* done: a command
/// without connection options (`token`) still refuses them (`Unknown option`, exit 64),
/// as it would after its name.
enum LeadingOptions {
    /// Connection options that take a value (`--port 7400` or `--port=7400`).
    static let valued: Set<String> = [
        "--host", "--port", "--token", "--timeout",
        "--cacert", "--pin", "--server-name", "--cert", "--key",
    ]
    /// Connection options without a value.
    static let flags: Set<String> = ["--plaintext", "--tls", "--no-system-trust"]

    /// `arguments` (without the program name) with the connection options that come
    /// before the command moved to just after it. Unchanged when nothing moves, when no
    /// command follows them (`flowsync --port 1 --help`), or when an option lacks its
    /// value. Before `help` they are dropped: help takes no connection options.
    ///
    /// - Complexity: O(n) in the number of arguments.
    static func commandFirst(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if flags.contains(argument) || (valued.contains(name) && argument.contains("=")) {
                leading.append(argument)
                index += 1
            } else if valued.contains(argument) {
                guard index + 1 < arguments.count else { return arguments }
                leading += [argument, arguments[index + 1]]
                index += 2
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count, !arguments[index].hasPrefix("-") else { return arguments }
        let command = arguments[index]
        let rest = arguments[(index + 1)...]
        return command == "help" ? [command] + rest : [command] + leading + rest
    }
}
