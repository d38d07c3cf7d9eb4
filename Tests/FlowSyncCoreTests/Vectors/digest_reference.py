#!/usr/bin/env python3
"""Independent reference implementation of the FlowSync state digest (docs/PROTOCOL.md,
"State digest"), used to produce the golden values in DigestTests.swift.
Requires `pip install xxhash`."""
import struct, xxhash

START, END = 1, 2
H = lambda s: xxhash.xxh64(s.encode(), seed=0).intdigest()
T = lambda tag, a, b, c: xxhash.xxh64(struct.pack('<4Q', tag, a, b, c), seed=0).intdigest()
P = lambda p: 0 if p is None else xxhash.xxh64(p, seed=1).intdigest()
content = lambda kind, payload: xxhash.xxh64(struct.pack('<I', len(kind.encode())) + kind.encode() + payload, seed=0).intdigest()

def digest(sections):
    total, prev = 0, START
    for sid, header, footer, rows in sections:
        h = H(sid)
        total += T(4, 0, prev, h) + T(3, h, P(header), P(footer))
        rprev = START
        for rid, kind, payload in rows:
            total += T(1, h, H(rid), content(kind, payload)) + T(2, h, rprev, H(rid))
            rprev = H(rid)
        total += T(2, h, rprev, END)
        prev = h
    total += T(4, 0, prev, END)
    return total % 2**64

if __name__ == "__main__":
    print("empty", hex(digest([])))
    sample = [("s1", b"H", None, [("a", "cell", b"{}"), ("b", "", b"")]), ("s2", None, b"F", [])]
    print("sample", hex(digest(sample)))
    print("content(cell, {})", hex(content("cell", b"{}")))
