import FlowSyncGatewayCore
import FlowSyncTestSupport
import Foundation
import Testing

/// The limits' check (`LimitSetting`): the defaults pass, every bound is inclusive, a value
/// out of range names its flag, and every flag is documented.
@Suite(.timeLimit(.minutes(1))) struct GatewayLimitsTests {
    @Test func theDefaultsAreValid() throws {
        try GatewayLimits().validate()
        try WebSocketLimits().validate()
    }

    /// Each setting at its bounds passes; one past either bound is refused with that flag.
    @Test func everyBoundIsInclusiveAndAValuePastItNamesItsFlag() {
        func probe<L: CheckedLimits>(_ defaults: L, _ set: (inout L, String, Int) -> Void) {
            for setting in L.settings {
                for (value, ok) in [
                    (setting.range.lowerBound, true), (setting.range.upperBound, true),
                    (setting.range.lowerBound - 1, false), (setting.range.upperBound + 1, false),
                ] {
                    var limits = defaults
                    set(&limits, setting.flag, value)
                    #expect(limits[keyPath: setting.field] == value, "\(setting.flag) is the field it names")
                    do throws(LimitError) {
                        try limits.validate()
                        #expect(ok, "\(setting.flag) = \(value) passed")
                    } catch {
                        #expect(!ok, "\(setting.flag) = \(value) refused: \(error)")
                        #expect(error.flag == setting.flag && error.value == value && error.range == setting.range)
                    }
                }
            }
        }
        probe(GatewayLimits()) { limits, flag, value in
            switch flag {
            case "--max-body-bytes": limits.maxBodyBytes = value
            case "--max-operations": limits.maxOperations = value
            case "--max-connections": limits.maxConnections = value
            case "--max-streams": limits.maxStreams = value
            case "--header-timeout-ms": limits.headerTimeoutMilliseconds = value
            case "--body-timeout-ms": limits.bodyTimeoutMilliseconds = value
            case "--daemon-timeout-ms": limits.daemonTimeoutMilliseconds = value
            case "--pool-max-per-token": limits.linkPool.maxPerCredential = value
            case "--pool-max-links": limits.linkPool.maxTotal = value
            case "--pool-idle-ms": limits.linkPool.idleMilliseconds = value
            default: Issue.record("no field for \(flag)")
            }
        }
        probe(WebSocketLimits()) { limits, flag, value in
            switch flag {
            case "--ws-max-message-bytes": limits.maxMessageBytes = value
            case "--ws-max-subscriptions": limits.maxSubscriptions = value
            case "--ws-max-writes-in-flight": limits.maxWritesInFlight = value
            case "--ws-max-queued-messages": limits.maxQueuedMessages = value
            case "--ws-max-queued-bytes": limits.maxQueuedBytes = value
            case "--ws-ping-ms": limits.pingMilliseconds = value
            default: Issue.record("no field for \(flag)")
            }
        }
        #expect(GatewayLimits.settings.count == 10 && WebSocketLimits.settings.count == 6, "one setting per field")
    }

    @Test func theErrorSaysWhichFlagWhatValueAndWhatRange() {
        var limits = WebSocketLimits()
        limits.pingMilliseconds = 0
        #expect(throws: LimitError(flag: "--ws-ping-ms", value: 0, range: 100...86_400_000, unit: "ms")) {
            try limits.validate()
        }
        #expect(
            "\(LimitError(flag: "--ws-ping-ms", value: 0, range: 100...86_400_000, unit: "ms"))"
                == "--ws-ping-ms must be from 100 to 86400000 ms, got 0")
    }

    /// Every flag is in docs/GATEWAY.md's tables (a document kept true by a test).
    @Test func everyFlagIsDocumented() throws {
        let doc = try String(
            contentsOf: BuiltProduct.root.appendingPathComponent("docs/GATEWAY.md"), encoding: .utf8)
        for flag in GatewayLimits.settings.map(\.flag) + WebSocketLimits.settings.map(\.flag) {
            #expect(doc.contains("| `\(flag)`"), "\(flag) has a row in docs/GATEWAY.md")
        }
    }
}
