import FlowSyncGatewayCore

/// A ``GatewayConfiguration`` the gateway cannot run with: one setting out of the values it
/// accepts. Recoverable: ``Gateway/init(configuration:cursorStore:logger:)`` throws it
/// before anything is opened, so code that embeds the gateway gets the same ranges as
/// `flowsync-gateway`'s flags instead of a trap, a busy timer or a silent clamp.
public struct GatewayConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The setting as `GatewayConfiguration` spells it: `limits.maxBodyBytes`,
    /// `webSocket.pingMilliseconds`, `webhooks[orders].maxQueued`.
    public let setting: String
    /// The `flowsync-gateway` flag that sets it, when one does (`--max-body-bytes`).
    public let flag: String?
    /// The refused value (clamped to `Int`).
    public let value: Int
    /// The values accepted, inclusive.
    public let range: ClosedRange<Int>
    /// What the number counts (`bytes`, `ms`, …).
    public let unit: String

    public init(setting: String, flag: String?, value: Int, range: ClosedRange<Int>, unit: String) {
        self.setting = setting
        self.flag = flag
        self.value = value
        self.range = range
        self.unit = unit
    }

    public var description: String {
        "GatewayConfiguration.\(setting) must be from \(range.lowerBound) to \(range.upperBound) \(unit), got \(value)"
            + (flag.map { " (flag \($0))" } ?? "")
    }
}

extension GatewayConfiguration {
    /// Checks every number the gateway runs with, in one place: the HTTP and pool limits
    /// and the WebSocket limits against the same tables as their flags
    /// (``GatewayLimits/settings``, ``WebSocketLimits/settings``), then the settings no
    /// table holds (the listen port, the endpoints, the SSE stream's, each webhook's).
    /// ``Gateway/init(configuration:cursorStore:logger:)`` calls it.
    ///
    /// Why each bound outside the tables: a port is 16 bits; a gateway with no daemon
    /// serves nothing; a keep-alive period of 0 would fire the SSE timer without pause;
    /// an SSE buffer, a webhook queue and a POST deadline below 1 drop or fail everything;
    /// a backoff below 1 ms (or a cap below its base) retries a dead receiver in a loop.
    /// - Throws: ``GatewayConfigurationError`` for the first setting out of range.
    public func validate() throws(GatewayConfigurationError) {
        try Self.check(port, "port", flag: "--listen", 0...65_535, unit: "(a TCP port)")
        try Self.check(endpoints.count, "endpoints.count", flag: "--daemon", 1...LimitBounds.count, unit: "endpoints")
        try Self.check(limits, GatewayLimits.settings, prefix: "limits.")
        try Self.check(webSocket, WebSocketLimits.settings, prefix: "webSocket.")
        try Self.check(
            sseKeepAliveMilliseconds, "sseKeepAliveMilliseconds", flag: nil, 1...LimitBounds.milliseconds, unit: "ms")
        try Self.check(sseBufferedEvents, "sseBufferedEvents", flag: nil, 1...LimitBounds.count, unit: "events")
        for hook in webhooks {
            let prefix = "webhooks[\(hook.name)]."
            try Self.check(
                hook.maxQueued, prefix + "maxQueued", flag: "--webhook max-queued=", 1...LimitBounds.count,
                unit: "batches")
            try Self.check(
                hook.timeoutMilliseconds, prefix + "timeoutMilliseconds", flag: "--webhook timeout-ms=",
                1...LimitBounds.milliseconds, unit: "ms")
            let base = Int(clamping: hook.backoffBaseMilliseconds)
            try Self.check(
                base, prefix + "backoffBaseMilliseconds", flag: nil, 1...LimitBounds.milliseconds, unit: "ms")
            try Self.check(
                Int(clamping: hook.backoffCapMilliseconds), prefix + "backoffCapMilliseconds", flag: nil,
                base...LimitBounds.milliseconds, unit: "ms")
        }
    }

    private static func check(
        _ value: Int, _ setting: String, flag: String?, _ range: ClosedRange<Int>, unit: String
    ) throws(GatewayConfigurationError) {
        guard range.contains(value) else {
            throw GatewayConfigurationError(setting: setting, flag: flag, value: value, range: range, unit: unit)
        }
    }

    private static func check<Limits>(
        _ limits: Limits, _ settings: [LimitSetting<Limits>], prefix: String
    ) throws(GatewayConfigurationError) {
        for setting in settings {
            try check(
                limits[keyPath: setting.field], prefix + setting.name, flag: setting.flag, setting.range,
                unit: setting.unit)
        }
    }
}
