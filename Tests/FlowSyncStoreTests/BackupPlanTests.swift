import FlowSyncCore
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// ``BackupPlan`` against a simulated server in which lists load, finish loading and
/// unload at random between the plan's steps and while a chunk is read: every stored
/// list is taken exactly once, never read from disk while it is loaded or loading, and
/// the plan finishes.
@Suite(.timeLimit(.minutes(2))) struct BackupPlanTests {
    enum State { case disk, loading, memory }

    @Test func everyListIsTakenOnceAndNeverReadWhileLoaded() async throws {
        let failures = try await offThePool { () -> [String] in
            var failures: [String] = []
            for seed in UInt64(1)...3_000 {
                if let failure = Self.run(seed: seed) { failures.append(failure) }
                if failures.count >= 5 { break }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// One seeded run; the failure, if any.
    static func run(seed: UInt64) -> String? {
        var random = SeededRandom(seed: seed)
        let count = random.int(0...120)
        let keys = (0..<count).map { "k\($0)" }
        var state = [String: State]()
        // Some lists are loaded at the start (taken then, not part of the plan).
        var planned: [String] = []
        for key in keys {
            switch random.int(0...5) {
            case 0: state[key] = .memory
            case 1:
                state[key] = .loading
                planned.append(key)
            default:
                state[key] = .disk
                planned.append(key)
            }
        }
        var plan = BackupPlan(keys: planned, chunkSize: random.int(1...20))
        var taken: [String: Int] = [:]
        var blocked: [String] = []
        // Loads, load completions and unloads at random: what the loop does between two
        // of the plan's steps (a backup never stops them, it only holds a load).
        func churn(_ rounds: Int, random: inout SeededRandom) {
            for _ in 0..<rounds {
                guard let key = keys.randomElement(using: &random) else { return }
                switch state[key]! {
                case .disk:
                    if plan.blocksLoad(ofKey: key) {
                        if !blocked.contains(key) { blocked.append(key) }
                    } else {
                        state[key] = .loading
                    }
                case .loading: state[key] = .memory
                case .memory: state[key] = .disk
                }
            }
        }
        for step in 0..<10_000 {
            churn(random.int(0...6), random: &random)
            let next = plan.next { key in
                switch state[key]! {
                case .memory: return .memory(name: key)
                case .loading: return .loading
                case .disk: return .disk
                }
            }
            switch next {
            case .finished:
                let missing = planned.filter { taken[$0] == nil }
                let twice = taken.filter { $0.value > 1 }.map(\.key)
                if !missing.isEmpty || !twice.isEmpty {
                    return "seed \(seed): missing \(missing), taken twice \(twice)"
                }
                if !blocked.isEmpty { return "seed \(seed): loads still held: \(blocked)" }
                return nil
            case .waitForLoads:
                // Only possible while a load is under way; one finishes.
                guard let loading = keys.first(where: { state[$0] == .loading }) else {
                    return "seed \(seed): waits for loads with none under way (step \(step))"
                }
                state[loading] = .memory
            case .take(let chunk):
                if chunk.fromMemory.count + chunk.fromDisk.count > plan.chunkSize {
                    return "seed \(seed): chunk over its size"
                }
                for name in chunk.fromMemory {
                    if state[name] != .memory { return "seed \(seed): \(name) taken from memory while \(state[name]!)" }
                    taken[name, default: 0] += 1
                }
                for key in chunk.fromDisk {
                    if state[key] != .disk { return "seed \(seed): \(key) read from disk while \(state[key]!)" }
                    taken[key, default: 0] += 1
                }
                // While the chunk is read: churn, and every disk key must stay on disk.
                churn(random.int(0...10), random: &random)
                for key in chunk.fromDisk where state[key] != .disk {
                    return "seed \(seed): \(key) loaded while the backup read it"
                }
                plan.chunkTaken()
                // The held loads start now.
                for key in blocked { state[key] = .loading }
                blocked = []
            }
        }
        return "seed \(seed): not finished after 10,000 steps"
    }
}
