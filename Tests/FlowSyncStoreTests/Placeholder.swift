import Testing

@Test func FlowSyncStoreTestsPlaceholder() { #expect(Bool(true)) }
