// The Security stand-in: the parts of Apple's Security framework (and the CoreFoundation
// types it hands out) that the project's `#if canImport(Network)` code and its tests use.
// Every declaration carries its developer.apple.com path; every departure from Apple's
// declaration is marked `// STAND-IN:` and listed in ../DEVIATIONS-Network.md.
//
// What it does at run time: nothing here talks to a TLS stack or a trust store. Objects
// hold what they were created with (a certificate its DER bytes, a trust its certificates
// and policies, protocol options what was set on them), so the project's verify-block
// wiring can run against test data; trust evaluation always fails (no trust store; see
// SecTrustEvaluateWithError). docs/TESTING.md, "Apple's API on Linux", says what that can
// and cannot tell.
import Foundation
