import FlowSyncClient
import FlowSyncGatewayCore
import Foundation
import Testing

@testable import FlowSyncGateway

/// A configuration built in code is checked like the flags: `Gateway.init` throws a
/// `GatewayConfigurationError` naming the setting, its flag and its range, for every
/// limit of the flags' tables and the settings no flag has, before anything is opened.
@Suite(.timeLimit(.minutes(1))) struct GatewayConfigurationTests {
    static let daemon = Endpoint(host: "127.0.0.1", port: 1)

    /// The error `Gateway.init` throws for `configuration`, or nil when it builds.
    static func refusal(_ configuration: GatewayConfiguration) -> GatewayConfigurationError? {
        do {
            _ = try Gateway(configuration: configuration)
            return nil
        } catch {
            return error
        }
    }

    @Test func theDefaultsAreValid() throws {
        var configuration = GatewayConfiguration(endpoints: [Self.daemon])
        configuration.webhooks = [
            WebhookConfiguration(name: "h", url: URL(string: "http://127.0.0.1:9/")!, lists: ["l"], secret: "s")
        ]
        try configuration.validate()
    }

    /// Every setting of the flags' tables, one past either bound, through `Gateway.init`:
    /// refused with its Swift name, its flag and its range; at the bounds, accepted.
    @Test func everyTabledLimitIsCheckedByGatewayInit() throws {
        func probe<L>(_ settings: [LimitSetting<L>], prefix: String, _ path: WritableKeyPath<GatewayConfiguration, L>) {
            for setting in settings {
                guard let field = setting.field as? WritableKeyPath<L, Int> else {
                    Issue.record("\(setting.flag) is not a stored field")
                    continue
                }
                for (value, ok) in [
                    (setting.range.lowerBound, true), (setting.range.upperBound, true),
                    (setting.range.lowerBound - 1, false), (setting.range.upperBound + 1, false),
                ] {
                    var configuration = GatewayConfiguration(endpoints: [Self.daemon])
                    configuration[keyPath: path.appending(path: field)] = value
                    do {
                        try configuration.validate()
                        #expect(ok, "\(setting.flag) = \(value) accepted")
                    } catch {
                        #expect(!ok, "\(setting.flag) = \(value) refused: \(error)")
                        #expect(
                            error
                                == GatewayConfigurationError(
                                    setting: prefix + setting.name, flag: setting.flag, value: value,
                                    range: setting.range, unit: setting.unit))
                    }
                }
                var configuration = GatewayConfiguration(endpoints: [Self.daemon])
                configuration[keyPath: path.appending(path: field)] = setting.range.lowerBound - 1
                #expect(Self.refusal(configuration)?.flag == setting.flag, "Gateway.init checks \(setting.flag)")
            }
        }
        probe(GatewayLimits.settings, prefix: "limits.", \.limits)
        probe(WebSocketLimits.settings, prefix: "webSocket.", \.webSocket)
    }

    /// The names in the errors are the Swift paths (read from the key paths).
    @Test func settingsAreNamedAsSwiftSpellsThem() {
        #expect(
            GatewayLimits.settings.map(\.name) == [
                "maxBodyBytes", "maxOperations", "maxConnections", "maxStreams", "headerTimeoutMilliseconds",
                "bodyTimeoutMilliseconds", "daemonTimeoutMilliseconds", "linkPool.maxPerCredential",
                "linkPool.maxTotal", "linkPool.idleMilliseconds",
            ])
        #expect(
            WebSocketLimits.settings.map(\.name) == [
                "maxMessageBytes", "maxSubscriptions", "maxWritesInFlight", "maxQueuedMessages", "maxQueuedBytes",
                "pingMilliseconds",
            ])
    }

    @Test func theErrorNamesTheSettingItsFlagAndItsRange() {
        var configuration = GatewayConfiguration(endpoints: [Self.daemon])
        configuration.webSocket.pingMilliseconds = 0
        let error = Self.refusal(configuration)
        #expect(
            error
                == GatewayConfigurationError(
                    setting: "webSocket.pingMilliseconds", flag: "--ws-ping-ms", value: 0, range: 100...86_400_000,
                    unit: "ms"))
        #expect(
            error?.description
                == "GatewayConfiguration.webSocket.pingMilliseconds must be from 100 to 86400000 ms, got 0 (flag --ws-ping-ms)"
        )
    }

    /// The settings no table holds: each refused (before: a trap for no endpoints, a
    /// busy SSE timer for a keep-alive of 0, WebhookBackoff's trap for a cap below its base).
    @Test func theSettingsWithoutATableAreCheckedToo() {
        let hook = WebhookConfiguration(name: "h", url: URL(string: "http://127.0.0.1:9/")!, lists: ["l"], secret: "s")
        func hooks(_ change: (inout WebhookConfiguration) -> Void) -> [WebhookConfiguration] {
            var changed = hook
            change(&changed)
            return [changed]
        }
        let cases: [(String, (inout GatewayConfiguration) -> Void)] = [
            ("port", { $0.port = 65_536 }),
            ("port", { $0.port = -1 }),
            ("endpoints.count", { $0.endpoints = [] }),
            ("sseKeepAliveMilliseconds", { $0.sseKeepAliveMilliseconds = 0 }),
            ("sseBufferedEvents", { $0.sseBufferedEvents = 0 }),
            ("webhooks[h].maxQueued", { c in c.webhooks = hooks { $0.maxQueued = 0 } }),
            (
                "webhooks[h].timeoutMilliseconds",
                { c in c.webhooks = hooks { $0.timeoutMilliseconds = 0 } }
            ),
            (
                "webhooks[h].backoffBaseMilliseconds",
                { c in c.webhooks = hooks { $0.backoffBaseMilliseconds = 0 } }
            ),
            (
                "webhooks[h].backoffCapMilliseconds",
                { c in c.webhooks = hooks { $0.backoffCapMilliseconds = 50 } }
            ),
        ]
        for (setting, change) in cases {
            var configuration = GatewayConfiguration(endpoints: [Self.daemon])
            change(&configuration)
            let error = Self.refusal(configuration)
            #expect(error?.setting == setting, "\(setting): \(error.map(\.description) ?? "accepted")")
        }
        var capAtBase = GatewayConfiguration(endpoints: [Self.daemon], webhooks: [hook])
        capAtBase.webhooks[0].backoffCapMilliseconds = hook.backoffBaseMilliseconds
        #expect(throws: Never.self) { try capAtBase.validate() }
    }
}
