import Testing

@Test func FlowSyncLoadTestsPlaceholder() { #expect(Bool(true)) }
