import FlowSyncClient
import SwiftUI

/// The offline badge: what the app says about the list's state, from the client's
/// connection status and the list's pending writes and origin.
struct SyncBadgeView: View {
    let status: ConnectionStatus
    let list: ListSnapshot

    var body: some View {
        if let text = SyncBadge.text(status: status, pendingWrites: list.pendingWrites, isFromDisk: list.isFromDisk) {
            Label {
                Text(text)
            } icon: {
                Image(systemName: SyncBadge.isOnline(status) ? "arrow.triangle.2.circlepath" : "wifi.slash")
            }
        }
    }
}

/// The badge's text, platform-neutral.
enum SyncBadge {
    /// `nil` when there is nothing to say (online, everything saved).
    static func text(status: ConnectionStatus, pendingWrites: Int, isFromDisk: Bool) -> String? {
        let waiting = pendingWrites == 0 ? "" : pendingWrites == 1 ? " · 1 change waiting" : " · \(pendingWrites) changes waiting"
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

    static func isOnline(_ status: ConnectionStatus) -> Bool {
        if case .connected = status { return true }
        return false
    }
}
