// swift-tools-version:6.1
//
// FlowSync — a real-time sync daemon that mirrors ordered lists (FlowKit-style
// directors) to clients. Module map and dependency direction: see README.md and
// docs/ARCHITECTURE.md. Dependencies point down only; the pure modules
// (FlowSyncCore, FlowSyncProtocol) never touch a socket or a file.
import PackageDescription

let package = Package(
    name: "FlowSync",
    // The client SDK (FlowSyncClient and what it needs: FlowSyncCore, FlowSyncProtocol,
    // CZlib, swift-log) builds for every platform below; the daemon, libuv and the tools
    // are Linux-only in practice (docs/SDK.md, "Platforms"; scripts/check-portability.sh
    // keeps libuv and Glibc out of the client's graph on Apple platforms).
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "FlowSyncCore", targets: ["FlowSyncCore"]),
        .library(name: "FlowSyncClient", targets: ["FlowSyncClient"]),
        .library(name: "FlowSyncUI", targets: ["FlowSyncUI"]),
        // The wire types the SDK's public API uses (ErrorCode, Snapshot.Reason, …).
        // FlowSyncClient re-exports it and FlowSyncCore, so `import FlowSyncClient` is enough.
        .library(name: "FlowSyncProtocol", targets: ["FlowSyncProtocol"]),
        .executable(name: "flowsyncd", targets: ["flowsyncd"]),
        .executable(name: "flowsync", targets: ["flowsync"]),
        .executable(name: "flowsync-load", targets: ["flowsync-load"]),
        .executable(name: "flowsync-gateway", targets: ["flowsync-gateway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // Token verification (issue #10): HS256/ES256/RS256 JWTs, checked at handshake and refresh.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // Child processes (issue #15): awaited through a pidfd monitor, never by blocking
        // a thread (Foundation.Process.waitUntilExit hung the suite on 2 cores).
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        // flowsync-gateway (issue #31): HTTP and SSE in front of the daemons. Only
        // the gateway's modules link them; the daemon and the SDK never do.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // The gateway's WebSocket (JSON with permessage-deflate for browsers), issue #31.
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        // Already in the graph through Hummingbird: the gateway's daemon links run on NIO.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // HTTPTypes and NIOHTTPTypes: the header names and HTTP parts the gateway's handlers use.
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // HMAC-SHA256 of webhook signatures; already in the graph through jwt-kit.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // MARK: C boundaries (thin; errors are translated once, in Swift)
        .systemLibrary(
            name: "CLibUV",
            path: "Sources/CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // liburing (apt: liburing-dev): the daemon's io_uring write path (`[server]
        // write_path`, issue #20) and flowsync-server-bench's write baseline; opaque C,
        // see Sources/CURing/include/CURing.h. Only the daemon links it, not the SDK.
        .target(
            name: "CURing",
            path: "Sources/CURing",
            linkerSettings: [.linkedLibrary("uring")]
        ),
        // OpenSSL 3 (apt: libssl-dev): TLS in the daemon and the Linux clients, on the
        // loop through memory BIOs (issue #32). Only FlowSyncTLS imports it.
        .systemLibrary(
            name: "CLibSSL",
            path: "Sources/CLibSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "CZlib",
            path: "Sources/CZlib",
            linkerSettings: [.linkedLibrary("z")]
        ),

        // MARK: Pure core
        .target(name: "FlowSyncCore"),

        // MARK: Wire protocol (pure + zlib) — owned by the protocol work (issue #3)
        .target(name: "FlowSyncProtocol", dependencies: ["FlowSyncCore", "CZlib"]),
        .testTarget(
            name: "FlowSyncProtocolTests",
            // No FlowSyncTestSupport: it pulls in the server, and the protocol tests must
            // build and run without it. The golden vectors are read through #filePath.
            dependencies: ["FlowSyncProtocol", "FlowSyncCore", "CZlib"],
            exclude: ["Vectors"]
        ),
        // libFuzzer target for the decoder: `scripts/fuzz.sh SECONDS` (builds with
        // -sanitize=fuzzer,address -DFUZZING). A plain build gets a replay `main` instead.
        .executableTarget(
            name: "FuzzDecoder",
            dependencies: ["FlowSyncProtocol", "FlowSyncCore"],
            path: "Fuzz/FuzzDecoder"
        ),
        // Release-mode protocol figures for docs/BENCHMARKS.md.
        .executableTarget(
            name: "flowsync-protocol-bench",
            dependencies: ["FlowSyncProtocol", "FlowSyncCore"],
            path: "Benchmarks/ProtocolBench"
        ),
        // MARK: end of protocol section

        // MARK: TLS (OpenSSL through memory BIOs: no socket, no thread; issue #32)
        .target(name: "FlowSyncTLS", dependencies: ["CLibSSL"]),
        .testTarget(name: "FlowSyncTLSTests", dependencies: ["FlowSyncTLS", "FlowSyncProcess", "FlowSyncTestSupport"]),

        // MARK: Event loop (libuv wrapper; knows nothing about lists)
        .target(name: "FlowSyncLoop", dependencies: ["CLibUV"]),
        // PostgreSQL from the loop (libpq pipeline mode under a uv_poll_t): the
        // foundation of cluster mode (issue #18); the server's ClusterStore runs on it.
        .target(name: "FlowSyncPostgres", dependencies: ["CLibPQ", "FlowSyncLoop"]),

        // MARK: Child processes: the one launcher of flowsyncd and tools, for the tests,
        // the benchmarks and flowsync-load --spawn.
        .target(
            name: "FlowSyncProcess",
            dependencies: [.product(name: "Subprocess", package: "swift-subprocess")]
        ),

        // MARK: The daemon
        // The io_uring send ring (`[server] write_path`): sockets and buffers, nothing of
        // lists; the only Swift module over CURing.
        .target(name: "FlowSyncRing", dependencies: ["CURing", "FlowSyncLoop"]),
        .testTarget(name: "FlowSyncRingTests", dependencies: ["FlowSyncRing"]),
        .target(
            name: "FlowSyncServer",
            dependencies: [
                // FlowSyncPostgres: cluster mode's store (ClusterStore, issue #18).
                "FlowSyncCore", "FlowSyncProtocol", "FlowSyncLoop", "FlowSyncPostgres", "FlowSyncRing",
                // FlowSyncTLS: TLS on the listener, on the loop (issue #32).
                "FlowSyncTLS",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "JWTKit", package: "jwt-kit"),
                // HMAC-SHA256 of the peer links' handshake (issue #33); already built for jwt-kit.
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "flowsyncd",
            dependencies: [
                "FlowSyncServer", "FlowSyncLoop",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: The client SDK and what is built on it
        // Portable: on Apple platforms nothing below it needs libuv or Glibc (the libuv
        // transport is Linux-only; Apple platforms get the Network.framework transport).
        .target(
            name: "FlowSyncClient",
            dependencies: [
                "FlowSyncCore", "FlowSyncProtocol",
                .target(name: "FlowSyncLoop", condition: .when(platforms: [.linux])),
                // TLS for the libuv transport (OpenSSL; issue #32). Apple platforms get
                // Network.framework's instead.
                .target(name: "FlowSyncTLS", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // UI bindings (issue #17): the stage applier, diffable content and @Observable
        // model are platform-neutral and tested on Linux; the UIKit conformances sit
        // behind `#if canImport(UIKit)`. No FlowSyncLoop/CLibUV here.
        .target(name: "FlowSyncUI", dependencies: ["FlowSyncClient", "FlowSyncCore"]),
        .executableTarget(
            name: "flowsync",
            dependencies: [
                "FlowSyncClient", "FlowSyncCore", "FlowSyncProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]
        ),
        // Mirrors a list and prints each change as a table view would apply it.
        .executableTarget(
            name: "flowsync-mirror",
            dependencies: ["FlowSyncClient", "FlowSyncCore"],
            path: "Examples/MirrorList"
        ),
        // The load tester: its pieces (options, scenarios, op generator, lean load
        // clients, metrics, report) are a library so FlowSyncLoadTests can reach them.
        .target(
            name: "FlowSyncLoad",
            dependencies: [
                "FlowSyncCore", "FlowSyncProtocol", "FlowSyncLoop", "FlowSyncProcess", "FlowSyncTLS",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "flowsync-load",
            dependencies: [
                "FlowSyncLoad", "FlowSyncCore", "FlowSyncProtocol", "FlowSyncLoop",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: The gateway (issue #31): a separate process in front of the daemons.
        // The pure half: JSON ↔ operations and changesets, the Idempotency-Key mapping, limits,
        // the webhook delivery machine and its cursor; no socket, no file, no Hummingbird.
        .target(name: "FlowSyncGatewayCore", dependencies: ["FlowSyncCore", "FlowSyncProtocol"]),
        // The shell: Hummingbird routes, SSE, the daemon links (FlowSyncClient's transport
        // contract on the gateway's NIO loops), webhook delivery over HTTP with cursor files.
        .target(
            name: "FlowSyncGateway",
            dependencies: [
                "FlowSyncGatewayCore", "FlowSyncClient", "FlowSyncCore", "FlowSyncProtocol", "CZlib",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "flowsync-gateway",
            dependencies: [
                "FlowSyncGateway",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // MARK: Test support and tests
        // The pure half (seeded generators, the UIKit batch simulator, offThePool,
        // Shared): the core's tests build without the server, libpq or liburing.
        .target(name: "FlowSyncCoreTestSupport", dependencies: ["FlowSyncCore"]),
        // The rest (embedded server, test client, fault injection, …); it re-exports
        // the pure half.
        .target(
            name: "FlowSyncTestSupport",
            dependencies: [
                "FlowSyncCoreTestSupport",
                "FlowSyncCore", "FlowSyncProtocol", "FlowSyncLoop", "FlowSyncServer", "FlowSyncProcess", "FlowSyncTLS",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .testTarget(
            name: "FlowSyncCoreTests",
            dependencies: ["FlowSyncCore", "FlowSyncCoreTestSupport"],
            exclude: ["Vectors/digest_reference.py"]
        ),
        .testTarget(
            name: "FlowSyncPostgresTests",
            dependencies: [
                "FlowSyncPostgres", "FlowSyncLoop", "FlowSyncProcess", "FlowSyncTestSupport",
                "FlowSyncServer", "FlowSyncProtocol", "FlowSyncCore", "FlowSyncClient",
            ]),
        .testTarget(name: "PlatformTests", dependencies: ["CLibUV", "CZlib"]),
        .testTarget(name: "FlowSyncProcessTests", dependencies: ["FlowSyncProcess"]),
        .testTarget(name: "FlowSyncLoopTests", dependencies: ["FlowSyncLoop"]),
        .testTarget(
            name: "FlowSyncClientTests",
            dependencies: [
                "FlowSyncClient", "FlowSyncProtocol", "FlowSyncCore", "FlowSyncLoop", "FlowSyncProcess",
                "FlowSyncTestSupport",
            ]
        ),
        .testTarget(
            name: "FlowSyncUITests",
            dependencies: ["FlowSyncUI", "FlowSyncClient", "FlowSyncCore", "FlowSyncTestSupport"]
        ),
        .testTarget(
            name: "FlowSyncStoreTests",
            dependencies: [
                "FlowSyncServer", "FlowSyncProtocol", "FlowSyncCore", "FlowSyncProcess", "FlowSyncTestSupport",
            ]
        ),
        .testTarget(
            name: "FlowSyncLoadTests",
            dependencies: [
                "FlowSyncLoad", "FlowSyncCore", "FlowSyncProtocol", "FlowSyncProcess", "FlowSyncTestSupport",
            ]
        ),
        .testTarget(
            name: "FlowSyncServerTests",
            dependencies: [
                "FlowSyncServer", "FlowSyncProtocol", "FlowSyncCore", "FlowSyncLoop", "FlowSyncProcess",
                "FlowSyncTestSupport",
            ]
        ),

        .testTarget(
            name: "FlowSyncGatewayTests",
            dependencies: [
                "FlowSyncGateway", "FlowSyncGatewayCore", "FlowSyncClient", "FlowSyncProtocol", "FlowSyncCore",
                "FlowSyncServer", "FlowSyncProcess", "FlowSyncTestSupport", "CZlib",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // MARK: Benchmarks (release-mode executable; figures go to docs/BENCHMARKS.md)
        .executableTarget(
            name: "flowsync-server-bench",
            dependencies: [
                "FlowSyncCore", "FlowSyncProtocol", "FlowSyncLoop", "FlowSyncProcess", "FlowSyncServer", "FlowSyncTLS",
                "FlowSyncTestSupport", "CURing", "CLibUV",
            ],
            path: "Benchmarks/ServerBench"
        ),
        .executableTarget(
            name: "flowsync-client-bench",
            dependencies: [
                "FlowSyncClient", "FlowSyncCore", "FlowSyncServer", "FlowSyncTestSupport", "FlowSyncGateway", "FlowSyncLoop",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ClientBench"
        ),
        .executableTarget(
            name: "flowsync-bench",
            dependencies: ["FlowSyncCore", "FlowSyncTestSupport"],
            path: "Benchmarks/FlowSyncBench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
