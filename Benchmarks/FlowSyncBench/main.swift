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
import FlowSyncCore
import FlowSyncTestSupport

let quick = CommandLine.arguments.contains("--quick")
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
print("## Diff: FlowSync vs Swift `difference(from:).inferringMoves()` (same data, same run)\n")
print("| shape | FlowSync diff (median) | stdlib (median) | ratio |")
print("| --- | --- | --- | --- |")
let shapes: [(Int, Int, Int, Int)] = quick
    ? [(2_000, 400, 400, 80)]
    : [(5_000, 1_000, 1_000, 200), (100_000, 10_000, 10_000, 2_000)]
for (count, deletes, inserts, moves) in shapes {
    let (source, target) = differenceKitShape(count: count, deletes: deletes, inserts: inserts, moves: moves, seed: 42)
    let old = try! Director(sections: [Section(id: "s", rows: source)])
    let new = try! Director(sections: [Section(id: "s", rows: target)])
    let ours = measure(runs: count > 10_000 ? 7 : 15) { blackHole(Changeset.diff(from: old, to: new)) }
    let stdlibRuns = count > 10_000 ? 1 : 5
    let theirs = measure(runs: stdlibRuns) { blackHole(target.difference(from: source).inferringMoves()) }
    // Sanity: the diff is correct on this data.
    precondition(UIKitBatchSimulator.check(Changeset.diff(from: old, to: new), from: old, to: new) == nil)
    print("| \(count) rows, −\(deletes) +\(inserts) ~\(moves) | \(format(ours.median)) | \(format(theirs.median)) | \(Int(theirs.median / ours.median))× |")
}

// MARK: - Incremental edits: cost must stay nearly flat as the section grows

print("\n## One edit applied incrementally (operation + changeset + digest), by section size\n")
print("| rows in section | insert | delete | move | update (by index) | update (by row ID) | full digest recompute |")
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
        _ = try! d.apply([.removeRows([.index(mid, in: .id("s"))])])   // restore (not the measured op)
    }
    let insertOnly = insert.median / 2   // the restoring delete costs the same as the insert
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
        blackHole(try! d.apply([.replaceRow(.index(mid, in: .id("s")), with: Row(id: "r\(mid)", text: flip ? "a" : "b"))]))
    }
    let updateByID = measure(runs: runs) {
        flip.toggle()
        blackHole(try! d.apply([.replaceRow(.id("r\(n - 1)"), with: Row(id: "r\(n - 1)", text: flip ? "a" : "b"))]))
    }
    let recompute = measure(runs: n > 100_000 ? 5 : runs) { blackHole(StateDigest.compute(d.sections)) }
    d.checkInvariants()
    print("| \(n) | \(format(insertOnly)) | \(format(delete.median / 2)) | \(format(move.median / 2)) | \(format(update.median)) | \(format(updateByID.median)) | \(format(recompute.median)) |")
}

// MARK: - Digest update per batch

// Edits at the end of the list, so no memmove hides the bookkeeping: what is left is
// the operation, the change tracking, the changeset and the digest terms.
print("\n## Digest and bookkeeping per batch vs a full digest recompute\n")
print("| rows | 10-row insert batch + 10-row remove batch (incl. digest) | full recompute | ratio |")
print("| --- | --- | --- | --- |")
for n in quick ? [10_000] : [10_000, 1_000_000] {
    var d = try! Director(sections: [Section(id: "s", rows: (0..<n).map { Row(id: "r\($0)") })], limits: DirectorLimits(maxRows: 2_000_000))
    let fresh = (0..<10).map { Row(id: "n\($0)", text: "{}") }
    let batch = measure(runs: 31) {
        _ = try! d.apply([.insertRows(fresh, in: .index(0), at: n)])
        _ = try! d.apply([.removeRows((n..<(n + 10)).map { .index($0, in: .index(0)) })])
    }
    let full = measure(runs: 5) { blackHole(StateDigest.compute(d.sections)) }
    d.checkInvariants()
    print("| \(n) | \(format(batch.median)) | \(format(full.median)) | \(Int(full.median / batch.median))× |")
}
