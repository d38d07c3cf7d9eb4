import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The systemd notify protocol (`sd_notify(3)`), spoken directly: one datagram per
/// call to the `AF_UNIX` socket named by `$NOTIFY_SOCKET`. No libsystemd, so the daemon
/// builds and runs the same where systemd is absent.
///
/// - When `$NOTIFY_SOCKET` is unset (not started by systemd), every call is a no-op.
/// - Sends never block (the socket is nonblocking) and never fail the caller: a
///   supervisor that stopped listening must not stop the daemon. The first failure is
///   logged at warning level, later ones not at all (a watchdog ping every few seconds
///   would otherwise flood the journal with the same line).
/// - Not guaranteed: delivery. Datagrams can be dropped when systemd's queue is full;
///   the protocol is fire-and-forget by design.
///
/// Loop-confined like ``Server``: create and use it on one thread.
public final class SystemdNotifier {
    /// The socket address as given in `$NOTIFY_SOCKET` (`@name` for an abstract
    /// socket), or `nil` when the process was not started with one.
    public let socketPath: String?

    /// How often to send ``watchdog()``: half of `$WATCHDOG_USEC`, as `sd_watchdog_enabled(3)`
    /// recommends, so one late ping is not yet a missed deadline. `nil` when the watchdog
    /// is off, or `$WATCHDOG_PID` names another process (the variables were inherited).
    public let watchdogInterval: Duration?

    private var logger: Logger
    private var descriptor: Int32 = -1
    private var address = sockaddr_un()
    private var addressLength = socklen_t(0)
    private var reportedFailure = false

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`
    /// (default: the process environment) and opens the datagram socket.
    ///
    /// An unusable `NOTIFY_SOCKET` (too long, not a path, socket creation failed) is
    /// logged and treated as unset.
    public init(environment: [String: String]? = nil, logger: Logger) {
        func variable(_ name: String) -> String? {
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        self.logger = logger
        let path = variable("NOTIFY_SOCKET").flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        watchdogInterval = Self.watchdogInterval(
            microseconds: variable("WATCHDOG_USEC"), pid: variable("WATCHDOG_PID"))
        if let path { openSocket(path) }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Halves `WATCHDOG_USEC`; `nil` when unset, not a positive number, or meant for
    /// another process.
    static func watchdogInterval(microseconds: String?, pid: String?) -> Duration? {
        guard let microseconds, let usec = UInt64(microseconds), usec > 0 else { return nil }
        if let pid {
            // Set by systemd for the main process; a child that inherited the
            // environment must not ping on its parent's behalf.
            guard let owner = Int32(pid), owner == getpid() else { return nil }
        }
        return .microseconds(usec / 2)
    }

    /// True when notifications go somewhere (`$NOTIFY_SOCKET` was set and usable).
    public var isEnabled: Bool { descriptor >= 0 }

    // MARK: Messages

    /// `READY=1`: startup (or a reload) is complete. `status` goes along as `STATUS=`.
    public func ready(status: String? = nil) {
        send(["READY=1"] + Self.statusLine(status))
    }

    /// `STATUS=…`: a one-line, human-readable state shown by `systemctl status`.
    public func status(_ text: String) {
        send(Self.statusLine(text))
    }

    /// `WATCHDOG=1`: the service is alive. Must come at least every `WatchdogSec`.
    public func watchdog() {
        send(["WATCHDOG=1"])
    }

    /// `RELOADING=1` with `MONOTONIC_USEC=` (`CLOCK_MONOTONIC`, µs): a reload starts.
    /// systemd (≥ 253) uses the timestamp to match the reload it asked for; older
    /// versions ignore it. Follow with ``ready(status:)`` when the reload is done —
    /// whether it succeeded or not, or the unit stays "reloading".
    public func reloading() {
        // Not FlowSync's MonotonicClock (an origin-relative reading for differences):
        // the protocol wants the absolute value of CLOCK_MONOTONIC, as systemd reads it.
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"])
    }

    /// `STOPPING=1`: shutdown has started.
    public func stopping() {
        send(["STOPPING=1"])
    }

    /// A `STATUS=` assignment is one line: newlines would start new assignments.
    private static func statusLine(_ text: String?) -> [String] {
        guard let text else { return [] }
        return ["STATUS=" + text.split(whereSeparator: \.isNewline).joined(separator: " ")]
    }

    // MARK: Socket

    private func openSocket(_ path: String) {
        var bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.first == UInt8(ascii: "/") || bytes.first == UInt8(ascii: "@") else {
            logger.warning(
                "NOTIFY_SOCKET is neither a path nor an abstract name; not notifying systemd",
                metadata: ["flowsync.notify_socket": "\(path)"])
            return
        }
        let abstract = bytes.first == UInt8(ascii: "@")
        // An abstract name has no terminating NUL (its length is the address length);
        // a path needs room for one.
        guard bytes.count + (abstract ? 0 : 1) <= capacity else {
            logger.warning(
                "NOTIFY_SOCKET is too long; not notifying systemd", metadata: ["flowsync.notify_socket": "\(path)"])
            return
        }
        if abstract { bytes[0] = 0 }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        addressLength = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1))
        // Nonblocking: a send must never stall the event loop. Close-on-exec: no child
        // should inherit a channel to the service manager.
        let fd = socket(
            AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            reportFailure("socket", errno)
            return
        }
        descriptor = fd
    }

    private func send(_ assignments: [String]) {
        guard descriptor >= 0, !assignments.isEmpty else { return }
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { buffer in
                    sendto(
                        descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), socketAddress, addressLength)
                }
            }
        }
        if sent < 0 { reportFailure("sendto", errno) }
    }

    private func reportFailure(_ call: String, _ code: Int32) {
        guard !reportedFailure else { return }
        reportedFailure = true
        logger.warning(
            "cannot notify systemd; further failures are not logged",
            metadata: [
                "flowsync.notify_socket": "\(socketPath ?? "")",
                "error": "\(call): \(String(cString: strerror(code)))",
            ])
    }
}
