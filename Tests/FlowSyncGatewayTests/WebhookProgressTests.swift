import FlowSyncCore
import FlowSyncGatewayCore
import Foundation
import Testing

/// The cursor file's format (``WebhookProgress``): round trips over random deliveries,
/// the gateway's older one-line files, and hostile bytes fed whole and cut anywhere.
@Suite(.timeLimit(.minutes(1))) struct WebhookProgressTests {
    static func random(_ random: inout SplitMix64) -> WebhookProgress {
        let epoch = random.next() % 3 == 0 ? UInt64.max : random.next() % 5
        let cursor = random.next() % 5 == 0 ? nil : ListVersion(epoch: epoch, version: random.next() % 1_000)
        guard random.next() % 3 != 0 else { return WebhookProgress(cursor: cursor) }
        let kind = [WebhookBatch.Kind.batch, .catchUp, .snapshot][Int(random.next() % 3)]
        let from = kind == .snapshot ? nil : ListVersion(epoch: epoch, version: random.next() % 1_000)
        let to = ListVersion(epoch: epoch, version: (from?.version ?? 0) + 1 + random.next() % 9)
        // Any bytes: newlines, "in-flight" look-alikes, NULs.
        let alphabet = Array("\n in-flight 0:1 {}\"".utf8) + [0, 0xFF]
        let body = (0..<Int(random.next() % 300)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
        return WebhookProgress(
            cursor: cursor, inFlight: WebhookBatch(list: "l", kind: kind, from: from, to: to, body: body))
    }

    @Test func randomProgressRoundTrips() throws {
        var random = SplitMix64(seed: 31)
        for _ in 0..<3_000 {
            let progress = Self.random(&random)
            #expect(try WebhookProgress(decoding: progress.encoded(), list: "l") == progress)
        }
    }

    @Test func theOlderOneLineFileStillReads() throws {
        #expect(
            try WebhookProgress(decoding: Array("7:42\n".utf8), list: "l")
                == WebhookProgress(cursor: ListVersion(epoch: 7, version: 42)))
        #expect(try WebhookProgress(decoding: Array("none\n".utf8), list: "l") == WebhookProgress(cursor: nil))
    }

    /// Every prefix of a file with a delivery in flight, and assorted garbage: a clear
    /// error or (for the prefix that ends after the cursor line) the cursor alone —
    /// never a crash, never a delivery with a body cut short.
    @Test func tornAndHostileFilesAreErrorsNotDeliveries() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            var progress = Self.random(&random)
            if progress.inFlight == nil {
                progress.inFlight = WebhookBatch(
                    list: "l", kind: .batch, from: ListVersion(epoch: 1, version: 1),
                    to: ListVersion(epoch: 1, version: 2), body: Array("{}".utf8))
            }
            let bytes = progress.encoded()
            let cursorLine = (bytes.firstIndex(of: UInt8(ascii: "\n")) ?? 0) + 1
            for cut in 0..<bytes.count {
                let decoded = try? WebhookProgress(decoding: Array(bytes[..<cut]), list: "l")
                if cut == cursorLine {
                    #expect(decoded == WebhookProgress(cursor: progress.cursor))
                } else {
                    #expect(
                        decoded == nil, "a file cut at \(cut) of \(bytes.count) read as \(String(describing: decoded))")
                }
            }
        }
        for hostile in [
            "", "\n", "7\n", "x:1\n", "1:2:3\n", "-1:2\n", "1:2\nin-flight batch 1:1 1:2\n",
            "1:2\nin-flight batch 1:1 1:2 -4\n", "1:2\nin-flight teleport 1:1 1:2 0\n",
            "1:2\nin-flight snapshot 1:1 1:2 0\n",
            "1:2\nin-flight batch - 1:2 0\n", "1:2\nin-flight batch 1:1 1:2 99999999999999999999\n{}",
            "1:2\nin-flight batch 1:1 1:2 1\n{}",
        ] {
            #expect(throws: WebhookProgressError.self, "\(hostile.debugDescription)") {
                try WebhookProgress(decoding: Array(hostile.utf8), list: "l")
            }
        }
    }

    @Test func aDeliveryNotPastTheCursorIsNotPending() {
        let batch = WebhookBatch(
            list: "l", kind: .batch, from: ListVersion(epoch: 1, version: 3), to: ListVersion(epoch: 1, version: 4),
            body: [])
        #expect(WebhookProgress(cursor: ListVersion(epoch: 1, version: 3), inFlight: batch).pending == batch)
        #expect(WebhookProgress(cursor: nil, inFlight: batch).pending == batch)
        #expect(WebhookProgress(cursor: ListVersion(epoch: 1, version: 4), inFlight: batch).pending == nil)
    }
}
