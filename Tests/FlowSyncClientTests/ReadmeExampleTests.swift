import Dispatch
import FlowSyncClient
import FlowSyncTestSupport
import Testing

/// The README's SDK example, as written there (against a test server), so it keeps
/// compiling and doing what it says.
@Suite(.timeLimit(.minutes(2))) struct ReadmeExampleTests {
    struct Contact: FlowModel {  // any Codable & Identifiable type; id → row ID
        static let flowKind = "contact"  // the row's kind, shared with other platforms
        var id: String
        var name: String
    }

    @Test func readmeExample() async throws {
        let server = try await EmbeddedServer()
        let client = try FlowSyncClient(
            configuration: .init(port: server.port, callbackQueue: DispatchQueue(label: "readme")))
        defer { client.close() }

        let contacts = client.director("contacts")  // a live replica; subscribes
        try await contacts.waitUntilLoaded()

        // Edits show at once (optimistic) and return a ticket for the server's verdict.
        try contacts.add(section: NewSection(id: "friends", models: [Contact(id: "ada", name: "Ada")]))
        let version = try await contacts.section(id: "friends")!.add(model: Contact(id: "bob", name: "Bob"), at: 0)
            .committed()
        try contacts.perform { batch in  // one write, one visible change
            try batch.section("friends").move(from: 0, to: 1)
            try batch.section("friends").set(header: ["title": "Friends"])
        }

        let changes = Shared(0)
        contacts.observe { change in
            print(change.cause, change.changeset.changeCount)
            changes.update { $0 += 1 }
        }
        let friends = try contacts.section(at: 0)!.models(as: Contact.self)
        #expect(friends.map(\.name) == ["Ada", "Bob"])
        #expect(version.version == 2)
        #expect(try contacts.section(at: 0)!.header(as: [String: String].self) == ["title": "Friends"])
        // The observer starts with the current state, then sees the next change.
        try contacts.remove(modelID: "ada")
        #expect(await eventually { changes.get() >= 2 })
        #expect(await server.stop())
    }
}
