// The Security stand-in: see ../../README.md.
