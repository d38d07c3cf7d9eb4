#!/usr/bin/env bash
# The formatter config the code passes (issue #30): `swift format lint --strict` with the
# repository's .swift-format over every Swift source, test, benchmark, example and
# AppleCheck file. A finding fails `make test`; `make format` rewrites the tree.
#
# Files that must stay as a document shows them (docs/SDK.md's examples, checked word
# for word by a test) say `// swift-format-ignore-file` at their top.
set -euo pipefail
cd "$(dirname "$0")/.."
exec swift format lint --strict --recursive --parallel Sources Tests Benchmarks Examples AppleCheck
