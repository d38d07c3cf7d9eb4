// The Darwin stand-in: Glibc under Apple's module name, plus the Darwin-only names the
// project's `#if canImport(Darwin)` branches use, so those branches are type-checked on
// Linux. See ../DEVIATIONS-Network.md ("Darwin") and docs/TESTING.md.
//
// NOT a SwiftPM target. scripts/apple-check.sh emits it with
// `swiftc -emit-module -module-name Darwin` into AppleCheck/.build/darwin-standin/, and only
// the project's own targets see it (`-I` in their swiftSettings): a `Darwin` module visible
// to the whole graph would send swift-log (and swift-crypto, swift-system) down their
// Darwin branches, which do not build here.
//
// Nothing here needs linking: every declaration is `@_alwaysEmitIntoClient`, so the module
// is a .swiftmodule with no object file. A module's own declarations shadow the ones it
// re-exports (checked: a Darwin `SOCK_STREAM: Int32` here hides Glibc's in a file that
// imports Darwin).
//
// Values are transcribed from Apple's open-source XNU headers (bsd/sys/socket.h). They are
// Darwin's, not Linux's: code in a Darwin branch compiles against them, but running it
// here would pass Darwin numbers to the Linux kernel (SO_NOSIGPIPE is not a Linux option:
// setsockopt fails with ENOPROTOOPT). The AppleCheck tests therefore never run the
// POSIXSocketTransport's Darwin branch; its runtime is tested by the main package.
@_exported import Glibc

/// xnu bsd/sys/socket.h: `#define SOCK_STREAM 1 /* stream socket */`, which Darwin
/// imports as `Int32` (Glibc as the enum `__socket_type`). It shadows Glibc's in a file
/// that imports Darwin; the project's files test `canImport(Darwin)` before
/// `canImport(Glibc)`, so in such a file every use is a Darwin branch.
@_alwaysEmitIntoClient
public var SOCK_STREAM: Int32 { 1 }

/// xnu bsd/sys/socket.h: `#define SO_NOSIGPIPE 0x1022 /* APPLE: No SIGPIPE on EPIPE */`.
/// Darwin only; Linux has `MSG_NOSIGNAL` per send instead.
@_alwaysEmitIntoClient
public var SO_NOSIGPIPE: Int32 { 0x1022 }
