import Histogram

/// Percentiles of one latency distribution, in microseconds.
public struct LatencySummary: Hashable, Sendable, Codable {
    /// Values recorded.
    public var count: UInt64
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    /// A summary of nothing (all zero).
    public static let empty = LatencySummary(count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0)

    public init(count: UInt64, p50: Double, p90: Double, p99: Double, p999: Double, max: Double) {
        self.count = count
        self.p50 = p50
        self.p90 = p90
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }
}

/// Records latencies in nanoseconds into an HdrHistogram (3 significant digits, 1 ns to
/// 1 hour, so a stall is never clipped) and reports percentiles in microseconds.
///
/// - Complexity: O(1) per ``record(nanoseconds:)``; percentiles walk the buckets.
public struct LatencyRecorder: Sendable {
    private var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000, numberOfSignificantValueDigits: .three)

    /// An empty recorder.
    public init() {}

    /// Records one latency; negative values (clock noise) count as 0.
    public mutating func record(nanoseconds: Int64) {
        _ = histogram.record(UInt64(max(nanoseconds, 0)))
    }

    /// Records one latency `count` times (one batch delivered to several subscribers
    /// read in the same callback costs one call).
    public mutating func record(nanoseconds: Int64, count: UInt64) {
        guard count > 0 else { return }
        _ = histogram.record(UInt64(max(nanoseconds, 0)), count: count)
    }

    /// Values recorded.
    public var count: UInt64 { histogram.totalCount }

    /// Forgets every value (the end of the warm-up).
    public mutating func reset() { histogram.reset() }

    /// The value at `percentile` (0…100), in microseconds.
    public func microseconds(atPercentile percentile: Double) -> Double {
        guard histogram.totalCount > 0 else { return 0 }
        return Double(histogram.valueAtPercentile(percentile)) / 1_000
    }

    /// The percentiles an HdrHistogram percentile plot shows: dense towards the tail
    /// (x = 1 / (1 − p) on a log axis), from the median to 99.9999 %, then the max.
    public static let curvePercentiles: [Double] = [
        0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92.5, 95, 96.875, 98, 99, 99.5, 99.75,
        99.9, 99.95, 99.975, 99.99, 99.995, 99.999, 99.9995, 99.9999,
    ]

    /// The distribution as (percentile, µs) points for a percentile plot: each of
    /// ``curvePercentiles`` the recorded values can tell apart (p with 1 / (1 − p/100) at
    /// most the count: p99.99 needs 10,000 values), then 100 (the max). Empty when
    /// nothing was recorded.
    public func percentileCurve() -> [PercentilePoint] {
        let count = histogram.totalCount
        guard count > 0 else { return [] }
        var points = Self.curvePercentiles.filter { 1 / (1 - $0 / 100) <= Double(count) }
            .map { PercentilePoint(percentile: $0, microseconds: microseconds(atPercentile: $0)) }
        points.append(PercentilePoint(percentile: 100, microseconds: Double(histogram.max) / 1_000))
        return points
    }

    /// p50, p90, p99, p99.9 and max, in microseconds.
    public var summary: LatencySummary {
        guard histogram.totalCount > 0 else { return .empty }
        return LatencySummary(
            count: histogram.totalCount,
            p50: microseconds(atPercentile: 50), p90: microseconds(atPercentile: 90),
            p99: microseconds(atPercentile: 99), p999: microseconds(atPercentile: 99.9),
            max: Double(histogram.max) / 1_000
        )
    }
}
