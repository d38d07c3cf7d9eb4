import FlowSyncClient
import FlowSyncGatewayCore
import Foundation
import Logging

/// Every configured hook's deliveries, one ``WebhookListDelivery`` per (hook, list), run as
/// child tasks of ``run()``: a receiver that is down holds back only its own pairs.
final class WebhookService: Sendable {
    let deliveries: [WebhookListDelivery]

    init(hooks: [WebhookConfiguration], endpoints: [Endpoint], store: any WebhookCursorStore, logger: Logger) {
        deliveries = hooks.flatMap { hook in
            hook.lists.map {
                WebhookListDelivery(hook: hook, list: $0, endpoints: endpoints, store: store, logger: logger)
            }
        }
    }

    /// Runs every delivery until cancelled; then stops each one and waits for its drain
    /// (its POST in flight answered and its cursor saved).
    func run() async {
        // Unstructured on purpose: a cancelled task's AsyncStream ends at once, and the
        // drain needs the delivery's event stream to keep going after the cancellation.
        let running = deliveries.map { delivery in Task { await delivery.run() } }
        await withTaskCancellationHandler {
            for task in running { await task.value }
        } onCancel: {
            for delivery in deliveries { delivery.stop() }
        }
    }

    /// `{"hooks": [{"hook", "list", "cursor", "queued", "overflows", "delivered", "failedAttempts", "subscriptions"}]}`.
    var statusJSON: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.key("hooks")
        w.beginArray()
        for delivery in deliveries {
            let status = delivery.status
            w.beginObject()
            w.member("hook", delivery.hook.name)
            w.member("list", delivery.list)
            w.key("cursor")
            if let cursor = status.cursor { w.string(ListPosition.text(cursor)) } else { w.null() }
            w.member("queued", status.queued)
            w.member("overflows", status.overflows)
            w.member("delivered", status.delivered)
            w.member("failedAttempts", status.failedAttempts)
            w.member("subscriptions", status.subscriptions)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}
