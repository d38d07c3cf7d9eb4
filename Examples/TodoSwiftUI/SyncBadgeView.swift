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
