import FlowSyncClient
import FlowSyncCore
import Foundation
import Testing

@testable import TodoSwiftUI

/// What the SwiftUI side can check without SwiftUI: the documented example is the one
/// that compiles here, and the example app's platform-neutral parts behave.
@Suite(.timeLimit(.minutes(1))) struct SwiftUIGlueTests {
    /// This file's directory, symlinks resolved (a scratch copy of AppleCheck may link it).
    static let here = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    /// The repository: AppleCheck/Tests/SwiftUIGlueTests/../../..
    static let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// docs/SDK.md's SwiftUI code block is DocumentedExample.swift (below its marker), so
    /// the guide's example compiles against the stand-in, labels and all.
    @Test(.timeLimit(.minutes(1))) func theGuidesSwiftUIExampleIsTheOneCompiledHere() throws {
        let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/SDK.md"), encoding: .utf8)
        let section = try #require(guide.range(of: "\n### SwiftUI\n")).upperBound
        let open = try #require(guide.range(of: "```swift\n", range: section..<guide.endIndex))
        let close = try #require(guide.range(of: "```\n", range: open.upperBound..<guide.endIndex))
        let documented = String(guide[open.upperBound..<close.lowerBound])

        let file = try String(contentsOf: Self.here.appendingPathComponent("DocumentedExample.swift"), encoding: .utf8)
        let marker = "// ---- docs/SDK.md, \"SwiftUI\" ----\n"
        let compiled = String(file[try #require(file.range(of: marker)).upperBound...])
        #expect(compiled == documented, "DocumentedExample.swift differs from docs/SDK.md's SwiftUI example")
    }

    /// The example's offline badge, from the connection status and the list's pending
    /// writes and origin.
    @Test(.timeLimit(.minutes(1))) func theExamplesBadgeSaysWhatTheListIs() {
        let connected = ConnectionStatus.connected(server: "flowsyncd")
        #expect(SyncBadge.text(status: connected, pendingWrites: 0, isFromDisk: false) == nil)
        #expect(SyncBadge.text(status: connected, pendingWrites: 2, isFromDisk: false) == "Saving · 2 changes waiting")
        #expect(SyncBadge.text(status: connected, pendingWrites: 0, isFromDisk: true) == "Updating…")
        #expect(
            SyncBadge.text(
                status: .disconnected(reason: "no route", retryInMilliseconds: 400), pendingWrites: 1, isFromDisk: true)
                == "Offline · 1 change waiting")
        #expect(SyncBadge.text(status: .paused, pendingWrites: 0, isFromDisk: false) == "Offline")
        #expect(SyncBadge.text(status: .connecting, pendingWrites: 0, isFromDisk: false) == "Connecting…")
        #expect(SyncBadge.text(status: .closed(nil), pendingWrites: 0, isFromDisk: false) == "Stopped")
        #expect(SyncBadge.isOnline(connected) && !SyncBadge.isOnline(.paused))
    }

    /// The model type the example writes is the UIKit example's: the same JSON, so both
    /// apps (and the CLI) edit one list.
    @Test(.timeLimit(.minutes(1))) func theExamplesModelIsTheSharedTodo() throws {
        #expect(TodoItem.flowKind == "todo" && TodoItem.list == "todo" && TodoItem.inbox == "inbox")
        let json = try JSONEncoder().encode(TodoItem(id: "t1", title: "Milk"))
        let decoded = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        #expect(
            decoded?["id"] as? String == "t1" && decoded?["title"] as? String == "Milk"
                && decoded?["done"] as? Bool == false)
    }
}
