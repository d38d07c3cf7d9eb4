import Testing

@testable import FlowSyncServer

/// Rendezvous placement (cluster mode): stable, balanced, and moving only what must move.
@Suite(.timeLimit(.minutes(2))) struct PlacementTests {
    let lists = (0..<12_000).map { "list-\($0)" }

    @Test func everyNodeAgreesWhateverTheOrderOfTheNodes() {
        for list in lists.prefix(500) {
            #expect(
                Placement.owner(of: list, among: ["a", "b", "c"]) == Placement.owner(of: list, among: ["c", "a", "b"]))
        }
        #expect(Placement.owner(of: "x", among: [String]()) == nil)
        #expect(Placement.owner(of: "x", among: ["only"]) == "only")
    }

    /// Pinned values: the weight must never change between versions (nodes of two
    /// versions in one cluster must agree).
    @Test func theWeightIsStable() {
        #expect(Placement.weight(node: "n1", list: "todo") == 8_671_588_833_412_740_183)
        #expect(Placement.weight(node: "flowsync-2", list: "orders/β") == 12_150_872_448_317_569_545)
        #expect(
            (0..<6).map { Placement.owner(of: "list-\($0)", among: ["n1", "n2", "n3"])! } == [
                "n1", "n2", "n2", "n2", "n2", "n1",
            ])
    }

    @Test func listsSpreadEvenlyOverTheNodes() {
        for nodes in [["n1", "n2", "n3"], ["a", "b", "c", "d", "e"], ["flowsync-1", "flowsync-2"]] {
            var counts: [String: Int] = [:]
            for list in lists { counts[Placement.owner(of: list, among: nodes)!, default: 0] += 1 }
            let fair = Double(lists.count) / Double(nodes.count)
            for node in nodes {
                let share = Double(counts[node] ?? 0) / fair
                #expect(
                    share > 0.9 && share < 1.1,
                    "\(node): \(counts[node] ?? 0) of \(lists.count) lists over \(nodes.count) nodes")
            }
        }
    }

    @Test func aNodeLeavingMovesOnlyItsListsAndANodeJoiningTakesAboutItsShare() {
        let three = ["n1", "n2", "n3"], four = ["n1", "n2", "n3", "n4"]
        var movedOnLeave = 0, movedOnJoin = 0
        for list in lists {
            let before = Placement.owner(of: list, among: three)!
            let after = Placement.owner(of: list, among: ["n1", "n3"])!
            if before != "n2" {
                #expect(after == before, "\(list) moved from \(before) though n2 left")
            } else {
                movedOnLeave += 1
            }
            let joined = Placement.owner(of: list, among: four)!
            if joined != before {
                #expect(joined == "n4", "\(list) moved from \(before) to \(joined), not to the new node")
                movedOnJoin += 1
            }
        }
        let share = Double(movedOnJoin) / Double(lists.count)
        #expect(share > 0.22 && share < 0.28, "a fourth node takes about 1/4: \(share)")
        #expect(movedOnLeave > 0)
    }
}
