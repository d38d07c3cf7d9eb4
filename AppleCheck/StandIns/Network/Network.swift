// The Network stand-in: the parts of Apple's Network framework that
// Sources/FlowSyncClient/Transport/NetworkTransport.swift and its tests use. Every public
// declaration carries its developer.apple.com path; departures are marked `// STAND-IN:`
// and listed in ../DEVIATIONS-Network.md.
//
// NWConnection runs over a real non-blocking TCP socket driven by Dispatch sources on the
// queue given to `start(queue:)`. It models Apple's documented rules (state order,
// receive/send completion semantics, cancel), not Apple's code: NWConnection.swift says
// which rules, docs/TESTING.md ("Apple's API on Linux") says what it cannot tell. TLS is
// declared but not performed: a connection with TLS parameters fails at start.
import Dispatch
import Foundation
