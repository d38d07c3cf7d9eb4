// The SDK's public API names types of two other modules: the model (`Director`,
// `Changeset`, `MutationError`, `RowPath`: FlowSyncCore) and the wire catalog
// (`ErrorCode`, `Snapshot.Reason`, `ListVersion`: FlowSyncProtocol). Both are products of
// the package, so an app may import them by name; they are also re-exported here so
// that `import FlowSyncClient` alone lets an app name every type the SDK hands it.
//
// `@_exported` is underscored but has been stable for years and is what swift-nio,
// swift-log's users and Apple's own overlays rely on; the alternative (moving or
// wrapping ErrorCode and friends) would fork the error catalog the server shares.
@_exported import FlowSyncCore
@_exported import FlowSyncProtocol
