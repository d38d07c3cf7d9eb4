#!/usr/bin/env python3
"""The SDK's portability check (issue 17; CI runs it from `make test`).

Reads the package manifest (`swift package dump-package`, or a JSON file given as the
first argument) and walks the targets that the SDK's modules need on an Apple platform,
following a target dependency only when its condition includes one. It fails when that
graph reaches CLibUV or FlowSyncLoop (libuv: Linux only), or when one of its local
targets has a source file that imports Glibc, CLibUV or FlowSyncLoop outside an
`#if canImport(...)` / `#if os(Linux)` branch that names that module or Linux.

Linux has no Apple SDK, so this is how "FlowSyncClient builds on iOS" is checked here;
the Apple-only lines themselves are reviewed by hand (docs/SDK.md, "Platforms").
"""
import json
import os
import re
import subprocess
import sys

ROOTS = ["FlowSyncClient", "FlowSyncUI"]          # FlowSyncUI: when it exists
FORBIDDEN_TARGETS = {"CLibUV", "FlowSyncLoop"}
GUARDED_MODULES = ["Glibc", "CLibUV", "FlowSyncLoop"]
APPLE = {"macos", "ios", "tvos", "watchos", "visionos", "maccatalyst", "driverkit"}


def manifest():
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            return json.load(f)
    out = subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def local_dependency(dep):
    """(target name, condition platforms or None) for a dependency on a local target."""
    for kind in ("byName", "target"):
        if kind in dep:
            name, condition = dep[kind][0], dep[kind][1]
            platforms = None
            if condition and condition.get("platformNames"):
                platforms = {p.lower() for p in condition["platformNames"]}
            return name, platforms
    return None, None   # a product of another package (swift-log): not ours to scan


def guarded(stack, module):
    """True when an enclosing, not-negated #if branch names the module or Linux."""
    for condition, negated in stack:
        if not negated and (f"canImport({module})" in condition or "os(Linux)" in condition):
            return True
    return False


def unguarded_imports(path):
    problems = []
    stack = []   # [condition, negated]
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if text.startswith("#if "):
                stack.append([text[4:], False])
            elif text.startswith("#elseif ") and stack:
                stack[-1] = [text[8:], False]
            elif text.startswith("#else") and stack:
                stack[-1][1] = True
            elif text.startswith("#endif") and stack:
                stack.pop()
            else:
                m = re.match(r"^(?:@_exported\s+|@preconcurrency\s+)?import\s+(?:[a-z]+\s+)?(\w+)", text)
                if m and m.group(1) in GUARDED_MODULES and not guarded(stack, m.group(1)):
                    problems.append(f"{path}:{number}: unconditional `import {m.group(1)}`")
    return problems


def main():
    package = manifest()
    targets = {t["name"]: t for t in package["targets"]}
    roots = [r for r in ROOTS if r in targets]
    if "FlowSyncClient" not in roots:
        print("check-portability: no FlowSyncClient target in the manifest")
        return 1
    problems = []
    seen = {}
    queue = [(r, [r]) for r in roots]
    while queue:
        name, chain = queue.pop()
        if name in seen:
            continue
        seen[name] = chain
        if name in FORBIDDEN_TARGETS:
            problems.append(f"{' -> '.join(chain)}: {name} is needed on Apple platforms")
            continue
        target = targets.get(name)
        if target is None:
            continue
        for dep in target.get("dependencies", []):
            dep_name, platforms = local_dependency(dep)
            if dep_name is None:
                continue
            if platforms is not None and not (platforms & APPLE):
                continue   # e.g. .when(platforms: [.linux])
            queue.append((dep_name, chain + [dep_name]))
    for name in sorted(seen):
        target = targets.get(name)
        if target is None or target.get("type") == "system" or name in FORBIDDEN_TARGETS:
            continue
        path = target.get("path") or os.path.join("Sources", name)
        for directory, _, files in os.walk(path):
            for file in sorted(files):
                if file.endswith(".swift"):
                    problems.extend(unguarded_imports(os.path.join(directory, file)))
    if problems:
        print("check-portability: FAILED — on Apple platforms the SDK would need libuv or Glibc:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"check-portability: OK — {', '.join(roots)} need on Apple platforms: {', '.join(sorted(seen))}; "
          "no CLibUV, FlowSyncLoop or unguarded Glibc import")
    return 0


if __name__ == "__main__":
    sys.exit(main())
