@testable import FlowSyncPostgres
import Testing

/// The payloads of the cluster's notifications, parsed without PostgreSQL (issue #33:
/// the claim's payload carries the owner's byte count, since a node's name may hold a
/// space).
@Suite(.timeLimit(.minutes(1))) struct ClusterNotificationTests {
    @Test func aClaimPayloadNamesTheListTheOwnerAndTheTerm() {
        #expect(ClusterLog.parseClaimNotification("7 2 n1tasks") == ClusterLog.Claim(list: "tasks", owner: "n1", term: 7))
        #expect(ClusterLog.parseClaimNotification("12 9 node one a list") == ClusterLog.Claim(list: "a list", owner: "node one ", term: 12))
        #expect(ClusterLog.parseClaimNotification("1 7 nödeälist") == ClusterLog.Claim(list: "list", owner: "nödeä", term: 1), "the count is in bytes")
    }

    @Test func malformedClaimPayloadsAreRefused() {
        for payload in ["", "7", "7 ", "7 2", "7 2 n1", "x 2 n1tasks", "7 x n1tasks", "0 2 n1tasks", "7 0 tasks", "-1 2 n1tasks", "7 -2 n1tasks", "7  2 n1tasks", "7 99 n1tasks"] {
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
