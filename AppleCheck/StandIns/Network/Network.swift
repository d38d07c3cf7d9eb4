// The Network stand-in: see ../../README.md.
