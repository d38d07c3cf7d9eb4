// The pure half of the test support (seeded generators, the UIKit batch simulator,
// offThePool, Shared) lives in FlowSyncCoreTestSupport, so the core's tests build
// without the server (issue #30); every other test target keeps one import.
@_exported import FlowSyncCoreTestSupport
