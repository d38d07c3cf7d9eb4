// swift-tools-version:6.1
//
// `make apple-check`: the project's Apple-only code, compiled and run on Linux.
//
// This package is never a dependency of anything and is built on Linux only. It holds
// stand-in modules named `UIKit`, `Network`, `Security`, `SwiftUI` and `CryptoKit`
// whose every declaration is transcribed from Apple's documentation (the page's path
// beside each one), and it compiles the SDK's and FlowSyncUI's own sources (symlinks in
// `Project/` to `../Sources`) and the examples against them, so that every
// `#if canImport(UIKit)` / `canImport(Network)` / `canImport(SwiftUI)` branch is
// type-checked, and the UIKit glue runs in tests against the stand-ins' simulated table
// and collection views. See README.md here and docs/TESTING.md, "Apple's API on Linux".
//
// It must never be visible to an Apple build: a module named UIKit there would shadow
// the real one. The root Package.swift does not mention it, and SwiftPM never builds a
// nested package it is not asked to.
import PackageDescription

// The Darwin stand-in (StandIns/Darwin/Darwin.swift) is not a target: scripts/apple-check.sh
// emits it as a bare .swiftmodule into .build/darwin-standin before `swift build`, and only
// the project's own targets, and whatever imports them (module loading is transitive), get
// it on their search path. A `Darwin` module visible to the whole graph would send swift-log
// and swift-system down their Darwin branches, which do not build on Linux.
// Give this to every target that compiles the project's sources or imports FlowSyncClient.
let darwinStandIn: [SwiftSetting] = [.unsafeFlags(["-I", Context.packageDirectory + "/.build/darwin-standin"])]

let package = Package(
    name: "AppleCheck",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // FlowSyncProcess (the project's launcher of flowsyncd) for the Network tests: child
        // processes awaited without blocking a thread, as the root package does.
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
    ],
    targets: [
        // MARK: Stand-ins for Apple's modules (declarations transcribed from developer.apple.com)
        .target(name: "UIKit", path: "StandIns/UIKit"),
        .target(name: "Security", path: "StandIns/Security"),
        .target(name: "Network", dependencies: ["Security"], path: "StandIns/Network"),
        .target(name: "SwiftUI", path: "StandIns/SwiftUI"),
        // CryptoKit's SHA-256, computed by OpenSSL's libcrypto (Debian: libssl-dev).
        .systemLibrary(
            name: "CCryptoStandIn", path: "StandIns/CCryptoStandIn", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .target(name: "CryptoKit", dependencies: ["CCryptoStandIn"], path: "StandIns/CryptoKit"),

        // MARK: The project's own sources, compiled against the stand-ins
        .target(name: "CZlib", path: "Project/CZlib", linkerSettings: [.linkedLibrary("z")]),
        .target(name: "FlowSyncCore", path: "Project/FlowSyncCore"),
        .target(name: "FlowSyncProtocol", dependencies: ["FlowSyncCore", "CZlib"], path: "Project/FlowSyncProtocol"),
        // No FlowSyncLoop here, as on an Apple platform: `canImport(Network)` picks
        // NetworkTransport as the default transport.
        .target(
            name: "FlowSyncClient",
            dependencies: [
                "FlowSyncCore", "FlowSyncProtocol", "Network", "Security", "CryptoKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Project/FlowSyncClient",
            swiftSettings: darwinStandIn
        ),
        .target(
            name: "FlowSyncUI",
            dependencies: ["FlowSyncClient", "FlowSyncCore", "UIKit", "SwiftUI"],
            path: "Project/FlowSyncUI",
            swiftSettings: darwinStandIn
        ),
        // The project's launcher of child processes (flowsyncd for the Network tests).
        .target(
            name: "FlowSyncProcess",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess")],
            path: "Project/FlowSyncProcess"
        ),

        // MARK: The examples an iOS developer opens (Examples/), compiled here as apps
        .executableTarget(
            name: "TodoUIKit",
            dependencies: ["FlowSyncClient", "FlowSyncUI", "UIKit"],
            path: "Project/TodoUIKit",
            exclude: ["README.md"],
            swiftSettings: darwinStandIn
        ),

        // The SwiftUI example (Examples/TodoSwiftUI): built, never run (no SwiftUI runs here).
        .executableTarget(
            name: "TodoSwiftUI",
            dependencies: ["FlowSyncClient", "FlowSyncUI", "SwiftUI"],
            path: "Project/TodoSwiftUI",
            exclude: ["README.md"],
            swiftSettings: darwinStandIn
        ),

        // MARK: Tests of the UIKit stand-in's own simulation (its documented rules)
        // Swift Testing has a cross-import overlay for UIKit (_Testing_UIKit, attachments) that
        // exists only in Apple's SDKs: a file importing both Testing and the stand-in needs
        // cross-import overlays off.
        .testTarget(
            name: "UIKitStandInTests", dependencies: ["UIKit"], path: "Tests/UIKitStandInTests",
            swiftSettings: [.unsafeFlags(["-Xfrontend", "-disable-cross-import-overlays"])]
        ),

        // docs/SDK.md's table view controller, as a module of its own (its type names are
        // the guide's), checked identical to the guide by UIKitGlueTests.
        .target(
            name: "TableDocExample",
            dependencies: ["FlowSyncClient", "FlowSyncUI", "UIKit"],
            path: "DocExamples/TableExample",
            swiftSettings: darwinStandIn
        ),

        // MARK: Tests of the glue against the stand-ins
        .testTarget(
            name: "UIKitGlueTests",
            dependencies: [
                "FlowSyncUI", "FlowSyncClient", "FlowSyncCore", "UIKit", "FlowSyncProcess", "TodoUIKit",
                "TableDocExample",
            ],
            path: "Tests/UIKitGlueTests",
            // Swift Testing's cross-import overlay for UIKit does not exist on Linux.
            swiftSettings: darwinStandIn + [.unsafeFlags(["-Xfrontend", "-disable-cross-import-overlays"])]
        ),
        // The SwiftUI side: docs/SDK.md's SwiftUI example compiled against the stand-in (and
        // kept identical to the guide), and the SwiftUI example app's platform-neutral parts.
        .testTarget(
            name: "SwiftUIGlueTests",
            dependencies: ["FlowSyncUI", "FlowSyncClient", "FlowSyncCore", "SwiftUI", "TodoSwiftUI"],
            path: "Tests/SwiftUIGlueTests",
            swiftSettings: darwinStandIn
        ),
        // The NWConnection stand-in over real sockets, and FlowSyncClient's default transport
        // in this graph (NetworkTransport) against a real flowsyncd (FLOWSYNCD, set by
        // scripts/apple-check.sh).
        .testTarget(
            name: "NetworkTransportTests",
            dependencies: ["FlowSyncClient", "FlowSyncCore", "Network", "Security", "CryptoKit", "FlowSyncProcess"],
            path: "Tests/NetworkTransportTests",
            swiftSettings: darwinStandIn
        ),
    ],
    swiftLanguageModes: [.v6]
)
