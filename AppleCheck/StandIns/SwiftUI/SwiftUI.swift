// The SwiftUI stand-in: see ../../README.md.
