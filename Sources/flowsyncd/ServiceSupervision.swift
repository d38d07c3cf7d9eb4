import FlowSyncLoop
import FlowSyncServer

/// What `flowsyncd` tells systemd, and when (docs/ARCHITECTURE.md, "systemd"):
/// `READY=1` once the listener is up, `WATCHDOG=1` from a loop timer, a `STATUS=` line
/// every few seconds, `RELOADING=1`/`READY=1` around a SIGHUP reload, `STOPPING=1`
/// when shutdown starts. Loop-confined; without `$NOTIFY_SOCKET` it starts no timers.
final class ServiceSupervision {
    /// How often the `STATUS=` line is refreshed, in milliseconds of loop time.
    static let statusPeriod: UInt64 = 5_000

    let notifier: SystemdNotifier
    private let server: Server
    private var watchdogTimer: LoopTimer?
    private var statusTimer: LoopTimer?
    /// The previous status sample, for the batches-per-second rate.
    private var lastSample: (at: UInt64, batches: Int)

    init(server: Server, notifier: SystemdNotifier) {
        self.server = server
        self.notifier = notifier
        lastSample = (server.loop.now, server.statistics.batchesCommitted)
    }

    /// The listener is up: `READY=1` with a first status, then the periodic timers.
    func started() {
        notifier.ready(status: statusLine())
        guard notifier.isEnabled else { return }
        if let interval = notifier.watchdogInterval {
            // The ping comes from a timer on the event loop itself, not from a helper
            // thread: if a callback blocks or spins, the loop stops turning, the pings
            // stop, and systemd kills and restarts the daemon. A thread would keep
            // pinging for a dead loop.
            let milliseconds = max(
                1,
                UInt64(interval.components.seconds) * 1_000
                    + UInt64(interval.components.attoseconds / 1_000_000_000_000_000))
            let timer = LoopTimer(loop: server.loop)
            timer.start(after: milliseconds, repeat: milliseconds) { [notifier] in notifier.watchdog() }
            // Unreferenced: supervision must never be what keeps the loop running.
            timer.unref()
            watchdogTimer = timer
        }
        let timer = LoopTimer(loop: server.loop)
        timer.start(after: Self.statusPeriod, repeat: Self.statusPeriod) { [weak self] in
            guard let self else { return }
            notifier.status(statusLine())
        }
        timer.unref()
        statusTimer = timer
    }

    /// Before a SIGHUP reload.
    func reloading() {
        notifier.reloading()
    }

    /// After a SIGHUP reload, successful or not: systemd waits for `READY=1` to leave
    /// the "reloading" state, so it is sent either way; the status says which.
    func reloaded(_ outcome: String) {
        notifier.ready(status: "\(outcome); \(statusLine())")
    }

    /// Shutdown starts. The watchdog keeps pinging through the grace period (a stalled
    /// shutdown is still a stalled loop); the status timer stops, its line would only
    /// repeat the figures.
    func stopping() {
        notifier.stopping()
        notifier.status("shutting down: \(server.connectionCount) connections to close")
        statusTimer?.close()
        statusTimer = nil
    }

    /// Closes the timers, so the loop stops with no handle left open. Idempotent.
    func close() {
        watchdogTimer?.close()
        statusTimer?.close()
        watchdogTimer = nil
        statusTimer = nil
    }

    /// "listening on 127.0.0.1:7400; 3 lists, 12 connections, 41.5 batches/s" — the
    /// rate over the time since the previous line.
    func statusLine() -> String {
        let now = server.loop.now
        let batches = server.statistics.batchesCommitted
        let elapsed = now - lastSample.at
        let rate = elapsed == 0 ? 0 : Double(batches - lastSample.batches) * 1_000 / Double(elapsed)
        lastSample = (now, batches)
        let rounded = (rate * 10).rounded() / 10
        return
            "listening on \(server.configuration.host):\(server.port); \(server.listNames.count) lists, \(server.connectionCount) connections, \(rounded) batches/s"
    }
}
