import FlowSyncCore
import FlowSyncProtocol
import Foundation

/// The shell's timers: the session's periodic tick (handshake deadline, heartbeat) and
/// the in-band token refresh before a JWT expires.
extension ClientCore {
    /// Starts the periodic tick unless it runs (it stops itself once the session is closed).
    func startTicker() {
        let due = withLock { state -> Bool in
            guard !state.tickerRunning else { return false }
            state.tickerRunning = true
            return true
        }
        if due { scheduleTick() }
    }

    /// With a token provider and ``FlowSyncClient/Configuration/refreshesTokenInBand``:
    /// when the connection's token (a JWT) expires within
    /// ``FlowSyncClient/Configuration/tokenRefreshMarginSeconds``, ask the provider for
    /// a new one (outside the lock) and send it in a RefreshToken; the connection and
    /// its subscriptions stay. Tokens whose `exp` cannot be read are not refreshed here
    /// (the expiry close and reconnect still work).
    private func refreshTokenIfDue() {
        guard configuration.refreshesTokenInBand, let provider = configuration.tokenProvider else { return }
        let (current, ready) = read { ($0.session.token, $0.session.phase == .ready) }
        guard ready, let current, let exp = Self.expiry(ofJWT: current),
            exp - Date().timeIntervalSince1970 <= configuration.tokenRefreshMarginSeconds
        else { return }
        guard let fresh = provider(), fresh != current else { return }
        input { $0.refresh(token: fresh) }
    }

    /// The `exp` claim of a compact JWT, read without verifying it (the server does).
    static func expiry(ofJWT token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return (claims["exp"] as? NSNumber)?.doubleValue
    }

    /// Every second, or four times per heartbeat when that is shorter (a dead path is
    /// then found within about 2.25 heartbeats).
    private func scheduleTick() {
        let heartbeat = read { $0.session.heartbeatMilliseconds }
        let period = heartbeat > 0 ? min(1_000, max(10, heartbeat / 4)) : 1_000
        transport.schedule(after: period) { [weak self] in
            guard let self else { return }
            self.refreshTokenIfDue()
            let again = self.withLock { state -> Bool in
                if state.session.phase == .closed {
                    state.tickerRunning = false
                    return false
                }
                self.perform(state.session.tick(now: Self.now()), &state)
                return true
            }
            if again { self.scheduleTick() }
        }
    }
}
