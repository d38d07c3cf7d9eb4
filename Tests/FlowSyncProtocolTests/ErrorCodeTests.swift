import FlowSyncCore
import FlowSyncProtocol
import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct ErrorCodeTests {
    @Test func codesAreUniqueNamedAndInTheirRanges() {
        #expect(Set(ErrorCode.allKnown).count == ErrorCode.allKnown.count)
        #expect(Set(ErrorCode.allKnown.map(\.name)).count == ErrorCode.allKnown.count)
        for code in ErrorCode.allKnown {
            #expect((1000..<6000).contains(code.rawValue))
            #expect(!code.name.hasPrefix("code-"), "\(code.rawValue) has a name")
        }
        #expect(ErrorCode.allKnown == ErrorCode.allKnown.sorted { $0.rawValue < $1.rawValue })
    }

    @Test func unknownCodesGetTheirRangeReaction() {
        #expect(ErrorCode(rawValue: 1999).reaction == .giveUp)
        #expect(ErrorCode(rawValue: 2999).reaction == .refreshToken)
        #expect(ErrorCode(rawValue: 3999).reaction == .giveUp)
        #expect(ErrorCode(rawValue: 4999).reaction == .resync)
        #expect(ErrorCode(rawValue: 5999).reaction == .backoff(milliseconds: 1_000))
        #expect(ErrorCode(rawValue: 7).name == "code-7")
    }

    @Test func reactionsFollowTheCatalog() {
        #expect(ErrorCode.staleBaseVersion.reaction == .resync)
        #expect(ErrorCode.conflict.reaction == .resync)
        #expect(ErrorCode.tokenExpired.reaction == .refreshToken)
        #expect(ErrorCode.slowConsumer.reaction == .backoff(milliseconds: 1_000))
        #expect(ErrorCode.malformedFrame.reaction == .giveUp)
        #expect(ErrorCode.serverDraining.reaction == .retry)
    }

    @Test func everyMutationReasonHasItsCode() {
        #expect(ErrorCode(for: .indexOutOfRange) == .indexOutOfRange)
        #expect(ErrorCode(for: .duplicateID) == .duplicateID)
        #expect(ErrorCode(for: .unknownSection) == .unknownSection)
        #expect(ErrorCode(for: .unknownRow) == .unknownRow)
        #expect(ErrorCode(for: .limitExceeded) == .limitExceeded)
        #expect(ErrorCode(for: .invalidID) == .invalidID)
    }

    @Test func realMutationErrorsMapToCodes() throws {
        var d = try Director(sections: [Section(id: "s", rows: [Row(id: "a")])])
        do {
            _ = try d.apply([.removeRows([.id("nope")])])
            Issue.record("expected a refusal")
        } catch {
            #expect(ErrorCode(for: error.reason) == .unknownRow)
        }
    }

    /// The spec's table lists every code with its number, name and reaction.
    @Test func specListsEveryCode() throws {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/PROTOCOL.md").standardized
        let text = try String(contentsOf: spec, encoding: .utf8)
        for code in ErrorCode.allKnown {
            #expect(
                text.contains("| \(code.rawValue) | `\(code.name)` | \(code.reaction) |"),
                "docs/PROTOCOL.md lacks the row of \(code)")
        }
    }

    @Test func versionNegotiation() {
        #expect(ProtocolVersion.negotiate(clientMin: 1, clientMax: 3) == 1)
        #expect(ProtocolVersion.negotiate(clientMin: 2, clientMax: 3) == nil)
        #expect(ProtocolVersion.negotiate(clientMin: 1, clientMax: 5, serverMin: 1, serverMax: 4) == 4)
    }
}
