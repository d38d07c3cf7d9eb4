import FlowSyncCore
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The connection machine's subscription table (issue #20: the fan-out reaches a flow by
/// its slot): against a dictionary as the oracle, a slot keeps its subscription for the
/// subscription's whole life, whatever else starts and ends meanwhile.
@Suite(.timeLimit(.minutes(2))) struct SubscriptionTableTests {
    func flow(_ n: UInt64) -> SubscriptionFlow { SubscriptionFlow(deliveredUpTo: ListVersion(epoch: 1, version: n)) }

    @Test func slotsAreStableAndFreedSlotsAreReused() {
        var table = SubscriptionTable()
        let a = table.insert(flow(1), for: "a")
        let b = table.insert(flow(2), for: "b")
        let c = table.insert(flow(3), for: "c")
        #expect([a, b, c] == [0, 1, 2])
        #expect(table.removeValue(forKey: "b")?.delivered.version == 2)
        #expect(table.slot(of: "c") == c, "the others keep their slots")
        #expect(table.insert(flow(4), for: "d") == b, "a freed slot is reused")
        table.updateFlow(inSlot: c, of: "c") { $0.fellBehind() }
        #expect(table["c"]?.state == .lagging)
        #expect(table.names(where: { $0.state == .lagging }) == ["c"])
        table["a"] = nil
        table["c"] = nil
        table["d"] = nil
        #expect(table.isEmpty && table.count == 0)
        #expect(table.insert(flow(5), for: "e") == 0, "an emptied table starts over")
        table.checkInvariants()
    }

    @Test func seededAgainstADictionary() {
        for seed in UInt64(1)...300 {
            var random = SeededRandom(seed: seed)
            var table = SubscriptionTable()
            var oracle: [String: (slot: Int, version: UInt64)] = [:]
            for step in 0..<200 {
                let name = "l\(random.int(0..<12))"
                switch random.int(0..<3) {
                case 0 where oracle[name] == nil:
                    let version = UInt64(step)
                    let slot = table.insert(flow(version), for: name)
                    #expect(!oracle.values.contains { $0.slot == slot }, "seed \(seed): slot \(slot) given twice")
                    oracle[name] = (slot, version)
                case 1:
                    #expect(table.removeValue(forKey: name)?.delivered.version == oracle[name]?.version, "seed \(seed)")
                    oracle[name] = nil
                default:
                    if let (slot, _) = oracle[name] {
                        let version = UInt64(1_000 + step)
                        table.updateFlow(inSlot: slot, of: name) { $0 = self.flow(version) }
                        oracle[name] = (slot, version)
                    }
                }
                table.checkInvariants()
                #expect(table.count == oracle.count, "seed \(seed)")
                for (name, entry) in oracle {
                    #expect(
                        table.slot(of: name) == entry.slot && table[name]?.delivered.version == entry.version,
                        "seed \(seed), \(name)")
                }
            }
        }
    }
}
