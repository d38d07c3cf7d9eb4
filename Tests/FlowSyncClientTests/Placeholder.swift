import Testing

@Test func FlowSyncClientTestsPlaceholder() { #expect(Bool(true)) }
