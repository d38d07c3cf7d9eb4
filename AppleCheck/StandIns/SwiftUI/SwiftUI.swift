// The SwiftUI stand-in: see ../../README.md and DEVIATIONS.md here.
//
// Every declaration is transcribed from its developer.apple.com page, whose path is in
// the comment beside it (the pages are those of the Xcode 27 SDK, which is why builder
// parameters read `@ContentBuilder` and many declarations `nonisolated` or
// `@export(implementation)`). Availability is given as the page lists it. Bodies are
// `fatalError()` or minimal: nothing here draws, lays out or updates anything, and
// nothing in AppleCheck runs a SwiftUI view. What the stand-in checks is that the
// project's SwiftUI code and its example app type-check against SwiftUI's declared API:
// labels, generic constraints, builder attributes, isolation.
//
// `STAND-IN:` marks what Linux or the missing page forced; DEVIATIONS.md lists them all.
@_exported import Foundation  // CGFloat, IndexSet (SwiftUI re-exports what its API uses)
@_exported import Observation  // STAND-IN: on Apple platforms SwiftUI re-exports Observation
