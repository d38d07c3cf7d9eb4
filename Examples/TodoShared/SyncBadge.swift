import FlowSyncClient

/// The offline badge's text: what the app says about the list's state, or `nil` when
/// there is nothing to say (online, everything saved). Platform-neutral, shared by both
/// example apps and checked by their tests.
enum SyncBadge {
    /// - Parameters:
    ///   - status: The client's connection status.
    ///   - pendingWrites: Edits shown that the server has not committed yet.
    ///   - isFromDisk: The list shows what a previous launch stored, not yet refreshed.
    static func text(status: ConnectionStatus, pendingWrites: Int, isFromDisk: Bool) -> String? {
        let waiting =
            pendingWrites == 0 ? "" : pendingWrites == 1 ? " · 1 change waiting" : " · \(pendingWrites) changes waiting"
        switch status {
        case .connected:
            if isFromDisk { return "Updating…" }
            return pendingWrites == 0 ? nil : "Saving" + waiting
        case .connecting:
            return "Connecting…" + waiting
        case .disconnected, .paused:
            return "Offline" + waiting
        case .closed:
            return "Stopped" + waiting
        }
    }

    /// Whether the client is connected (the badge's icon).
    static func isOnline(_ status: ConnectionStatus) -> Bool {
        if case .connected = status { return true }
        return false
    }
}
