import FlowSyncCore
import FlowSyncProtocol

// flowsync-protocol-bench: release-mode figures for the wire protocol.
//
//   swift run -c release flowsync-protocol-bench            # full run (docs/BENCHMARKS.md)
//   swift run -c release flowsync-protocol-bench --quick    # small sizes, a smoke run
//
// Measures encode and decode throughput (messages/s, MB/s of raw body) and the
// compression ratio of typical diff batches (1, 10, 1,000 rows of ~200-byte JSON) and of
// a 100,000-row snapshot, and evaluates the preset dictionary on small frames. Every
// figure is the median of several timed runs in this process; nothing is asserted.
#if canImport(Glibc)
import Glibc  // libm for rounding (no Foundation in the bench)
#endif

let quick = CommandLine.arguments.contains("--quick")
let clock = ContinuousClock()

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

@inline(never) func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }

/// Median seconds per call of `body`, over `runs` runs of `iterations` calls.
func perCall(iterations: Int, runs: Int = quick ? 3 : 7, _ body: () -> Void) -> Double {
    body()
    var times: [Double] = []
    for _ in 0..<runs {
        let t = clock.measure { for _ in 0..<iterations { body() } }
        times.append(seconds(t) / Double(iterations))
    }
    times.sort()
    return times[times.count / 2]
}

func fmt(_ x: Double, _ digits: Int = 1) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (x * p).rounded() / p
    return digits == 0 ? "\(Int(r))" : "\(r)"
}

func rate(_ perSecond: Double) -> String {
    if perSecond >= 1e6 { return fmt(perSecond / 1e6, 2) + " M" }
    if perSecond >= 1e3 { return fmt(perSecond / 1e3, 1) + " k" }
    return fmt(perSecond, 1)
}

// MARK: Data

/// The core's SplitMix64 with the modulo draw these figures were always measured with
/// (so the data, and the figures, stay the same).
struct Random {
    private var generator: SplitMix64
    init(state: UInt64) { generator = SplitMix64(seed: state) }
    mutating func next() -> UInt64 { generator.next() }
    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

let words = [
    "report", "ready", "meeting", "moved", "to", "Thursday", "budget", "review", "design", "sync", "photo", "album",
    "shared", "with", "you", "invoice", "paid", "new", "comment", "on", "your", "post", "reminder", "call", "team",
    "launch", "plan", "draft", "approved", "order", "shipped", "delivery", "today", "weekly", "digest", "update",
]
let names = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances"]

/// A JSON row payload of about 200 bytes, shaped like a feed or inbox item.
func feedPayload(_ n: Int, _ r: inout Random) -> [UInt8] {
    func phrase(_ k: Int) -> String { (0..<k).map { _ in words[r.int(words.count)] }.joined(separator: " ") }
    let text =
        "{\"id\":\"item-\(n)\",\"title\":\"\(phrase(4))\",\"subtitle\":\"\(phrase(5))\",\"author\":{\"id\":\"u-\(r.int(500))\",\"name\":\"\(names[r.int(names.count)])\"},"
        + "\"createdAt\":\"2025-0\(1 + r.int(9))-1\(r.int(10))T1\(r.int(10)):\(10 + r.int(50)):00Z\",\"read\":\(r.int(2) == 0),\"likes\":\(r.int(1000))}"
    return Array(text.utf8)
}

/// A payload of another shape (keys the standard dictionary does not know, hex tokens).
func foreignPayload(_ n: Int, _ r: inout Random) -> [UInt8] {
    func token() -> String { String(r.next(), radix: 36) }
    let text =
        "{\"sku\":\"\(token())\",\"qty\":\(r.int(100)),\"wh\":\"\(token())\",\"bin\":\"\(token())\",\"lot\":\"\(token())\","
        + "\"exp\":\"\(token())\",\"ref\":\"\(token())-\(token())\",\"note\":\"\(token()) \(token()) \(token())\",\"n\":\(n)}"
    return Array(text.utf8)
}

func diff(rows: Int, seed: UInt64, payload: (Int, inout Random) -> [UInt8] = feedPayload) -> Message {
    var r = Random(state: seed)
    var stage = ChangesetStage()
    stage.rowInserts = (0..<rows).map { k in
        let n = Int(seed) * 10_000 + k
        return RowAtPath(
            path: RowPath(section: 0, row: k), row: Row(id: "item-\(n)", kind: "message", payload: payload(n, &r)))
    }
    return .diff(
        Diff(
            listName: "inbox", epoch: 1, fromVersion: seed, toVersion: seed + 1,
            digest: StateDigest(rawValue: r.next()),
            changeset: Changeset(stages: [stage]), mutations: [MutationID(clientID: "c-\(seed % 7)", seq: seed)]))
}

func bodyBytes(_ m: Message) -> Int { FrameEncoder(configuration: .disabled).encode(m).count - 6 }

// MARK: Report

let configurations: [(String, CompressionConfiguration)] = [
    ("raw", .disabled),
    ("zlib 6 + std dict", .default),
    ("zlib 6, no dict", CompressionConfiguration(dictionary: nil)),
    ("zlib 1 + std dict", CompressionConfiguration(level: 1)),
]

print("# flowsync-protocol-bench\(quick ? " (quick)" : "")\n")
print("## Diff batches of ~200-byte JSON rows: encode and decode\n")
print("MB/s are of the raw (uncompressed) body; ratio = raw frame bytes / sent frame bytes.\n")
print("| batch | compression | frame bytes | ratio | encode msg/s | encode MB/s | decode msg/s | decode MB/s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for rows in [1, 10, 1_000] {
    // Several distinct messages so the figures are not one cached shape.
    let messages = (0..<16).map { diff(rows: rows, seed: UInt64($0 + 1)) }
    let raw = messages.map { FrameEncoder(configuration: .disabled).encode($0).count }.reduce(0, +)
    let body = messages.map(bodyBytes).reduce(0, +)
    let iterations = max(1, (quick ? 20_000 : 200_000) / (rows * 16))
    for (name, configuration) in configurations {
        let encoder = FrameEncoder(configuration: configuration)
        let frames = messages.map { encoder.encode($0) }
        let sent = frames.map(\.count).reduce(0, +)
        let encode = perCall(iterations: iterations) { for m in messages { blackHole(encoder.encode(m)) } }
        let decoder = FrameDecoder(limits: .client, dictionary: .standard)
        let decode = perCall(iterations: iterations) {
            for f in frames {
                decoder.feed(f)
                blackHole(try! decoder.next())
            }
        }
        let n = Double(messages.count)
        print(
            "| \(rows) row\(rows == 1 ? "" : "s") | \(name) | \(sent / messages.count) | \(fmt(Double(raw) / Double(sent), 2)) | "
                + "\(rate(n / encode)) | \(fmt(Double(body) / encode / 1e6)) | \(rate(n / decode)) | \(fmt(Double(body) / decode / 1e6)) |"
        )
    }
}

print("\n## Snapshot of \(quick ? "10,000" : "100,000") rows (~200-byte JSON payloads, 10 sections)\n")
print("| compression | frame bytes | ratio | encode time | encode MB/s | decode time | decode MB/s |")
print("| --- | --- | --- | --- | --- | --- | --- |")
do {
    let total = quick ? 10_000 : 100_000
    var r = Random(state: 99)
    let sections = (0..<10).map { s in
        Section(
            id: "s\(s)", header: Array("Section \(s)".utf8),
            rows: (0..<total / 10).map { k in
                let n = s * total + k
                return Row(id: "item-\(n)", kind: "message", payload: feedPayload(n, &r))
            })
    }
    let director = try! Director(sections: sections, limits: DirectorLimits(maxRows: 2_000_000))
    let snapshot = Message.snapshot(
        Snapshot(
            listName: "big", position: ListVersion(epoch: 1, version: 1), digest: director.digest,
            reason: .freshSubscribe, sections: sections))
    let body = bodyBytes(snapshot)
    let raw = body + 6
    for (name, configuration) in configurations where name != "zlib 6, no dict" {
        let encoder = FrameEncoder(configuration: configuration)
        let frame = encoder.encode(snapshot)
        let runs = quick ? 1 : 3
        let encode = perCall(iterations: 1, runs: runs) { blackHole(encoder.encode(snapshot)) }
        let decoder = FrameDecoder(limits: .client, dictionary: .standard)
        let decode = perCall(iterations: 1, runs: runs) {
            decoder.feed(frame)
            blackHole(try! decoder.next())
        }
        print(
            "| \(name) | \(frame.count) | \(fmt(Double(raw) / Double(frame.count), 2)) | \(fmt(encode * 1e3)) ms | \(fmt(Double(body) / encode / 1e6)) | "
                + "\(fmt(decode * 1e3)) ms | \(fmt(Double(body) / decode / 1e6)) |")
    }
}

print("\n## Preset dictionary on small frames (compression ratio, raw frame / sent frame)\n")
print("An *app dictionary* is what an operator would configure: 2 KiB of concatenated sample payloads")
print("of the app's own rows (different rows from the ones measured).\n")
print("| frame | raw bytes | no dictionary | standard dictionary | app dictionary |")
print("| --- | --- | --- | --- | --- |")
do {
    func appDictionary(_ payload: (Int, inout Random) -> [UInt8]) -> CompressionDictionary {
        var r = Random(state: 12_345)
        var bytes: [UInt8] = []
        var n = 900_000
        while bytes.count < 2_048 {
            bytes += payload(n, &r)
            n += 1
        }
        return CompressionDictionary(Array(bytes.suffix(2_048)))
    }
    let shapes: [(String, (Int, inout Random) -> [UInt8])] = [
        ("feed JSON", feedPayload), ("foreign JSON", foreignPayload),
    ]
    for (shape, payload) in shapes {
        let app = appDictionary(payload)
        for rows in [1, 3, 10] {
            let messages = (0..<50).map { diff(rows: rows, seed: UInt64(1_000 + $0), payload: payload) }
            let raw = Double(messages.map { FrameEncoder(configuration: .disabled).encode($0).count }.reduce(0, +))
            func ratio(_ d: CompressionDictionary?) -> String {
                let e = FrameEncoder(configuration: CompressionConfiguration(threshold: 0, dictionary: d))
                return fmt(raw / Double(messages.map { e.encode($0).count }.reduce(0, +)), 2)
            }
            print(
                "| \(rows) row\(rows == 1 ? "" : "s"), \(shape) | \(Int(raw) / messages.count) | \(ratio(nil)) | \(ratio(.standard)) | \(ratio(app)) |"
            )
        }
    }
}

print("\n## Why the deflate stream is reused (one 1-row diff, level 6, standard dictionary)\n")
do {
    let message = diff(rows: 1, seed: 7)
    let shared = FrameEncoder()
    let reused = perCall(iterations: quick ? 2_000 : 20_000) { blackHole(shared.encode(message)) }
    let fresh = perCall(iterations: quick ? 500 : 5_000) { blackHole(FrameEncoder().encode(message)) }
    print("| encoder | time per frame |")
    print("| --- | --- |")
    print("| reused (`deflateReset`) | \(fmt(reused * 1e6, 2)) µs |")
    print("| new per frame (`deflateInit2` + `deflateEnd`) | \(fmt(fresh * 1e6, 2)) µs |")
}
