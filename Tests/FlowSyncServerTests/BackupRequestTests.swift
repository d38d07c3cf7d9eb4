import FlowSyncCore
import FlowSyncProtocol
import Testing

@testable import FlowSyncServer

/// Who may ask for a backup: the connection machine admits a BackupRequest only from a
/// grant that reads every list (or with auth off); the rest get a `forbidden` reply and
/// keep their connection.
@Suite(.timeLimit(.minutes(2))) struct BackupRequestTests {
    typealias Machine = ConnectionStateMachine
    static let request = BackupRequest(requestID: 9, directory: "/backups/1")

    func ready(_ grant: AccessGrant?) -> Machine {
        let configuration = Machine.Configuration(
            maxListsPerConnection: 2, maxListNameBytes: 8, verifiesTokens: grant != nil)
        var machine = Machine(now: 100, handshakeTimeout: 50, configuration: configuration)
        let hello = Message.hello(Hello(clientName: "test", clientID: "c1", authToken: grant == nil ? nil : "token"))
        if let grant {
            #expect(machine.receivedMessage(hello, now: 110) == .verifyToken("token"))
            #expect(machine.tokenVerified(.success(grant), now: 111) == .welcome(version: 1))
        } else {
            #expect(machine.receivedMessage(hello, now: 110) == .welcome(version: 1))
        }
        return machine
    }

    @Test func onlyAGrantReadingEveryListMayTakeABackup() {
        var open = ready(nil)
        #expect(open.receivedMessage(.backupRequest(Self.request), now: 120) == .backup(Self.request))
        var admin = ready(AccessGrant(subject: "ops", read: [ListPattern("*")!], write: [], expiresAt: 1_000))
        #expect(admin.receivedMessage(.backupRequest(Self.request), now: 120) == .backup(Self.request))
        for read in ["team/*", "inbox"] {
            var user = ready(
                AccessGrant(subject: "u", read: [ListPattern(read)!], write: [ListPattern("*")!], expiresAt: 1_000))
            guard case .sendBackupReply(let reply) = user.receivedMessage(.backupRequest(Self.request), now: 120) else {
                Issue.record("read \(read): not refused")
                continue
            }
            #expect(reply.requestID == 9 && reply.failure == .forbidden && reply.lists == 0, "\(reply)")
            // Refused, not closed: the connection goes on.
            #expect(user.receivedMessage(.ping(Ping(nonce: 1)), now: 121) == .pong(nonce: 1))
        }
    }

    @Test func aServerSendsABackupReplyNeverAnswersOne() {
        var machine = ready(nil)
        let reply = BackupReply(requestID: 1, failure: nil, message: "")
        guard case .close(let error, _) = machine.receivedMessage(.backupReply(reply), now: 120) else {
            Issue.record("a client's BackupReply was accepted")
            return
        }
        #expect(error.code == .unexpectedMessage)
    }
}
