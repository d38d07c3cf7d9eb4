/// One second of a run, as the load tool saw it: what the HTML report's "over the run"
/// charts plot (``LoadReportPage``).
///
/// Samples start when the subscribers begin to connect and are taken every second on
/// the load loop until the writers stop. Throughput and latency are only counted inside
/// the measured window (as everywhere in ``LoadReport``), so they are `nil` outside it;
/// connections are counted for the whole run.
public struct TimelineSample: Codable, Sendable, Hashable {
    /// The part of the run a sample falls in.
    public enum Phase: String, Codable, Sendable, Hashable {
        /// Subscribers and writers connecting, before any write.
        case connect
        /// Writers running, not measured yet.
        case warmUp = "warm-up"
        /// The measured window.
        case measure
        /// After the window: the writers stop and the last answers arrive.
        case drain
    }

    /// Seconds since the subscribers began to connect (the end of this sample's second).
    public var seconds: Double
    public var phase: Phase
    /// Subscriber and writer connections ready (handshake done) at the sample.
    public var subscribers: Int
    public var writers: Int
    /// Over the second: mutations answered (Ack or Reject; those due in the window), batch Diff frames received
    /// (summed over subscribers), row changes in them. `nil` outside the window.
    public var answeredPerSecond: Double?
    public var deliveriesPerSecond: Double?
    public var rowChangesPerSecond: Double?
    /// p99 over the second, in microseconds (mutations due in the window only); `nil`
    /// outside the window or when nothing was recorded in that second.
    public var p99WriteToDeliveryMicroseconds: Double?
    public var p99WriteToAckMicroseconds: Double?

    public init(
        seconds: Double, phase: Phase, subscribers: Int, writers: Int, answeredPerSecond: Double? = nil,
        deliveriesPerSecond: Double? = nil, rowChangesPerSecond: Double? = nil,
        p99WriteToDeliveryMicroseconds: Double? = nil, p99WriteToAckMicroseconds: Double? = nil
    ) {
        self.seconds = seconds
        self.phase = phase
        self.subscribers = subscribers
        self.writers = writers
        self.answeredPerSecond = answeredPerSecond
        self.deliveriesPerSecond = deliveriesPerSecond
        self.rowChangesPerSecond = rowChangesPerSecond
        self.p99WriteToDeliveryMicroseconds = p99WriteToDeliveryMicroseconds
        self.p99WriteToAckMicroseconds = p99WriteToAckMicroseconds
    }
}

/// A latency distribution as HdrHistogram plots it: the value at each percentile.
public struct PercentilePoint: Codable, Sendable, Hashable {
    /// 0…100.
    public var percentile: Double
    public var microseconds: Double

    public init(percentile: Double, microseconds: Double) {
        self.percentile = percentile
        self.microseconds = microseconds
    }
}

/// Takes the per-second samples of a run: the counters' change since the previous
/// sample, and p99s from histograms that start afresh every second. Loop-confined.
struct TimelineSampler {
    private(set) var samples: [TimelineSample] = []
    private let start: UInt64
    private var last: (at: UInt64, answered: Int, frames: Int, rows: Int)
    /// Latencies of the current second only (recorded beside the window's histograms).
    var secondWriteToDelivery = LatencyRecorder()
    var secondWriteToAck = LatencyRecorder()

    /// Starts at `start`, when nothing is connected yet (the first sample, at 0 s).
    init(start: UInt64) {
        self.start = start
        last = (start, 0, 0, 0)
        samples.append(TimelineSample(seconds: 0, phase: .connect, subscribers: 0, writers: 0))
    }

    /// Takes the sample for the second that ends `now`.
    mutating func sample(
        now: UInt64, phase: TimelineSample.Phase, metrics m: LoadMetrics, subscribers: Int, writers: Int
    ) {
        // The second in which the window opened counts only its part inside the window.
        let from = phase == .measure && m.windowStart > last.at ? m.windowStart : last.at
        let dt = Double(now &- min(from, now)) / 1e9
        // The window's counters restart from zero when it opens.
        func delta(_ current: Int, _ previous: Int) -> Int { current >= previous ? current - previous : current }
        let answered = m.mutationsAcked + m.mutationsRejected
        var sample = TimelineSample(
            seconds: Double(now &- start) / 1e9, phase: phase, subscribers: subscribers, writers: writers)
        if phase == .measure, dt > 0 {
            sample.answeredPerSecond = Double(delta(answered, last.answered)) / dt
            sample.deliveriesPerSecond = Double(delta(m.batchDeliveries, last.frames)) / dt
            sample.rowChangesPerSecond = Double(delta(m.rowChangesDelivered, last.rows)) / dt
            if secondWriteToDelivery.count > 0 {
                sample.p99WriteToDeliveryMicroseconds = secondWriteToDelivery.microseconds(atPercentile: 99)
            }
            if secondWriteToAck.count > 0 {
                sample.p99WriteToAckMicroseconds = secondWriteToAck.microseconds(atPercentile: 99)
            }
        }
        samples.append(sample)
        last = (now, answered, m.batchDeliveries, m.rowChangesDelivered)
        secondWriteToDelivery.reset()
        secondWriteToAck.reset()
    }
}
