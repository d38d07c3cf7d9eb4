#!/usr/bin/env python3
"""The SDK's portability check (issue 17; CI runs it from `make test`).

Reads the package manifest (`swift package dump-package`, or a JSON file given as the
first argument) and walks the targets that the SDK's modules need on an Apple platform,
following a target dependency only when its condition includes one. It fails when that
graph reaches CLibUV or FlowSyncLoop (libuv: Linux only) or CLibSSL or FlowSyncTLS
(OpenSSL: Linux only), or when one of its local targets has a source file that imports
Glibc, CLibUV, FlowSyncLoop, CLibSSL or FlowSyncTLS outside an
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
# OpenSSL (CLibSSL, FlowSyncTLS: the Linux transport's TLS, issue #32) is Linux-only too:
# on Apple platforms TLS is Network.framework's.
FORBIDDEN_TARGETS = {"CLibUV", "FlowSyncLoop", "CLibSSL", "FlowSyncTLS"}
GUARDED_MODULES = ["Glibc", "CLibUV", "FlowSyncLoop", "CLibSSL", "FlowSyncTLS"]
APPLE = {"macos", "ios", "tvos", "watchos", "visionos", "maccatalyst", "driverkit"}


def manifest():
    files = [a for a in sys.argv[1:] if not a.startswith("--")]
    if files:
        with open(files[0]) as f:
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
    if "--compile" in sys.argv:
        return compile_apple_graph(package, targets, sorted(seen), roots)
    return 0


def compile_apple_graph(package, targets, names, roots):
    """Builds exactly the Apple-platform graph, on Linux, in a throw-away package.

    Its manifest is generated from the real one: the same targets (their sources through
    symlinks), only the dependencies that apply on an Apple platform, and the packages
    they name. FlowSyncLoop is then absent, so every `#if canImport(FlowSyncLoop)` is
    false and the SDK's non-libuv paths (its default transport there is
    POSIXSocketTransport) must compile. Network.framework code still cannot: Linux has no
    Network module (those lines are listed in docs/SDK.md, "Not done, or doubtful").
    """
    root = os.getcwd()
    work = os.path.join(root, ".build", "portability-check")
    os.makedirs(os.path.join(work, "Sources"), exist_ok=True)
    packages = {}
    for dep in package.get("dependencies", []):
        for kind, entries in dep.items():
            for entry in entries:
                url = ((entry.get("location") or {}).get("remote") or [{}])[0].get("urlString")
                rng = (entry.get("requirement") or {}).get("range")
                if url and rng:
                    packages[entry["identity"]] = (url, rng[0]["lowerBound"], rng[0]["upperBound"])
    lines, used = [], set()
    for name in names:
        target = targets[name]
        link = os.path.join(work, "Sources", name)
        source = os.path.join(root, target.get("path") or os.path.join("Sources", name))
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(source, link)
        deps = []
        for dep in target.get("dependencies", []):
            if "product" in dep:
                product, pkg, _, condition = dep["product"]
                platforms = {p.lower() for p in (condition or {}).get("platformNames") or []}
                if platforms and not (platforms & APPLE):
                    continue
                used.add(pkg)
                deps.append(f'.product(name: "{product}", package: "{pkg}")')
            else:
                dep_name, platforms = local_dependency(dep)
                if platforms is not None and not (platforms & APPLE):
                    continue
                deps.append(f'"{dep_name}"')
        settings = []
        for setting in target.get("settings", []):
            kind = setting["kind"]
            if setting["tool"] == "linker" and "linkedLibrary" in kind:
                settings.append(f'.linkedLibrary("{kind["linkedLibrary"]["_0"]}")')
            else:
                print(f"check-portability: cannot reproduce a setting of {name}: {setting}")
                return 1
        exclude = ", ".join(f'"{e}"' for e in target.get("exclude", []))
        lines.append(f'        .target(name: "{name}", dependencies: [{", ".join(deps)}], path: "Sources/{name}", '
                     f'exclude: [{exclude}], linkerSettings: [{", ".join(settings)}]),')
    dependencies = [f'        .package(url: "{packages[p][0]}", "{packages[p][1]}"..<"{packages[p][2]}"),' for p in sorted(used)]
    manifest = "\n".join([
        "// swift-tools-version:6.1",
        "// Generated by scripts/check-portability.py --compile: the SDK's Apple-platform graph.",
        "import PackageDescription",
        "let package = Package(",
        '    name: "FlowSyncApplePlatformGraph",',
        "    dependencies: [", *dependencies, "    ],",
        "    targets: [", *lines, "    ],",
        "    swiftLanguageModes: [.v6]",
        ")", ""])
    with open(os.path.join(work, "Package.swift"), "w") as f:
        f.write(manifest)
    print(f"check-portability: compiling {', '.join(names)} without FlowSyncLoop in {os.path.relpath(work)}")
    result = subprocess.run(["swift", "build", "--package-path", work] + [a for r in roots for a in ("--target", r)])
    if result.returncode != 0:
        print("check-portability: FAILED — the SDK's Apple-platform graph does not compile without libuv")
        return 1
    print("check-portability: OK — the Apple-platform graph compiles without FlowSyncLoop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
