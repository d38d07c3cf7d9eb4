import ArgumentParser
import FlowSyncClient
import FlowSyncCore
import Foundation

/// Opens the list, applies `operations` as one write, waits for the server's verdict and
/// prints the committed version.
func commitWrite(
    _ connection: ConnectionOptions, list: String, _ operations: @escaping (Director) throws -> [FlowSyncCore.Operation]
) async throws {
    let client = try connection.makeClient()
    defer { client.close() }
    let director = try await connection.open(list, on: client)
    let ops: [FlowSyncCore.Operation]
    do {
        ops = try operations(director.snapshot.director)
    } catch let error as CLIError {
        throw error
    } catch {
        throw CLIError.input("\(error)")
    }
    let ticket = try director.submit(ops)
    let version = try await withDeadline(connection.timeout, "no answer to the write within \(connection.timeout) s") {
        do throws(FlowSyncError) { return try await ticket.committed() } catch { throw CLIError.from(error) }
    }
    print("OK \(list) @ \(version)")
}

/// A JSON payload from an argument, or from stdin when it is "-"; stored as its JSON text.
func payload(_ argument: String?) throws -> [UInt8]? {
    guard let argument else { return nil }
    let data: Data
    if argument == "-" {
        data = FileHandle.standardInput.readDataToEndOfFile()
    } else {
        data = Data(argument.utf8)
    }
    guard let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
        throw CLIError.input("the payload is not valid JSON: \(String(decoding: data.prefix(80), as: UTF8.self))")
    }
    return try OperationJSON.bytes(value)
}

struct AddSection: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add-section", abstract: "Add a section to a list.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Option(help: "The section's ID.") var id: String
    @Option(help: "Its index (default: the end).") var at: Int?
    @Option(help: "Header, as JSON.") var header: String?
    @Option(help: "Footer, as JSON.") var footer: String?

    func run() async {
        await runCommand {
            let header = try payload(self.header), footer = try payload(self.footer)
            try await commitWrite(connection, list: list) { d in
                [.insertSections([Section(id: id, header: header, footer: footer)], at: at ?? d.sections.count)]
            }
        }
    }
}

struct Insert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Insert a row into a section (creating the section at the end when the list has none of that ID).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Option(help: "The section's ID.") var section: String
    @Option(help: "The row's ID (unique in the list).") var id: String
    @Option(help: "The row's kind (the type readers decode it as).") var kind: String = "json"
    @Option(help: "Its index in the section (default: the end).") var at: Int?
    @Option(name: .customLong("json"), help: "The payload, as JSON; \"-\" reads it from stdin.") var payloadJSON: String

    func run() async {
        await runCommand {
            let row = Row(id: id, kind: kind, payload: try payload(payloadJSON) ?? [])
            try await commitWrite(connection, list: list) { d in
                guard let existing = d.section(id: section) else {
                    return [.insertSections([Section(id: section, rows: [row])], at: d.sections.count)]
                }
                return [.insertRows([row], in: .id(section), at: at ?? existing.rows.count)]
            }
        }
    }
}

struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Replace a row's payload (and kind), wherever it is.")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Option(help: "The row's ID.") var id: String
    @Option(help: "The row's kind (default: unchanged).") var kind: String?
    @Option(name: .customLong("json"), help: "The new payload, as JSON; \"-\" reads it from stdin.") var payloadJSON:
        String

    func run() async {
        await runCommand {
            let bytes = try payload(payloadJSON) ?? []
            try await commitWrite(connection, list: list) { d in
                let current = d.rowPath(id: id).map { d[$0].kind }
                return [.replaceRow(.id(id), with: Row(id: id, kind: kind ?? current ?? "json", payload: bytes))]
            }
        }
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove rows (--id, repeatable) or a section with its rows (--section).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Option(help: "A row's ID (repeat for several).") var id: [String] = []
    @Option(help: "A section's ID: removes the section and its rows.") var section: String?

    func validate() throws {
        guard id.isEmpty != (section == nil) else {
            throw ValidationError("give --id (one or more) or --section, not both")
        }
    }

    func run() async {
        await runCommand {
            try await commitWrite(connection, list: list) { _ in
                if let section { return [.removeSections([.id(section)])] }
                return [.removeRows(id.map { .id($0) })]
            }
        }
    }
}

struct Move: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move a row (--id, --to-section, --at) or a section (--section, --at).")

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Option(help: "The row to move.") var id: String?
    @Option(name: .customLong("to-section"), help: "The row's destination section (default: its own).") var toSection:
        String?
    @Option(help: "The section to move.") var section: String?
    @Option(help: "The index afterwards (default: the end).") var at: Int?

    func validate() throws {
        guard (id == nil) != (section == nil) else { throw ValidationError("give --id (a row) or --section, not both") }
    }

    func run() async {
        await runCommand {
            try await commitWrite(connection, list: list) { d in
                if let section { return [.moveSection(.id(section), to: at ?? max(0, d.sections.count - 1))] }
                guard let id, let path = d.rowPath(id: id) else {
                    throw CLIError.input("no row \(self.id ?? "") in \(list)")
                }
                let destination = toSection ?? d.sections[path.section].id
                guard let target = d.section(id: destination) else {
                    throw CLIError.input("no section \(destination) in \(list)")
                }
                let end = target.rows.count - (destination == d.sections[path.section].id ? 1 : 0)
                return [.moveRow(.id(id), toSection: .id(destination), at: at ?? end)]
            }
        }
    }
}

struct Apply: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply a JSON list of operations as one write (atomic: all or nothing).",
        discussion: """
            FILE holds a JSON array of operations ("-" reads stdin), with sections and rows by ID:
              [{"op": "insertSections", "sections": [{"id": "inbox"}]},
               {"op": "insertRows", "section": "inbox", "rows": [{"id": "m1", "kind": "mail", "payload": {"subject": "Hi"}}]},
               {"op": "moveRow", "id": "m1", "toSection": "inbox", "at": 0},
               {"op": "removeRows", "ids": ["m1"]}]
            Operations: insertSections, setSections, removeSections, removeAllSections, moveSection, \
            swapSections, setHeader, setFooter, insertRows, setRows, replaceRow, removeRows, \
            removeAllRows, moveRow, swapRows.
            """)

    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The list.") var list: String
    @Argument(help: "The JSON file (\"-\" for stdin).") var file: String

    func run() async {
        await runCommand {
            let data: Data
            if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let contents = FileManager.default.contents(atPath: file) else {
                    throw CLIError.input("cannot read \(file)")
                }
                data = contents
            }
            try await commitWrite(connection, list: list) { d in try OperationJSON.parse(data, against: d) }
        }
    }
}
