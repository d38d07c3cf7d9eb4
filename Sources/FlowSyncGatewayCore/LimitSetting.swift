/// One limit as an operator sets it: the flag, the field of the limits it fills, and the
/// values the gateway can run with. ``GatewayLimits/settings`` and
/// ``WebSocketLimits/settings`` list every limit once, so the check of a configuration,
/// its error message and the documentation test (every flag is in docs/GATEWAY.md) share
/// one table.
public struct LimitSetting<Limits>: CustomStringConvertible {
    /// The `flowsync-gateway` flag that sets it (`--ws-ping-ms`).
    public let flag: String
    /// The field it fills.
    public let field: KeyPath<Limits, Int>
    /// The values accepted, inclusive.
    public let range: ClosedRange<Int>
    /// What the number counts (`bytes`, `ms`, `lists`…), for the error message.
    public let unit: String

    public init(_ flag: String, _ field: KeyPath<Limits, Int>, _ range: ClosedRange<Int>, unit: String) {
        self.flag = flag
        self.field = field
        self.range = range
        self.unit = unit
    }

    public var description: String { "\(flag) (\(range.lowerBound)…\(range.upperBound) \(unit))" }

    /// The field's path as Swift spells it below `Limits` (`maxBodyBytes`,
    /// `linkPool.maxTotal`), for errors about a configuration built in code
    /// (`GatewayConfigurationError`). Read from the key path's description, which names
    /// the properties while the binary keeps its reflection metadata (the default);
    /// without it, the flag. `GatewayLimitsTests` checks every name.
    public var name: String {
        let path = String(describing: field)
        guard path.hasPrefix("\\"), let dot = path.firstIndex(of: ".") else { return flag }
        return String(path[path.index(after: dot)...])
    }

    /// Checks this setting's value in `limits`.
    /// - Throws: ``LimitError`` naming the flag, the value and the range.
    public func check(_ limits: Limits) throws(LimitError) {
        let value = limits[keyPath: field]
        guard range.contains(value) else { throw LimitError(flag: flag, value: value, range: range, unit: unit) }
    }
}

/// A limit set to a value the gateway cannot run with. Recoverable: `flowsync-gateway`
/// prints it and exits (status 64) before it binds anything.
public struct LimitError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The flag that set it.
    public let flag: String
    /// The refused value.
    public let value: Int
    /// The values accepted, inclusive.
    public let range: ClosedRange<Int>
    /// What the number counts.
    public let unit: String

    public init(flag: String, value: Int, range: ClosedRange<Int>, unit: String) {
        self.flag = flag
        self.value = value
        self.range = range
        self.unit = unit
    }

    public var description: String {
        "\(flag) must be from \(range.lowerBound) to \(range.upperBound) \(unit), got \(value)"
    }
}

/// Limits checked against their ``settings`` table.
public protocol CheckedLimits {
    /// Every limit of this kind, once.
    static var settings: [LimitSetting<Self>] { get }
}

extension CheckedLimits {
    /// Checks every limit against its range, in the order of ``settings``.
    /// - Throws: ``LimitError`` for the first limit out of range.
    public func validate() throws(LimitError) {
        for setting in Self.settings { try setting.check(self) }
    }
}

/// Bounds shared by the settings tables (and `GatewayConfiguration`'s own checks): past
/// them a value is a typo, not a choice.
public enum LimitBounds {
    /// 1 GiB: no message, body or queue of the gateway is meant to be larger (and NIO's
    /// WebSocket frame decoder takes at most `UInt32.max`).
    public static let bytes = 1 << 30
    /// 24 hours.
    public static let milliseconds = 86_400_000
    /// Ten million of anything counted per gateway or per socket.
    public static let count = 10_000_000
}
