import FlowSyncCore
import FlowSyncTestSupport

// flowsync-bench: release-mode benchmarks for the pure core.
//
//   swift run -c release flowsync-bench            # full run (figures for docs/BENCHMARKS.md)
//   swift run -c release flowsync-bench --quick    # small sizes, a smoke run for CI
//
// Every figure is a median over several runs in this one process, and comparisons
// (our diff vs the stdlib's) are ratios measured side by side, so a noisy shared
// machine moves both sides alike. No figure here is asserted: targets are checked by
// reading the printed ratio, never by a timed unit test.
#if canImport(Glibc)
import Glibc  // libm for rounding (no Foundation in the bench)
#endif

let quick = CommandLine.arguments.contains("--quick")
/// `--only NAME` runs one section: diff, incremental, digest, sequencer or large.
let only: String? = CommandLine.arguments.firstIndex(of: "--only").map { CommandLine.arguments[$0 + 1] }
func section(_ name: String) -> Bool { only == nil || only == name }
let clock = ContinuousClock()

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

/// Median and minimum wall time of `body` over `runs` runs (after one warm-up).
func measure(runs: Int, _ body: () -> Void) -> (median: Double, min: Double) {
    body()
    var times: [Double] = []
    for _ in 0..<runs { times.append(seconds(clock.measure(body))) }
    times.sort()
    return (times[times.count / 2], times[0])
}

func format(_ s: Double) -> String {
    if s >= 1 { return String(format2(s)) + " s" }
    if s >= 1e-3 { return format2(s * 1e3) + " ms" }
    if s >= 1e-6 { return format2(s * 1e6) + " µs" }
    return format2(s * 1e9) + " ns"
}

func format2(_ x: Double) -> String {
    let r = (x * 100).rounded() / 100
    return "\(r)"
}

@inline(never) func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }

// MARK: - Diff vs Swift's CollectionDifference, on DifferenceKit's benchmark shapes

/// Source of `count` rows; target with `deletes` removed, `inserts` new rows and
/// `moves` rows moved to random positions — the shape of DifferenceKit's benchmark.
func differenceKitShape(count: Int, deletes: Int, inserts: Int, moves: Int, seed: UInt64) -> ([Row], [Row]) {
    var random = SeededRandom(seed: seed)
    let source = (0..<count).map { Row(id: "id-\($0)-\(random.next() & 0xFFFF)", text: "{\"n\":\($0)}") }
    var target = source
    for _ in 0..<deletes { target.remove(at: random.int(0..<target.count)) }
    for k in 0..<inserts { target.insert(Row(id: "new-\(k)", text: "{}"), at: random.int(0...target.count)) }
    for _ in 0..<moves {
        let row = target.remove(at: random.int(0..<target.count))
        target.insert(row, at: random.int(0...target.count))
    }
    return (source, target)
}

print("# flowsync-bench\(quick ? " (quick)" : "")\n")
if section("diff") {
    print("## Diff: FlowSync vs Swift `difference(from:).inferringMoves()` (same data, same run)\n")
    print("| shape | FlowSync diff (median) | stdlib (median) | ratio |")
    print("| --- | --- | --- | --- |")
    let shapes: [(Int, Int, Int, Int)] =
        quick
        ? [(2_000, 400, 400, 80)]
        : [(5_000, 1_000, 1_000, 200), (100_000, 10_000, 10_000, 2_000)]
    for (count, deletes, inserts, moves) in shapes {
        let (source, target) = differenceKitShape(
            count: count, deletes: deletes, inserts: inserts, moves: moves, seed: 42)
        let old = try! Director(sections: [Section(id: "s", rows: source)])
        let new = try! Director(sections: [Section(id: "s", rows: target)])
        let ours = measure(runs: count > 10_000 ? 7 : 15) { blackHole(Changeset.diff(from: old, to: new)) }
        let stdlibRuns = count > 10_000 ? 1 : 5
        let theirs = measure(runs: stdlibRuns) { blackHole(target.difference(from: source).inferringMoves()) }
        // Sanity: the diff is correct on this data.
        precondition(UIKitBatchSimulator.check(Changeset.diff(from: old, to: new), from: old, to: new) == nil)
        print(
            "| \(count) rows, −\(deletes) +\(inserts) ~\(moves) | \(format(ours.median)) | \(format(theirs.median)) | \(Int(theirs.median / ours.median))× |"
        )
    }

}

// MARK: - Incremental edits: cost must stay nearly flat as the section grows
if section("incremental") {
    print("\n## One edit applied incrementally (operation + changeset + digest), by section size\n")
    print(
        "| rows in section | insert | delete | move | update (by index) | update (by row ID) | full digest recompute |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in quick ? [100, 10_000] : [100, 10_000, 1_000_000] {
        var d = try! Director(
            sections: [Section(id: "s", rows: (0..<n).map { Row(id: "r\($0)", text: "{\"n\":\($0)}") })],
            limits: DirectorLimits(maxRows: 2_000_000)
        )
        let mid = n / 2
        let runs = 31
        let insert = measure(runs: runs) {
            blackHole(try! d.apply([.insertRows([Row(id: "x", text: "{}")], in: .id("s"), at: mid)]))
            _ = try! d.apply([.removeRows([.index(mid, in: .id("s"))])])  // restore (not the measured op)
        }
        let insertOnly = insert.median / 2  // the restoring delete costs the same as the insert
        let delete = measure(runs: runs) {
            let row = d.sections[0].rows[mid]
            blackHole(try! d.apply([.removeRows([.index(mid, in: .id("s"))])]))
            _ = try! d.apply([.insertRows([row], in: .id("s"), at: mid)])
        }
        let move = measure(runs: runs) {
            blackHole(try! d.apply([.moveRow(.index(1, in: .id("s")), toSection: .id("s"), at: n - 2)]))
            _ = try! d.apply([.moveRow(.index(n - 2, in: .id("s")), toSection: .id("s"), at: 1)])
        }
        var flip = false
        let update = measure(runs: runs) {
            flip.toggle()
            blackHole(
                try! d.apply([.replaceRow(.index(mid, in: .id("s")), with: Row(id: "r\(mid)", text: flip ? "a" : "b"))])
            )
        }
        let updateByID = measure(runs: runs) {
            flip.toggle()
            blackHole(try! d.apply([.replaceRow(.id("r\(n - 1)"), with: Row(id: "r\(n - 1)", text: flip ? "a" : "b"))]))
        }
        let recompute = measure(runs: n > 100_000 ? 5 : runs) { blackHole(StateDigest.compute(d.sections)) }
        d.checkInvariants()
        print(
            "| \(n) | \(format(insertOnly)) | \(format(delete.median / 2)) | \(format(move.median / 2)) | \(format(update.median)) | \(format(updateByID.median)) | \(format(recompute.median)) |"
        )
    }

}

// MARK: - Digest update per batch
if section("digest") {
    // Edits at the end of the list, so no memmove hides the bookkeeping: what is left is
    // the operation, the change tracking, the changeset and the digest terms.
    print("\n## Digest and bookkeeping per batch vs a full digest recompute\n")
    print("| rows | 10-row insert batch + 10-row remove batch (incl. digest) | full recompute | ratio |")
    print("| --- | --- | --- | --- |")
    for n in quick ? [10_000] : [10_000, 1_000_000] {
        var d = try! Director(
            sections: [Section(id: "s", rows: (0..<n).map { Row(id: "r\($0)") })],
            limits: DirectorLimits(maxRows: 2_000_000))
        let fresh = (0..<10).map { Row(id: "n\($0)", text: "{}") }
        let batch = measure(runs: 31) {
            _ = try! d.apply([.insertRows(fresh, in: .index(0), at: n)])
            _ = try! d.apply([.removeRows((n..<(n + 10)).map { .index($0, in: .index(0)) })])
        }
        let full = measure(runs: 5) { blackHole(StateDigest.compute(d.sections)) }
        d.checkInvariants()
        print("| \(n) | \(format(batch.median)) | \(format(full.median)) | \(Int(full.median / batch.median))× |")
    }

}

// MARK: - Sequencer throughput
if section("sequencer") {
    // A list of 1,000 rows in 10 sections. Each mutation inserts one row near the top of a
    // section and removes the row at index 50 of another: valid in every base state, so
    // every mutation commits and the figure is the cost of the path, not of rejects.
    print("\n## Sequencer: committed mutations per second\n")
    print("| writers per turn | base | mutations/s | rebased |")
    print("| --- | --- | --- | --- |")
    do {
        func freshSequencer() -> Sequencer {
            let sections = (0..<10).map { s in
                Section(id: "sec\(s)", rows: (0..<100).map { Row(id: "seed-\(s)-\($0)", text: "{\"n\":\($0)}") })
            }
            return Sequencer(
                director: try! Director(sections: sections), position: ListVersion(epoch: 1, version: 0),
                historyLimits: .init(maxBatches: 1_000))
        }
        var counter = 0
        func mutation(client: Int, seq: UInt64, base: ListVersion) -> MutationRequest {
            counter += 1
            return MutationRequest(
                clientID: "w\(client)", seq: seq, base: base,
                operations: [
                    .insertRows([Row(id: "m\(counter)", text: "{}")], in: .id("sec\(counter % 10)"), at: counter % 40),
                    .removeRows([.index(50, in: .id("sec\((counter + 3) % 10)"))]),
                ])
        }
        let totalMutations = quick ? 2_000 : 20_000
        for (writers, behind) in [(1, 0), (50, 0), (1, 10), (1, 100), (50, 10), (50, 100)] {
            var s = freshSequencer()
            // History to be behind on.
            for k in 0..<max(behind, 1) {
                s.submit(mutation(client: 999, seq: UInt64(k + 1), base: s.position), tag: 0)
                _ = s.seal()
            }
            var seq: UInt64 = 0
            var committed = 0
            let turns = totalMutations / writers
            let elapsed = clock.measure {
                for _ in 0..<turns {
                    let base = ListVersion(epoch: 1, version: s.position.version - UInt64(behind))
                    for w in 0..<writers {
                        seq += 1
                        s.submit(mutation(client: w, seq: seq, base: base), tag: w)
                    }
                    let sealed = s.seal()
                    committed += sealed.outcomes.filter { (try? $0.result.get()) != nil }.count
                }
            }
            precondition(
                committed == turns * writers, "every mutation must commit (\(committed) of \(turns * writers))")
            s.director.checkInvariants()
            let rebased =
                writers > 1 || behind > 0
                ? (writers > 1 && behind == 0 ? "all but the first of each turn" : "all") : "none (fast path)"
            print(
                "| \(writers) | \(behind == 0 ? "current" : "\(behind) batches behind") | \(Int(Double(committed) / seconds(elapsed))) | \(rebased) |"
            )
        }
        // The fast path on a large list: cost must not grow with the list (no copy of the
        // director per batch; a replace moves no memory).
        do {
            let big = 200_000
            var s = Sequencer(
                director: try! Director(
                    sections: [Section(id: "big", rows: (0..<big).map { Row(id: "b\($0)") })],
                    limits: DirectorLimits(maxRows: 1_000_000)),
                position: ListVersion(epoch: 1, version: 0))
            let count = quick ? 1_000 : 10_000
            var flip = false
            let elapsed = clock.measure {
                for k in 0..<count {
                    flip.toggle()
                    s.submit(
                        MutationRequest(
                            clientID: "w", seq: UInt64(k + 1), base: s.position,
                            operations: [
                                .replaceRow(
                                    .index(k % big, in: .index(0)), with: Row(id: "b\(k % big)", text: flip ? "a" : "b")
                                )
                            ]), tag: 0)
                    _ = s.seal()
                }
            }
            print(
                "| 1 | current, \(big)-row list (updates) | \(Int(Double(count) / seconds(elapsed))) | none (fast path) |"
            )
        }
        // A rebased writer on the same large list, 10 batches behind: its base state used to
        // be a copy of the list (O(n) once edited); now the live director is walked back
        // and forward (O(edits since the base)).
        do {
            let big = 200_000
            var s = Sequencer(
                director: try! Director(
                    sections: [Section(id: "big", rows: (0..<big).map { Row(id: "b\($0)") })],
                    limits: DirectorLimits(maxRows: 1_000_000)),
                position: ListVersion(epoch: 1, version: 0), historyLimits: .init(maxBatches: 1_000))
            var seq: UInt64 = 0
            func update(_ k: Int, base: ListVersion) -> MutationRequest {
                seq += 1
                return MutationRequest(
                    clientID: "w", seq: seq, base: base,
                    operations: [
                        .replaceRow(.index(k % big, in: .index(0)), with: Row(id: "b\(k % big)", text: "v\(seq)"))
                    ])
            }
            for k in 0..<10 {
                s.submit(update(k, base: s.position), tag: 0)
                _ = s.seal()
            }
            let count = quick ? 200 : 2_000
            var committed = 0
            let elapsed = clock.measure {
                for k in 0..<count {
                    s.submit(update(k, base: ListVersion(epoch: 1, version: s.position.version - 10)), tag: 0)
                    committed += s.seal().commit == nil ? 0 : 1
                }
            }
            precondition(committed == count)
            print(
                "| 1 | 10 batches behind, \(big)-row list (updates) | \(Int(Double(count) / seconds(elapsed))) | all |")
        }
    }
}

// MARK: - Large single requests on one section (issue #15, section 2)
//
// Service time of one `Director.apply` for requests that touch k rows of a section
// holding n: the property to show is that the cost follows k, not n, and not the
// position. Core level only (no loop, no codec); the end-to-end stall benchmark through
// the daemon lives with the server benchmarks.

/// One large-request measurement row: a section of `n` rows, `k` rows inserted at the
/// front or at the end (one `insertRows`), then removed by ID (one `removeRows`), and
/// `moves` random single-row moves as separate applies. Each insert/remove pair restores
/// the state, so the pair is repeated `runs` times and the medians are printed.
func largeRequestRow(n: Int, k: Int, moves: Int, runs: Int, skipFront: Bool = false) -> String {
    var d = try! Director(
        sections: [Section(id: "s", rows: (0..<n).map { Row(id: "r\($0)", text: "{\"n\":\($0)}") })],
        limits: DirectorLimits(maxRows: 2_000_000)
    )
    let fresh = (0..<k).map { Row(id: "k\($0)", text: "{\"k\":\($0)}") }
    let refs: [RowRef] = fresh.map { .id($0.id) }
    func pair(at index: Int) -> (insert: Double, remove: Double) {
        var ins: [Double] = [], rem: [Double] = []
        for _ in 0..<runs {
            ins.append(
                seconds(clock.measure { blackHole(try! d.apply([.insertRows(fresh, in: .id("s"), at: index)])) }))
            rem.append(seconds(clock.measure { blackHole(try! d.apply([.removeRows(refs)])) }))
        }
        ins.sort()
        rem.sort()
        return (ins[ins.count / 2], rem[rem.count / 2])
    }
    let end = pair(at: n)
    let front: (insert: Double, remove: Double)? = skipFront ? nil : pair(at: 0)
    var random = SeededRandom(seed: 7)
    let moveTime = seconds(
        clock.measure {
            for _ in 0..<moves {
                let from = random.int(0..<n), to = random.int(0..<n)
                blackHole(try! d.apply([.moveRow(.index(from, in: .id("s")), toSection: .id("s"), at: to)]))
            }
        })
    precondition(d.rowCount == n)
    let frontInsert = front.map { format($0.insert) } ?? "not run"
    let frontRemove = front.map { format($0.remove) } ?? "not run"
    let ratio = front.map { format2($0.insert / end.insert) + "×" } ?? "—"
    return
        "| \(n) | \(frontInsert) | \(format(end.insert)) | \(ratio) | \(frontRemove) | \(format(end.remove)) | \(format(moveTime)) (\(format(moveTime / Double(moves))) each) |"
}

func printLargeRequests(sizes: [Int], k: Int, moves: Int, runs: Int, skipFrontAbove: Int = .max) {
    print("\n## Large single requests: \(k) rows into one section of n rows (one apply each)\n")
    print(
        "| rows n | insert \(k) at index 0 | insert \(k) at the end | front/end | remove those \(k) by ID (front) | remove by ID (end) | \(moves) random single-row moves, separate applies |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in sizes {
        print(largeRequestRow(n: n, k: k, moves: moves, runs: runs, skipFront: n > skipFrontAbove))
    }
}

if section("large") {
    // Quick: a smoke run of the same code at a small size.
    if quick {
        printLargeRequests(sizes: [10_000], k: 2_000, moves: 100, runs: 1)
    } else {
        printLargeRequests(sizes: [100_000, 1_000_000], k: 20_000, moves: 1_000, runs: 3)
    }
}
