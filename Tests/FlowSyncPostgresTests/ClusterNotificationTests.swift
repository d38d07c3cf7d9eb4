import Testing

@testable import FlowSyncPostgres

/// The payloads of the cluster's notifications, parsed without PostgreSQL (issue #33:
/// the claim's payload carries the owner's byte count, since a node's name may hold a
/// space).
@Suite(.timeLimit(.minutes(1))) struct ClusterNotificationTests {
    @Test func aClaimPayloadNamesTheListTheOwnerAndTheTerm() {
        #expect(
            ClusterLog.parseClaimNotification("7 2 n1tasks") == ClusterLog.Claim(list: "tasks", owner: "n1", term: 7))
        #expect(
            ClusterLog.parseClaimNotification("12 9 node one a list")
                == ClusterLog.Claim(list: "a list", owner: "node one ", term: 12))
        #expect(
            ClusterLog.parseClaimNotification("1 7 nödeälist")
                == ClusterLog.Claim(list: "list", owner: "nödeä", term: 1), "the count is in bytes")
    }

    @Test func malformedClaimPayloadsAreRefused() {
        for payload in [
            "", "7", "7 ", "7 2", "7 2 n1", "x 2 n1tasks", "7 x n1tasks", "0 2 n1tasks", "7 0 tasks", "-1 2 n1tasks",
            "7 -2 n1tasks", "7  2 n1tasks", "7 99 n1tasks",
        ] {
            #expect(ClusterLog.parseClaimNotification(payload) == nil, "\(payload)")
        }
    }

    @Test func batchAndInboxPayloadsParseAsBefore() {
        #expect(ClusterLog.parseBatchNotification("5 tasks")! == ("tasks", 5))
        #expect(ClusterLog.parseInboxNotification(" tasks")! == ("", "tasks"), "no owner: a released list")
        #expect(ClusterLog.parseInboxNotification("n2 tasks")! == ("n2", "tasks"))
    }
}

/// The `text[]` literal an announcement sends (issue #33): names with quotes,
/// backslashes, commas, braces and spaces survive.
@Suite(.timeLimit(.minutes(1))) struct ClusterAnnouncementLiteralTests {
    @Test func elementsAreQuotedAndEscaped() {
        #expect(ClusterLog.arrayLiteral([]) == "{}")
        #expect(ClusterLog.arrayLiteral(["5 a", "7 b,c"]) == #"{"5 a","7 b,c"}"#)
        #expect(ClusterLog.arrayLiteral([#"1 q"u\o{}"#]) == #"{"1 q\"u\\o{}"}"#)
    }
}

/// An owner's answer carried in its notification (issue #33): every field survives,
/// whatever bytes it holds; malformed payloads are refused.
@Suite(.timeLimit(.minutes(1))) struct ClusterAnswerPayloadTests {
    @Test func answersRoundTripThroughTheirPayload() {
        let answers = [
            ClusterLog.Answer(
                origin: "n2", list: "tasks", clientID: "c-1", seq: 7, epoch: 0, version: 42, code: 0, message: ""),
            ClusterLog.Answer(
                origin: "node: two", list: "a:b 3:c", clientID: "ü:1", seq: Int64.max, epoch: 3, version: 0, code: 4012,
                message: "unknown list \"a:b\"; 12:colons: and ünïcödé"),
        ]
        for answer in answers {
            #expect(
                ClusterLog.parseAnswerNotification(answer.notificationPayload) == answer,
                "\(answer.notificationPayload)")
        }
        #expect(answers[0].notificationPayload == "2:n25:tasks3:c-11:71:02:421:00:")
    }

    @Test func malformedAnswerPayloadsAreRefused() {
        let good = ClusterLog.Answer(
            origin: "n2", list: "tasks", clientID: "c", seq: 1, epoch: 0, version: 2, code: 0, message: "m"
        ).notificationPayload
        for payload in [
            "", "n2", String(good.dropLast()), good + "x", good + "1:x", "2:n25:tasks1:c1:x1:01:21:01:m",
            "0:5:tasks1:c1:11:01:21:01:m",
            "999999:n2", "-1:n2", "2:n2",
        ] {
            #expect(ClusterLog.parseAnswerNotification(payload) == nil, "\(payload)")
        }
    }
}

/// A committed batch announced with its frame (issue #33): the frame's bytes, the list
/// (any bytes) and the version survive; too large a frame is not sent this way;
/// malformed payloads are refused.
@Suite(.timeLimit(.minutes(1))) struct ClusterFramePayloadTests {
    @Test func framesRoundTripThroughTheirPayload() throws {
        let frame = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        for list in ["tasks", "a b:c", "ünï 12:x"] {
            let payload = try #require(ClusterLog.framePayload(list: list, version: 42, frame: frame))
            let parsed = try #require(ClusterLog.parseFrameNotification(payload))
            #expect(parsed.list == list && parsed.version == 42 && parsed.frame == frame, "\(list)")
        }
        #expect(ClusterLog.framePayload(list: "t", version: 1, frame: [0x00, 0xff, 0x1a]) == "1 1:t00ff1a")
        #expect(ClusterLog.framePayload(list: "t", version: 1, frame: Array(repeating: 7, count: 3_947)) != nil)
        #expect(
            ClusterLog.framePayload(list: "t", version: 1, frame: Array(repeating: 7, count: 3_949)) == nil,
            "over 7,900 bytes")
    }

    @Test func malformedFramePayloadsAreRefused() {
        for payload in [
            "", "1 1:t", "1 1:t0", "1 1:t0g", "0 1:t00", "x 1:t00", "1 0:00", "1 9:t00", "1 t00", "1 1:tFF", "-1 1:t00",
        ] {
            #expect(ClusterLog.parseFrameNotification(payload) == nil, "\(payload)")
        }
    }
}
