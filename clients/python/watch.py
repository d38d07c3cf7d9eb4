#!/usr/bin/env python3
"""Tiny FlowSync client: watch a list, or write one row to it.

  python3 watch.py [--host 127.0.0.1] [--port 7400] LIST [--duration S]
  python3 watch.py --port P LIST --insert SECTION_ID ROW_ID JSON [--kind KIND]

Watching: handshake, Subscribe, keep a replica (Snapshot, then every Diff), check the
state digest after each Diff, print each stage as a table view would apply it.
Writing: handshake, Subscribe (for the base version and to see whether the section
exists), one Mutate (insertSections if needed + insertRows), print the Ack or Reject.
"""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flowsync_tls  # noqa: E402
import flowsync_wire as fw  # noqa: E402


class Client:
    def __init__(self, host, port, client_id, args):
        # TLS unless the host is loopback (flowsync_tls: the SDK's TLSPolicy rules).
        self.sock = flowsync_tls.connect_from_arguments(args, host, port)
        self.reader = fw.FrameReader(self.sock)
        self.dictionary = b""
        self.send({"type": "hello", "minVersion": 1, "maxVersion": 1,
                   "clientName": "watch.py/1", "clientID": client_id, "authToken": args.token})
        msg = self.reader.read()
        if msg is None or msg["type"] != "welcome":
            sys.exit("handshake failed: %r" % (msg,))
        self.welcome, self.dictionary = msg, msg["dictionary"]
        # ASSUMPTION: heartbeat 0 means "no heartbeat" (the spec does not say); then
        # we still ping every 30 s so a proxy does not drop an idle connection.
        self.heartbeat = msg["heartbeatMilliseconds"] / 1000.0 or 60.0
        print("connected: %s, protocol v%d, heartbeat %d ms, dictionary %d bytes"
              % (msg["serverName"], msg["version"], msg["heartbeatMilliseconds"], len(self.dictionary)))

    def send(self, msg):
        # After the Welcome, compressed frames must use the agreed dictionary.
        self.sock.sendall(fw.encode_frame(msg, dictionary=self.dictionary))

    def read(self, deadline):
        """Next message other than Ping/Pong, or None at the deadline / on EOF.
        Sends a Ping when the connection has been quiet for half a heartbeat."""
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, min(self.heartbeat / 2, deadline - time.monotonic())))
            try:
                msg = self.reader.read()
            except socket.timeout:
                self.send({"type": "ping", "nonce": int(time.time())})
                continue
            if msg is None:
                print("connection closed by the server")
                return None
            if msg["type"] == "ping":
                self.send({"type": "pong", "nonce": msg["nonce"]})
            elif msg["type"] != "pong":
                return msg
        return None


def show_error(msg):
    if msg["type"] == "error":
        print("error %d %s: %s (reaction %s%s)" % (msg["code"], fw.code_name(msg["code"]), msg["message"],
              msg["reaction"], ", closing" if msg["closesConnection"] else ""))
    elif msg["type"] == "notice":
        print("notice %s: %s (reconnect in %d ms)" % (msg["kind"], msg["message"], msg["delayMilliseconds"]))
    else:
        print("unexpected %s" % msg["type"])


def watch(c, name, deadline):
    c.send({"type": "subscribe", "listName": name, "resumeFrom": None, "digest": None})
    replica, position = None, None
    while True:
        msg = c.read(deadline)
        if msg is None:
            return 0
        if msg.get("listName", name) != name:
            continue
        if msg["type"] == "snapshot":
            replica, position = msg["sections"], (msg["position"]["epoch"], msg["position"]["version"])
            ok = fw.digest(replica) == msg["digest"]
            print("snapshot %s v%d:%d (%s): %d sections, %d rows, digest %016x %s"
                  % (name, position[0], position[1], msg["reason"], len(replica),
                     sum(len(s["rows"]) for s in replica), msg["digest"], "ok" if ok else "MISMATCH"))
            for i, s in enumerate(replica):
                print("  section %d %s: %s" % (i, s["id"], " ".join(r["id"] for r in s["rows"])))
        elif msg["type"] == "diff":
            if replica is None:
                continue  # in flight from an old subscription; wait for the Snapshot
            if (msg["epoch"], msg["fromVersion"]) != position:
                print("diff %d:%d->%d does not follow our replica %r: resubscribing"
                      % (msg["epoch"], msg["fromVersion"], msg["toVersion"], position))
                resubscribe(c, name)
                replica = None
                continue
            tag = "v%d:%d->%d" % (msg["epoch"], msg["fromVersion"], msg["toVersion"])
            for i, stage in enumerate(msg["stages"]):
                print("%s stage %d/%d: %s" % (tag, i + 1, len(msg["stages"]), fw.describe_stage(stage, replica)))
                fw.apply_stage(replica, stage)
            position = (msg["epoch"], msg["toVersion"])
            mine = fw.digest(replica)
            who = ", ".join("%s#%d" % (m["clientID"], m["seq"]) for m in msg["mutations"])
            if mine == msg["digest"]:
                print("%s digest %016x ok%s" % (tag, mine, " (mutations: %s)" % who if who else ""))
            else:
                print("%s DIGEST MISMATCH: replica %016x, server %016x: resubscribing" % (tag, mine, msg["digest"]))
                resubscribe(c, name)
                replica = None
        else:
            show_error(msg)
            if msg["type"] == "error" and msg["closesConnection"]:
                return 1


def resubscribe(c, name):
    # One subscription per list per connection: unsubscribe first. Frames of the old
    # subscription may still arrive; diffs before the new Snapshot are ignored above.
    c.send({"type": "unsubscribe", "listName": name})
    c.send({"type": "subscribe", "listName": name, "resumeFrom": None, "digest": None})


def write(c, name, client_id, section_id, row_id, payload, kind, deadline):
    c.send({"type": "subscribe", "listName": name, "resumeFrom": None, "digest": None})
    snap = c.read(deadline)
    if snap is None or snap["type"] != "snapshot":
        show_error(snap) if snap else print("no snapshot")
        return 1
    sections = snap["sections"]
    ops = []
    sec = next((s for s in sections if s["id"] == section_id), None)
    if sec is None:
        ops.append({"op": "insertSections", "at": len(sections),
                    "sections": [{"id": section_id, "header": None, "footer": None, "rows": []}]})
    ops.append({"op": "insertRows", "section": {"id": section_id}, "at": len(sec["rows"]) if sec else 0,
                "rows": [{"id": row_id, "kind": kind, "payload": payload.encode("utf-8")}]})
    # seq must grow per new mutation of this clientID, across runs too: use the clock.
    seq = time.time_ns() // 1000
    c.send({"type": "mutate", "listName": name, "clientID": client_id, "seq": seq,
            "base": snap["position"], "operations": ops})
    print("mutate %s seq %d base %d:%d: %s" % (name, seq, snap["position"]["epoch"], snap["position"]["version"],
                                                ", ".join(o["op"] for o in ops)))
    while True:
        msg = c.read(deadline)
        if msg is None:
            print("no answer before the deadline")
            return 1
        if msg["type"] == "ack" and msg["seq"] == seq:
            print("ack: committed in %d:%d" % (msg["committed"]["epoch"], msg["committed"]["version"]))
            return 0
        if msg["type"] == "reject" and msg["seq"] == seq:
            print("reject %d %s: %s (reaction %s)" % (msg["code"], fw.code_name(msg["code"]), msg["message"],
                                                      fw.default_reaction(msg["code"])))
            return 2
        if msg["type"] not in ("diff", "snapshot"):
            show_error(msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7400)
    ap.add_argument("--client-id", default="watch.py-%s" % socket.gethostname())
    ap.add_argument("--duration", type=float, default=3600, help="stop after S seconds (default 3600)")
    ap.add_argument("--insert", nargs=3, metavar=("SECTION_ID", "ROW_ID", "JSON"))
    ap.add_argument("--kind", default="", help="row kind for --insert (default empty)")
    ap.add_argument("--token", default=os.environ.get("FLOWSYNC_TOKEN"), help="auth token (env FLOWSYNC_TOKEN)")
    flowsync_tls.add_arguments(ap)
    ap.add_argument("list")
    a = ap.parse_args()
    deadline = time.monotonic() + a.duration
    try:
        c = Client(a.host, a.port, a.client_id, a)
        if a.insert:
            rc = write(c, a.list, a.client_id, *a.insert, a.kind, deadline)
        else:
            rc = watch(c, a.list, deadline)
    except fw.ProtocolError as e:  # a client just closes on a decoding error
        print("protocol error: %s" % e)
        rc = 1
    except KeyboardInterrupt:
        rc = 0
    sys.exit(rc)


if __name__ == "__main__":
    main()
