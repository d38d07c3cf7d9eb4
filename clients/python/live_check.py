#!/usr/bin/env python3
"""Bounded live check against a running flowsyncd:

  python3 live_check.py --port P [--host H] [--count 60] [--seed 1] [--duration 60]
                        [--tls | --plaintext] [--cafile CA] [--server-name N] [--pin SHA256] [--token T]

One writer connection sends `count` seeded random mutations (every operation kind, one
to three operations per group), one at a time; a second connection subscribes, applies
every Diff with apply_changeset and checks the digest after each. Exit 1 on any mismatch.
"""
import argparse
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flowsync_tls  # noqa: E402
import flowsync_wire as fw  # noqa: E402


def connect(args, cid):
    # TLS unless the host is loopback, or as --tls / --plaintext say (flowsync_tls).
    s = flowsync_tls.connect_from_arguments(args, args.host, args.port)
    r = fw.FrameReader(s)
    s.sendall(fw.encode_frame({"type": "hello", "minVersion": 1, "maxVersion": 1, "clientName": "live_check",
                               "clientID": cid, "authToken": args.token}))
    w = r.read()
    assert w and w["type"] == "welcome", w
    return s, r, w["dictionary"]


def send(conn, msg):
    conn[0].sendall(fw.encode_frame(msg, dictionary=conn[2]))


def random_ops(rng, state, n):
    ops, secs = [], [s["id"] for s in state]
    rows = [r["id"] for s in state for r in s["rows"]]
    pay = lambda: ('{"v":%d,"t":"%s"}' % (rng.randrange(1000), "x" * rng.randrange(80))).encode()
    new_id = lambda p: "%s%d" % (p, rng.randrange(10**9))
    for _ in range(n):
        k = rng.choice(["insertRows"] * 4 + ["insertSections", "removeRows", "moveRow", "moveRow", "swapRows",
                                              "replaceRow", "setHeader", "setFooter", "moveSection",
                                              "swapSections", "removeSections", "setRows", "removeAllRows"])
        if not secs or k == "insertSections":
            ops.append({"op": "insertSections", "at": 0, "sections": [{"id": new_id("s"), "header": None,
                        "footer": None, "rows": [{"id": new_id("r"), "kind": "cell", "payload": pay()}]}]})
            return ops  # indices change: end the group here
        sec = {"id": rng.choice(secs)}
        if k == "insertRows" or not rows and k in ("removeRows", "moveRow", "swapRows", "replaceRow"):
            ops.append({"op": "insertRows", "section": sec, "at": 0,
                        "rows": [{"id": new_id("r"), "kind": rng.choice(["", "cell"]), "payload": pay()}
                                 for _ in range(rng.randrange(1, 4))]})
        elif k == "removeRows":
            ops.append({"op": "removeRows", "rows": [{"id": rng.choice(rows)}]})
        elif k == "moveRow":
            ops.append({"op": "moveRow", "row": {"id": rng.choice(rows)}, "toSection": sec, "at": 0})
            continue  # ID-based, order-only ops can be grouped
        elif k == "swapRows":
            ops.append({"op": "swapRows", "a": {"id": rng.choice(rows)}, "b": {"id": rng.choice(rows)}})
            continue
        elif k == "replaceRow":
            rid = rng.choice(rows)
            ops.append({"op": "replaceRow", "row": {"id": rid}, "with": {"id": rid, "kind": "cell", "payload": pay()}})
            continue
        elif k in ("setHeader", "setFooter"):
            ops.append({"op": k, "section": sec, "value": rng.choice([None, b"", pay()])})
            continue
        elif k == "moveSection":
            ops.append({"op": "moveSection", "section": sec, "to": rng.randrange(len(secs))})
        elif k == "swapSections":
            ops.append({"op": "swapSections", "a": sec, "b": {"id": rng.choice(secs)}})
        elif k == "removeSections" and len(secs) > 2:
            ops.append({"op": "removeSections", "sections": [sec]})
        elif k == "setRows":
            ops.append({"op": "setRows", "section": sec, "rows": [{"id": new_id("r"), "kind": "", "payload": pay()}]})
        elif k == "removeAllRows":
            ops.append({"op": "removeAllRows", "section": sec})
        return ops  # a structural op ends the group, so later ops' IDs stay valid
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--token", default=os.environ.get("FLOWSYNC_TOKEN"))
    flowsync_tls.add_arguments(ap)
    ap.add_argument("--list", default="live-check-%d" % os.getpid())
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=60)
    a = ap.parse_args()
    rng, deadline = random.Random(a.seed), time.monotonic() + a.duration
    writer, sub = connect(a, "live-writer-%d" % os.getpid()), connect(a, "live-sub")
    replicas = {}
    for conn in (writer, sub):
        send(conn, {"type": "subscribe", "listName": a.list, "resumeFrom": None, "digest": None})
        snap = conn[1].read()
        assert snap["type"] == "snapshot", snap
        replicas[id(conn)] = [snap["sections"], snap["position"]["version"], snap["position"]["epoch"]]
    stats = {"multi": 0, "diffs": 0, "stages": 0, "mismatch": 0, "ack": 0, "reject": 0}
    kinds = set()

    def pump(conn, until_version):
        rep = replicas[id(conn)]
        while rep[1] < until_version and time.monotonic() < deadline:
            m = conn[1].read()
            if m["type"] == "diff":
                assert m["fromVersion"] == rep[1], (m["fromVersion"], rep[1])
                fw.apply_changeset(rep[0], m)
                rep[1] = m["toVersion"]
                if conn is sub:
                    stats["diffs"] += 1
                    stats["stages"] += len(m["stages"])
                    stats["multi"] += len(m["stages"]) > 1
                    kinds.update(k for st in m["stages"] for k in st)
                    if fw.digest(rep[0]) != m["digest"]:
                        stats["mismatch"] += 1
                        print("MISMATCH after v%d: stages %r" % (m["toVersion"], m["stages"]))

    for seq in range(1, a.count + 1):
        if time.monotonic() > deadline:
            print("deadline reached")
            break
        state, version, epoch = replicas[id(writer)]
        ops = random_ops(rng, state, rng.randrange(1, 5))
        send(writer, {"type": "mutate", "listName": a.list, "clientID": "live-writer-%d" % os.getpid(),
                      "seq": seq, "base": {"epoch": epoch, "version": version}, "operations": ops})
        while True:
            m = writer[1].read()
            if m["type"] == "diff":
                rep = replicas[id(writer)]
                fw.apply_changeset(rep[0], m)
                rep[1] = m["toVersion"]
            elif m["type"] == "error":
                sys.exit("error %d: %s" % (m["code"], m["message"]))
            elif m["type"] in ("ack", "reject"):
                stats[m["type"]] += 1
                if m["type"] == "reject":
                    print("reject %d: %s (ops %s)" % (m["code"], m["message"], [o["op"] for o in ops]))
                break
        pump(writer, replicas[id(writer)][1] if m["type"] == "reject" else m["committed"]["version"])
        pump(sub, replicas[id(writer)][1])
    ok = fw.digest(replicas[id(sub)][0]) == fw.digest(replicas[id(writer)][0])
    print("%(diffs)d diffs, %(stages)d stages (%(multi)d diffs with several), %(ack)d acks, %(reject)d rejects, %(mismatch)d digest mismatches"
          % stats)
    print("stage lists seen: " + ", ".join(sorted(kinds)))
    print("subscriber replica == writer replica: %s" % ok)
    sys.exit(0 if ok and not stats["mismatch"] else 1)


if __name__ == "__main__":
    main()
