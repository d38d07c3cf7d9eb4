import ArgumentParser

/// `flowsync`: look inside a FlowSync server and write to its lists, in the spirit of
/// `redis-cli`. Built on the client SDK (FlowSyncClient).
@main
struct FlowSyncCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowsync",
        abstract: "Watch, read and write the lists of a FlowSync server.",
        discussion: """
            Connection: --host, --port, --token (or FLOWSYNC_HOST, FLOWSYNC_PORT, FLOWSYNC_TOKEN); \
            --timeout bounds the wait for the server. They go before the command or after it: \
            flowsync --port 7400 get contacts, or flowsync get contacts --port 7400. \
            Several servers (cluster nodes): repeat --host, each host or host:port, tried in \
            order until one answers: flowsync --host 10.0.0.1:7400 --host 10.0.0.2:7400 get contacts.

            Exit codes: 0 success; 1 bad input (arguments, JSON, an edit that does not apply); \
            2 no connection within --timeout; 3 the server refused the write (its error code is \
            in the message); 4 the server refused the list or the connection; 64 usage error.

            Examples:
              flowsync add-section contacts --id friends --header '{"title":"Friends"}'
              flowsync insert contacts --section friends --id ada --kind contact --json '{"id":"ada","name":"Ada"}'
              echo '{"id":"bob","name":"Bob"}' | flowsync insert contacts --section friends --id bob --kind contact --json -
              flowsync move contacts --id bob --to-section friends --at 0
              flowsync get contacts
              flowsync watch contacts --json
              flowsync apply contacts ops.json
              flowsync stats contacts
              flowsync backup /var/backups/flowsync/2026-11-24
            """,
        subcommands: [
            Watch.self, Get.self, Lists.self, Stats.self, AddSection.self, Insert.self, Update.self,
            Remove.self, Move.self, Apply.self, Token.self, Backup.self,
        ]
    )

    /// The entry point: the connection options may come before the command as well as
    /// after it (``LeadingOptions``), as the README's synopsis writes them.
    static func main() async {
        await main(LeadingOptions.commandFirst(Array(CommandLine.arguments.dropFirst())))
    }
}
