import Foundation

/// Finds an executable this package builds (`flowsyncd`, `flowsync`, …) for tests that
/// run it as a process: next to the test bundle first (the build the tests come from),
/// then `.build/debug`, then any `.build-*/debug` scratch path. `swift build` builds them
/// all; `make test` runs it before `swift test`.
public enum BuiltProduct {
    /// The checkout's root (this file is `Sources/FlowSyncTestSupport/BuiltProduct.swift`).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The path of the executable `name`.
    /// - Throws: when it is not built, with the command that builds it.
    public static func path(_ name: String) throws -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [
            bundle.appendingPathComponent(name), bundle.deletingLastPathComponent().appendingPathComponent(name),
            root.appendingPathComponent(".build/debug/\(name)"),
        ]
        let scratch =
            (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix(".build-") }
            .sorted() ?? []
        candidates += scratch.map { root.appendingPathComponent("\($0)/debug/\(name)") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CrashTestError("\(name) not built: run `swift build` first")
        }
        return found.path
    }
}
