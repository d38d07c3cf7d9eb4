/// The one monotonic clock of FlowSync's shells (daemon, SDK, load tester, tests), for
/// time differences: latencies, timeouts, deadlines. Swift's `ContinuousClock` (no C
/// call, no platform import, so it builds for the SDK's Apple platforms too), read as
/// integers from an origin taken once per process.
///
/// Not for: the event loop's own time (`EventLoop.now`, which libuv caches per loop
/// turn), token expiry (wall-clock seconds, `TokenVerifier`), or systemd's
/// `MONOTONIC_USEC=`, which must be the absolute value of `CLOCK_MONOTONIC` by protocol
/// (`SystemdNotifier.reloading()`). Nothing in the core's model reads it: the pure
/// machines take the time as an argument.
public enum MonotonicClock {
    /// The process's origin: values are meaningful only as differences.
    private static let origin = ContinuousClock.now

    /// Nanoseconds since this process's origin; never decreases.
    public static func nanoseconds() -> UInt64 {
        origin.duration(to: .now).wholeNanoseconds
    }

    /// Milliseconds since this process's origin; never decreases.
    public static func milliseconds() -> UInt64 {
        nanoseconds() / 1_000_000
    }
}

extension Duration {
    /// This (non-negative) duration in whole nanoseconds, saturating at `UInt64.max`.
    var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled &+ UInt64(attoseconds / 1_000_000_000)
    }
}
