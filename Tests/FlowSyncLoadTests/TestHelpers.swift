import FlowSyncLoad
import Foundation

/// Runs a load test on a thread of its own. `LoadRunner.run()` blocks while it waits
/// for the load loop; inside `Task.detached` it would hold one of the few cooperative
/// threads (2 on this machine) and starve other suites' async work — e.g. the task that
/// stops an embedded daemon mid-run.
func runLoad(_ configuration: LoadConfiguration, scenario: String? = "test") async throws -> LoadReport {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(
                    returning: try LoadRunner(configuration: configuration, scenario: scenario, progress: false).run())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
