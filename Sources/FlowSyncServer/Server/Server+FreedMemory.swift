#if canImport(Glibc)
/// glibc's `int malloc_trim(size_t pad)` (`<malloc.h>`, which the Glibc module does not
/// export).
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

/// Giving freed memory back to the system after a burst of TLS handshakes or of queued
/// bytes: ``AllocatorTrimPolicy`` holds the rules and why; this is its shell.
extension Server {
    /// From the 100 ms sweep, with the bytes queued over all connections at this sweep.
    func returnFreedMemory(queuedBytes total: Int, now: UInt64) {
        var ended = 0
        if let statistics = tls?.events.statistics {
            ended = statistics.handshakes + statistics.failuresByReason.values.reduce(0, +)
        }
        guard
            let burst = housekeeping.trim.burstToTrim(
                now: now, handshakesEnded: ended, handshakesWaiting: tls?.pacer.hasWaiting ?? false, queuedBytes: total)
        else { return }
        #if canImport(Glibc)
        // Timed because the trim holds the loop (a walk of the free chunks).
        let took = ContinuousClock().measure { _ = glibcMallocTrim(0) }
        logger.info(
            "allocator trimmed after \(burst)",
            metadata: [
                "trim_us": "\(took.components.attoseconds / 1_000_000_000_000 + took.components.seconds * 1_000_000)"
            ])
        #endif
        events.memoryTrimmed()
    }
}
