// The UIKit stand-in: see ../../README.md.
