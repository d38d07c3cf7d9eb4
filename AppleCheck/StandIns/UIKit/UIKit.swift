// The UIKit stand-in: see ../../README.md and DEVIATIONS.md beside this file.
//
// Every public declaration in this module is transcribed from its page on
// developer.apple.com, whose path is written beside it. Behaviour is a model of UIKit's
// documented rules (the simulated table and collection views), not Apple's code. The
// simulation's drivers and inspection live behind `@_spi(Simulation)`, outside Apple's
// API surface: tests write `@_spi(Simulation) import UIKit`, app code never does.

// UIKit re-exports Foundation (an app that imports UIKit sees IndexPath, CGRect, …).
@_exported import Foundation
