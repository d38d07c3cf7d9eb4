import ArgumentParser
import FlowSyncClient
import FlowSyncCore
import Foundation

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every change of a list as it arrives.",
        discussion: """
            The first change is the initial snapshot. Each change is shown the way a table \
            view applies it: stage by stage, with deleted, inserted, moved and updated rows \
            (index paths and IDs). With --json, one JSON object per line.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Flag(help: "One JSON object per change, one per line.") var json = false
    @Option(help: "Exit after this many changes (the initial snapshot counts).") var count: Int?

    func run() async {
        await runCommand {
            let client = try connection.makeClient()
            defer { client.close() }
            let director = client.director(list)
            let changes = director.changes
            // Only the wait for the first change is bounded: a quiet list is fine after.
            _ = try await connection.open(list, on: client)
            var seen = 0
            for try await change in changes {
                print(
                    json ? Rendering.line(Rendering.json(change)) : Rendering.text(change), terminator: json ? "\n" : ""
                )
                fflush(nil)
                seen += 1
                if let count, seen >= count { break }
            }
        }
    }
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a list's current state (a table, or --json).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Flag(help: "Print JSON.") var json = false

    func run() async {
        await runCommand {
            let client = try connection.makeClient()
            defer { client.close() }
            let snapshot = try await connection.open(list, on: client).snapshot
            print(
                json ? Rendering.line(Rendering.json(snapshot)) : Rendering.table(snapshot),
                terminator: json ? "\n" : "")
        }
    }
}

struct Lists: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the server's lists with their versions.")

    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Print JSON.") var json = false

    func run() async {
        await runCommand {
            let client = try connection.makeClient()
            defer { client.close() }
            let stats = try await withDeadline(
                connection.timeout, "no answer from the server within \(connection.timeout) s"
            ) {
                do throws(FlowSyncError) { return try await StatsSampler.sample(client) } catch {
                    throw CLIError.from(error)
                }
            }
            // The server lists each list as "list:NAME" with its version.
            let lists = stats.filter { $0.key.hasPrefix("list:") }.map { (String($0.key.dropFirst(5)), $0.value) }
                .sorted { $0.0 < $1.0 }
            if json {
                print(Rendering.line(lists.map { ["name": $0.0, "version": $0.1] }))
            } else {
                for (name, version) in lists { print("\(name)\tversion \(version)") }
                if lists.isEmpty { print("(no lists)") }
            }
        }
    }
}

/// Retries a stats request until connected (the client connects in the background).
enum StatsSampler {
    static func sample(_ client: FlowSyncClient, list: String? = nil) async throws(FlowSyncError) -> [String: Int64] {
        var lastError = FlowSyncError.closed
        for _ in 0..<10_000 {
            if case .connected = client.status {
                do throws(FlowSyncError) { return try await client.stats(list: list) } catch { lastError = error }
            }
            if case .closed(let error) = client.status { throw error ?? lastError }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        throw lastError
    }
}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the server's statistics: uptime, connections, lists, and rates.",
        discussion: "Rates come from two samples --interval seconds apart (0: one sample, no rates).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "A list, for its own entries too.") var list: String?
    @Option(help: "Seconds between the two samples for rates.") var interval: Double = 1
    @Flag(help: "Print JSON.") var json = false

    static let rated = [
        "batches", "mutations.committed", "mutations.rejected", "frames.sent", "bytes.sent", "connections.accepted",
    ]

    func run() async {
        await runCommand {
            let client = try connection.makeClient()
            defer { client.close() }
            let list = self.list
            let first = try await withDeadline(
                connection.timeout, "no answer from the server within \(connection.timeout) s"
            ) {
                do throws(FlowSyncError) { return try await StatsSampler.sample(client, list: list) } catch {
                    throw CLIError.from(error)
                }
            }
            var rates: [String: Double] = [:]
            var latest = first
            if interval > 0 {
                try? await Task.sleep(nanoseconds: UInt64(interval * 1_000_000_000))
                latest = try await StatsSampler.sample(client, list: list)
                for name in Self.rated {
                    if let a = first[name], let b = latest[name] { rates[name] = Double(b - a) / interval }
                }
            }
            let entries = latest.filter { !$0.key.hasPrefix("list:") }
            if json {
                var object: [String: Any] = entries.mapValues { $0 as Any }
                object["rates"] = rates
                print(Rendering.line(object))
            } else {
                if let uptime = entries["uptime.ms"] {
                    print(String(format: "uptime                   %.1f s", Double(uptime) / 1000))
                }
                for name in entries.keys.sorted() where name != "uptime.ms" {
                    var value = "\(entries[name]!)"
                    if name == "list.epoch" || name == "list.digest" {
                        value = String(UInt64(bitPattern: entries[name]!), radix: 16)
                    }
                    print(name.padding(toLength: 25, withPad: " ", startingAt: 0) + value)
                }
                for name in Self.rated where rates[name] != nil {
                    print(
                        (name + "/s").padding(toLength: 25, withPad: " ", startingAt: 0)
                            + String(format: "%.1f", rates[name]!))
                }
            }
        }
    }
}
