import FlowSyncLoad
import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct OperationMixTests {
    @Test func parsesNamesAbbreviationsAndSeparators() throws {
        let mix = try OperationMix(parsing: "insert=40, rm:30,m=10,u=15,cross=5")
        #expect(mix[.insert] == 40)
        #expect(mix[.remove] == 30)
        #expect(mix[.move] == 10)
        #expect(mix[.update] == 15)
        #expect(mix[.crossSectionMove] == 5)
        #expect(mix[.section] == 0)
        #expect(mix.description == "insert=40,remove=30,move=10,update=15,cross=5")
        #expect(try OperationMix(parsing: mix.description) == mix)
    }

    @Test(arguments: [
        ("insert=50,remove=40", "add up to 90"),
        ("insert=50,remove=60", "add up to 110"),
        ("insert=50,teleport=50", "unknown kind 'teleport'"),
        ("insert=50,insert=50", "given twice"),
        ("insert=fifty,remove=50", "not a whole percentage"),
        ("insert", "is not NAME=PERCENT"),
        ("insert=150,remove=-50", "not within 0…100"),
    ])
    func refusesBadMixes(text: String, message: String) {
        #expect {
            _ = try OperationMix(parsing: text)
        } throws: { error in
            (error as? OperationMix.ParseError)?.description.contains(message) == true
        }
    }

    @Test func rollsMapCumulativelyInCaseOrder() throws {
        let mix = try OperationMix([.insert: 10, .update: 85, .section: 5])
        #expect(mix.kind(forRoll: 0) == .insert)
        #expect(mix.kind(forRoll: 9) == .insert)
        #expect(mix.kind(forRoll: 10) == .update)
        #expect(mix.kind(forRoll: 94) == .update)
        #expect(mix.kind(forRoll: 95) == .section)
        #expect(mix.kind(forRoll: 99) == .section)
        let counts = Dictionary(grouping: 0..<100, by: { mix.kind(forRoll: $0) }).mapValues(\.count)
        #expect(counts == [.insert: 10, .update: 85, .section: 5])
    }

    @Test func codableAsItsCommandLineText() throws {
        let data = try JSONEncoder().encode([OperationMix.everything])
        #expect(
            String(decoding: data, as: UTF8.self) == "[\"insert=30,remove=25,move=10,update=20,cross=10,section=5\"]")
        #expect(try JSONDecoder().decode([OperationMix].self, from: data) == [.everything])
    }
}

@Suite(.timeLimit(.minutes(2))) struct ScenarioTests {
    @Test(arguments: Scenario.allCases)
    func everyScenarioIsValid(scenario: Scenario) {
        let c = scenario.configuration
        #expect(c.validationErrors().isEmpty, "\(scenario): \(c.validationErrors())")
        #expect(Scenario(rawValue: scenario.rawValue) == scenario)
        #expect(!scenario.summary.isEmpty)
    }

    @Test func standardShapesMatchTheIssue() {
        let fanout = Scenario.fanout.configuration
        #expect(fanout.lists == 1 && fanout.subscribersPerList == 1_000 && fanout.writers == 1)
        let writers = Scenario.writers.configuration
        #expect(writers.lists == 1 && writers.writers == 50 && writers.subscribersPerList == 50)
        let many = Scenario.manyLists.configuration
        #expect(many.lists == 1_000 && many.subscribersPerList == 10)
        #expect(Scenario.resumeStorm.configuration.resumeStormSubscribers == 1_000)
        #expect(Scenario.slowConsumers.configuration.slowConsumers > 0)
        #expect(
            Set(Scenario.allCases.map(\.rawValue)).isSuperset(of: [
                "fanout", "writers", "mixed", "resume-storm", "slow-consumers",
            ]))
    }

    @Test func validationNamesTheOption() {
        var c = LoadConfiguration()
        c.lists = 0
        c.opsPerMutation = 0
        c.payloadBytes = 1
        c.resumeStormSubscribers = 1_000_000
        c.daemonStorage = "tape"
        c.daemonFsync = "sometimes"
        let errors = c.validationErrors().joined(separator: "\n")
        #expect(errors.contains("--storage"))
        #expect(errors.contains("--fsync"))
        #expect(errors.contains("--lists"))
        #expect(errors.contains("--ops-per-mutation"))
        #expect(errors.contains("--payload-bytes"))
        #expect(errors.contains("--resume-storm"))
    }

    /// Writers and lists: every list is written when there are writers, and the two
    /// mappings are each other's inverse.
    @Test(arguments: [(1, 1), (1, 50), (4, 8), (8, 4), (1_000, 100), (3, 7), (10, 1)])
    func writerAssignmentIsAConsistentCover(lists: Int, writers: Int) {
        var c = LoadConfiguration()
        c.lists = lists
        c.writers = writers
        var fromWriters: Set<[Int]> = []
        for w in 0..<writers {
            for l in c.lists(ofWriter: w) {
                #expect((0..<lists).contains(l))
                #expect(c.writers(ofList: l).contains(w), "list \(l) does not list writer \(w)")
                fromWriters.insert([l, w])
            }
        }
        var fromLists: Set<[Int]> = []
        for l in 0..<lists {
            #expect(!c.writers(ofList: l).isEmpty, "list \(l) has no writer")
            for w in c.writers(ofList: l) { fromLists.insert([l, w]) }
        }
        #expect(fromWriters == fromLists)
    }
}
