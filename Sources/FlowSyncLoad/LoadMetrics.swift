#if canImport(Glibc)
import Glibc
#endif

/// The counters and latency recorders of one run. Loop-confined: every load client
/// lives on the one load loop thread, so nothing here is locked.
///
/// Counts that describe throughput are taken only while ``measuring`` (between the end
/// of the warm-up and the end of the measured time); latencies only for mutations whose
/// intended send time falls in that window. Correctness counts (errors, gaps, digest
/// mismatches) are kept for the whole run.
final class LoadMetrics {
    /// True inside the measured window.
    public var measuring = false
    /// Start of the measured window (monotonic ns).
    public var windowStart: UInt64 = 0

    // Connections (whole run).
    public var subscribersEstablished = 0
    public var writersEstablished = 0
    public var connectionsFailed = 0
    public var connectionFailureExamples: [String] = []
    public var reconnects = 0
    /// Subscriber connections the daemon ended (they back off and resume).
    public var unexpectedDisconnects = 0
    /// Of ``reconnects``, those after the daemon ended the connection (not the resume
    /// storm's deliberate drops).
    public var reconnectsAfterDisconnect = 0
    /// Of those, the ones announced by an Error (3009 slow consumer, 3010 write timeout,
    /// 5000 shutting down).
    public var serverCloses = 0

    // Writes (window).
    public var mutationsSent = 0
    public var mutationsAcked = 0
    public var mutationsRejected = 0
    public var rejectsByCode: [UInt16: Int] = [:]
    // Writes (whole run, for the lost-ack check).
    public var totalSent = 0
    public var totalAnswered = 0
    public var rejectExamples: [String] = []

    // Deliveries (window).
    public var batchDeliveries = 0
    public var catchUpDiffs = 0
    public var snapshots = 0
    public var rowChangesDelivered = 0
    public var wireBytes = 0
    public var rawBytes = 0

    // Latency (window, by intended send time).
    public var writeToDelivery = LatencyRecorder()
    public var writeToAck = LatencyRecorder()
    /// From the actual send (service time, without the schedule's slip).
    public var sendToAck = LatencyRecorder()
    /// With several endpoints: write → delivery where the writer and the subscriber are
    /// on different endpoints (write on A → delivery on B), and on the same one.
    public var crossEndpointDelivery = LatencyRecorder()
    public var sameEndpointDelivery = LatencyRecorder()
    /// Per-second samples for the HTML report; `nil` until the first subscriber connects.
    var timeline: TimelineSampler?

    /// Records one write → delivery latency (measured window) in the window's and the
    /// current second's histograms.
    @inline(__always)
    func recordDelivery(nanoseconds: Int64) {
        writeToDelivery.record(nanoseconds: nanoseconds)
        timeline?.secondWriteToDelivery.record(nanoseconds: nanoseconds)
    }

    /// Records one write → ack latency (measured window), as ``recordDelivery(nanoseconds:)``.
    @inline(__always)
    func recordAck(nanoseconds: Int64) {
        writeToAck.record(nanoseconds: nanoseconds)
        timeline?.secondWriteToAck.record(nanoseconds: nanoseconds)
    }

    // Correctness (whole run).
    public var protocolErrors = 0
    public var protocolErrorExamples: [String] = []
    public var gaps = 0
    public var digestMismatches = 0
    public var applyFailures = 0
    public var problemExamples: [String] = []

    /// Empty metrics.
    public init() {}

    /// Starts the measured window: throughput counters and latencies restart from zero.
    public func startWindow(at now: UInt64) {
        windowStart = now
        measuring = true
        mutationsSent = 0
        mutationsAcked = 0
        mutationsRejected = 0
        rejectsByCode = [:]
        batchDeliveries = 0
        catchUpDiffs = 0
        snapshots = 0
        rowChangesDelivered = 0
        wireBytes = 0
        rawBytes = 0
        writeToDelivery.reset()
        crossEndpointDelivery.reset()
        sameEndpointDelivery.reset()
        writeToAck.reset()
        sendToAck.reset()
    }

    /// Records a protocol error (kept: the first few texts, for the report).
    public func protocolError(_ text: String) {
        protocolErrors += 1
        if protocolErrorExamples.count < 10 { protocolErrorExamples.append(text) }
    }

    /// Records a replica problem (gap, digest mismatch, changeset that does not apply).
    public func problem(_ text: String) {
        if problemExamples.count < 10 { problemExamples.append(text) }
    }

    /// Records a failed connection attempt.
    public func connectionFailed(_ text: String) {
        connectionsFailed += 1
        if connectionFailureExamples.count < 5 { connectionFailureExamples.append(text) }
    }
}
