"""FlowSync wire protocol v1: a stdlib-only Python encoder/decoder.

Written from docs/PROTOCOL.md alone (no Swift source was consulted).

Data model (plain Python values):
  Row            {"id": str, "kind": str, "payload": bytes}
  Section        {"id": str, "header": bytes|None, "footer": bytes|None, "rows": [Row]}
  SectionRef     {"id": str} | {"index": int}
  RowRef         {"id": str} | {"index": int, "section": SectionRef}
  RowPath        [section, row]
  ListVersion    {"epoch": int, "version": int}
  MutationID     {"clientID": str, "seq": int}
  Operation      {"op": name, ...fields...}   (names as in the spec's Operations table)
  Stage          {"sectionDeletes": [int], "sectionInserts": [{"index": int, "section": Section}],
                  "sectionMoves": [{"from": int, "to": int}],
                  "supplementaryUpdates": [{"section": int, "element": "header"|"footer", "value": bytes|None}],
                  "rowDeletes": [RowPath], "rowInserts": [{"path": RowPath, "row": Row}],
                  "rowMoves": [{"from": RowPath, "to": RowPath}], "rowUpdates": [{"path": RowPath, "row": Row}]}
                 (absent keys = empty lists)
  Message        {"type": "hello"|"welcome"|..., ...fields...}; digests are ints.

Main entry points: encode_frame(msg, ...), decode_frame(buf, ...), FrameReader,
apply_changeset(state, changeset), digest(state), xxh64(data, seed).
"""

import os
import struct
import zlib

# --------------------------------------------------------------------------- errors

class ProtocolError(Exception):
    """A decoding error; .code is the spec's numeric code (1000, 3000, ...)."""

    NAMES = {
        1000: "malformed-frame", 1001: "unknown-message-type", 1002: "unsupported-protocol-version",
        1003: "bad-compression", 1004: "handshake-required", 1005: "handshake-timeout",
        1006: "unexpected-message", 1007: "compression-not-allowed", 1008: "heartbeat-timeout",
        2000: "auth-required", 2001: "invalid-token", 2002: "token-expired", 2003: "forbidden",
        3000: "frame-too-large", 3001: "inflated-too-large", 3002: "too-many-lists",
        3003: "too-many-ops", 3004: "id-too-long", 3005: "limit-exceeded",
        3006: "too-many-elements", 3007: "payload-too-large", 3008: "rate-limited",
        3009: "slow-consumer", 3010: "write-timeout",
        4000: "index-out-of-range", 4001: "duplicate-id", 4002: "unknown-section",
        4003: "unknown-row", 4004: "invalid-id", 4010: "conflict", 4011: "stale-base-version",
        4012: "unknown-list", 4013: "already-subscribed", 4014: "not-subscribed",
        5000: "server-shutting-down", 5001: "server-draining", 5002: "internal-error",
        5003: "overloaded", 5004: "backup-refused",
    }

    def __init__(self, code, message):
        super().__init__("%d %s: %s" % (code, self.NAMES.get(code, "?"), message))
        self.code = code


MALFORMED, UNKNOWN_TYPE, BAD_COMPRESSION = 1000, 1001, 1003
FRAME_TOO_LARGE, INFLATED_TOO_LARGE, TOO_MANY_OPS = 3000, 3001, 3003
ID_TOO_LONG, TOO_MANY_ELEMENTS, PAYLOAD_TOO_LARGE = 3004, 3006, 3007


def code_name(code):
    return ProtocolError.NAMES.get(code, "unknown-%d" % code)


_BACKOFF = {3008: 1000, 3009: 1000, 3010: 1000, 5000: 1000, 5002: 1000, 5003: 5000}
_TABLE_REACTIONS = {1005: "retry", 2003: "giveUp", 4001: "giveUp", 4004: "giveUp",
                    4012: "giveUp", 4013: "giveUp", 4014: "giveUp", 5001: "retry", 5004: "giveUp"}


def default_reaction(code):
    """Reaction for a code without an explicit one (a Reject): the 'Error codes' table
    for known codes, else by range (1xxx/3xxx give up, 2xxx refresh token, 4xxx resync,
    5xxx back off 1 s)."""
    if code in _BACKOFF:
        return {"backoffMilliseconds": _BACKOFF[code]}
    if code in _TABLE_REACTIONS:
        return _TABLE_REACTIONS[code]
    if 2000 <= code < 3000:
        return "refreshToken"
    if 4000 <= code < 5000:
        return "resync"
    if 5000 <= code < 6000:
        return {"backoffMilliseconds": 1000}
    return "giveUp"

# --------------------------------------------------------------------------- limits

# The spec's "client" column of the Limits table.
CLIENT_LIMITS = {
    "frame": 256 << 20, "inflated": 1 << 30, "listName": 256, "id": 256, "kind": 64,
    "payload": 64 << 10, "text": 8 << 10, "dictionary": 32 << 10, "ops": 1000,
    "sections": 10000, "rows": 2000000, "changes": 4000000, "stages": 16, "entries": 10000,
}
# The spec's "server, after Welcome" column (useful to test a server-side decoder).
SERVER_LIMITS = dict(CLIENT_LIMITS, frame=4 << 20, inflated=16 << 20, rows=100000,
                     changes=100000)

# --------------------------------------------------------------------------- XXH64

_M64 = (1 << 64) - 1
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def _merge(acc, val):
    return ((acc ^ _round(0, val)) * _P1 + _P4) & _M64


def xxh64_pure(data, seed=0):
    """Pure-Python XXH64 (reference algorithm)."""
    n, i = len(data), 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _M64
        v2 = (seed + _P2) & _M64
        v3 = seed & _M64
        v4 = (seed - _P1) & _M64
        while i + 32 <= n:
            a, b, c, d = struct.unpack_from("<4Q", data, i)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M64
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        (k,) = struct.unpack_from("<Q", data, i)
        h = (_rotl(h ^ _round(0, k), 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        (k,) = struct.unpack_from("<I", data, i)
        h = (_rotl(h ^ ((k * _P1) & _M64), 23) * _P2 + _P3) & _M64
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * _P5) & _M64), 11) * _P1) & _M64
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M64
    h ^= h >> 29
    h = (h * _P3) & _M64
    h ^= h >> 32
    return h


try:  # optional accelerator; the module works without it (FLOWSYNC_PURE_XXH64=1 forces pure)
    if os.environ.get("FLOWSYNC_PURE_XXH64"):
        raise ImportError
    import xxhash as _xxhash

    def xxh64(data, seed=0):
        return _xxhash.xxh64_intdigest(bytes(data), seed)
except ImportError:  # pragma: no cover
    xxh64 = xxh64_pure

# --------------------------------------------------------------------------- state digest

START, END = 1, 2


def content_hash(row):
    kind = row["kind"].encode("utf-8")
    return xxh64(struct.pack("<I", len(kind)) + kind + bytes(row["payload"]), 0)


def _H(s):
    return xxh64(s.encode("utf-8"), 0)


def _T(tag, a, b, c):
    return xxh64(struct.pack("<4Q", tag, a, b, c), 0)


def _P(x):
    return 0 if x is None else xxh64(bytes(x), 1)


def digest(state):
    """State digest of a list (a list of Section dicts), per 'State digest'."""
    total = 0
    prev = START
    for s in state:
        hs = _H(s["id"])
        total += _T(3, hs, _P(s.get("header")), _P(s.get("footer")))
        total += _T(4, 0, prev, hs)
        prev = hs
        rprev = START
        for r in s["rows"]:
            hr = _H(r["id"])
            total += _T(1, hs, hr, content_hash(r))
            total += _T(2, hs, rprev, hr)
            rprev = hr
        total += _T(2, hs, rprev, END)
    total += _T(4, 0, prev, END)
    return total & _M64

# --------------------------------------------------------------------------- writer

class Writer:
    def __init__(self):
        self.b = bytearray()

    def u8(self, v):
        self.b.append(v)

    def u16(self, v):
        self.b += struct.pack(">H", v)

    def u64(self, v):
        self.b += struct.pack(">Q", v & _M64)

    def i64(self, v):
        self.b += struct.pack(">q", v)

    def varint(self, v):
        if not 0 <= v <= _M64:
            raise ValueError("varint out of range: %r" % v)
        while v >= 0x80:
            self.b.append((v & 0x7F) | 0x80)
            v >>= 7
        self.b.append(v)

    def index(self, v):
        if not 0 <= v <= 0x7FFFFFFF:
            raise ValueError("index out of range: %r" % v)
        self.varint(v)

    def bool(self, v):
        self.b.append(1 if v else 0)

    def bytes_(self, v):
        self.varint(len(v))
        self.b += v

    def string(self, v):
        self.bytes_(v.encode("utf-8"))

    def optional(self, v, fn):
        self.bool(v is not None)
        if v is not None:
            fn(v)

    def array(self, items, fn):
        self.index(len(items))
        for x in items:
            fn(x)

    def list_version(self, v):
        self.varint(v["epoch"])
        self.varint(v["version"])

    # model values
    def row(self, r):
        self.string(r["id"])
        self.string(r["kind"])
        self.bytes_(r["payload"])

    def section(self, s):
        self.string(s["id"])
        self.optional(s.get("header"), self.bytes_)
        self.optional(s.get("footer"), self.bytes_)
        self.array(s.get("rows", []), self.row)

    def section_ref(self, ref):
        if "id" in ref:
            self.u8(0)
            self.string(ref["id"])
        else:
            self.u8(1)
            self.index(ref["index"])

    def row_ref(self, ref):
        if "id" in ref:
            self.u8(0)
            self.string(ref["id"])
        else:
            self.u8(1)
            self.index(ref["index"])
            self.section_ref(ref["section"])

    def row_path(self, p):
        self.index(p[0])
        self.index(p[1])

    def mutation_id(self, m):
        self.string(m["clientID"])
        self.varint(m["seq"])

    def operation(self, op):
        name = op["op"]
        self.u8(OP_TAGS[name])
        if name == "setSections":
            self.array(op["sections"], self.section)
        elif name == "insertSections":
            self.index(op["at"])
            self.array(op["sections"], self.section)
        elif name == "removeSections":
            self.array(op["sections"], self.section_ref)
        elif name == "removeAllSections":
            pass
        elif name == "moveSection":
            self.section_ref(op["section"])
            self.index(op["to"])
        elif name in ("swapSections", "swapRows"):
            (self.section_ref if name == "swapSections" else self.row_ref)(op["a"])
            (self.section_ref if name == "swapSections" else self.row_ref)(op["b"])
        elif name in ("setHeader", "setFooter"):
            self.section_ref(op["section"])
            self.optional(op["value"], self.bytes_)
        elif name == "setRows":
            self.section_ref(op["section"])
            self.array(op["rows"], self.row)
        elif name == "insertRows":
            self.section_ref(op["section"])
            self.index(op["at"])
            self.array(op["rows"], self.row)
        elif name == "replaceRow":
            self.row_ref(op["row"])
            self.row(op["with"])
        elif name == "removeRows":
            self.array(op["rows"], self.row_ref)
        elif name == "removeAllRows":
            self.section_ref(op["section"])
        elif name == "moveRow":
            self.row_ref(op["row"])
            self.section_ref(op["toSection"])
            self.index(op["at"])

    def stage(self, st):
        mask = 0
        for bit, key in enumerate(STAGE_KEYS):
            if st.get(key):
                mask |= 1 << bit
        self.u8(mask)
        for bit, key in enumerate(STAGE_KEYS):
            items = st.get(key)
            if not items:
                continue
            self.index(len(items))
            for e in items:
                if key == "sectionDeletes":
                    self.index(e)
                elif key == "sectionInserts":
                    self.index(e["index"])
                    self.section(e["section"])
                elif key == "sectionMoves":
                    self.index(e["from"])
                    self.index(e["to"])
                elif key == "supplementaryUpdates":
                    self.index(e["section"])
                    self.u8(SUPPLEMENTARY.index(e["element"]))
                    self.optional(e["value"], self.bytes_)
                elif key == "rowDeletes":
                    self.row_path(e)
                elif key in ("rowInserts", "rowUpdates"):
                    self.row_path(e["path"])
                    self.row(e["row"])
                elif key == "rowMoves":
                    self.row_path(e["from"])
                    self.row_path(e["to"])


OP_TAGS = {
    "setSections": 0x01, "insertSections": 0x02, "removeSections": 0x03,
    "removeAllSections": 0x04, "moveSection": 0x05, "swapSections": 0x06,
    "setHeader": 0x07, "setFooter": 0x08, "setRows": 0x10, "insertRows": 0x11,
    "replaceRow": 0x12, "removeRows": 0x13, "removeAllRows": 0x14, "moveRow": 0x15,
    "swapRows": 0x16,
}
OP_NAMES = {v: k for k, v in OP_TAGS.items()}
STAGE_KEYS = ["sectionDeletes", "sectionInserts", "sectionMoves", "supplementaryUpdates",
              "rowDeletes", "rowInserts", "rowMoves", "rowUpdates"]
SUPPLEMENTARY = ["header", "footer"]
SNAPSHOT_REASONS = ["freshSubscribe", "resumeTooOld", "epochChanged", "resyncRequested"]
REACTIONS = {0: "retry", 1: "resync", 2: "giveUp", 4: "refreshToken"}  # 3: back off
NOTICE_KINDS = {1: "draining", 2: "shuttingDown"}

MESSAGE_TYPES = {
    0x01: "hello", 0x02: "welcome", 0x10: "subscribe", 0x11: "unsubscribe", 0x12: "mutate",
    0x13: "statsRequest", 0x14: "refreshToken", 0x15: "backupRequest", 0x20: "snapshot", 0x21: "diff",
    0x22: "ack", 0x23: "reject", 0x24: "notice", 0x25: "statsReply", 0x26: "backupReply",
    0x30: "error", 0x31: "ping", 0x32: "pong",
}
TYPE_CODES = {v: k for k, v in MESSAGE_TYPES.items()}
NEVER_COMPRESSED = {"hello", "welcome", "error"}
WELCOME_LIMITS = ["maxFrameBytes", "maxInflatedBytes", "maxOpsPerMutation",
                  "maxListsPerConnection", "maxListNameBytes", "maxIDBytes", "maxPayloadBytes"]


def encode_body(msg):
    """Message dict -> raw (uncompressed) body bytes."""
    w, t = Writer(), msg["type"]
    if t == "hello":
        w.b += b"FSYN"
        w.u16(msg["minVersion"])
        w.u16(msg["maxVersion"])
        w.string(msg["clientName"])
        w.string(msg["clientID"])
        w.optional(msg.get("authToken"), w.string)
    elif t == "welcome":
        w.u16(msg["version"])
        w.string(msg["serverName"])
        for k in WELCOME_LIMITS:
            w.varint(msg["limits"][k])
        w.varint(msg["heartbeatMilliseconds"])
        w.bytes_(msg.get("dictionary", b""))
    elif t == "subscribe":
        w.string(msg["listName"])
        w.optional(msg.get("resumeFrom"), w.list_version)
        w.optional(msg.get("digest"), w.u64)
    elif t == "unsubscribe":
        w.string(msg["listName"])
    elif t == "mutate":
        w.string(msg["listName"])
        w.string(msg["clientID"])
        w.varint(msg["seq"])
        w.list_version(msg["base"])
        w.array(msg["operations"], w.operation)
    elif t == "statsRequest":
        w.varint(msg["requestID"])
        w.optional(msg.get("listName"), w.string)
    elif t == "refreshToken":
        w.string(msg["token"])
    elif t == "backupRequest":
        w.varint(msg["requestID"])
        w.string(msg["directory"])
    elif t == "backupReply":
        w.varint(msg["requestID"])
        w.u16(msg["failure"] or 0)   # code 0: written
        w.string(msg["message"])
        w.varint(msg["lists"])
        w.varint(msg["bytes"])
    elif t == "snapshot":
        w.string(msg["listName"])
        w.list_version(msg["position"])
        w.u64(msg["digest"])
        w.u8(SNAPSHOT_REASONS.index(msg["reason"]))
        w.array(msg["sections"], w.section)
    elif t == "diff":
        w.string(msg["listName"])
        w.varint(msg["epoch"])
        w.varint(msg["fromVersion"])
        w.varint(msg["toVersion"])
        w.u64(msg["digest"])
        w.array(msg["stages"], w.stage)
        w.array(msg["mutations"], w.mutation_id)
    elif t == "ack":
        w.string(msg["listName"])
        w.varint(msg["seq"])
        w.list_version(msg["committed"])
    elif t == "reject":
        w.string(msg["listName"])
        w.varint(msg["seq"])
        w.u16(msg["code"])
        w.string(msg["message"])
    elif t == "notice":
        kinds = {v: k for k, v in NOTICE_KINDS.items()}
        w.u8(kinds[msg["kind"]])
        w.string(msg["message"])
        w.varint(msg["delayMilliseconds"])
    elif t == "statsReply":
        w.varint(msg["requestID"])

        def entry(e):
            w.string(e["name"])
            w.i64(e["value"])
        w.array(msg["entries"], entry)
    elif t == "error":
        w.u16(msg["code"])
        w.string(msg["message"])
        r = msg["reaction"]
        if isinstance(r, dict):
            w.u8(3)
            w.varint(r["backoffMilliseconds"])
        else:
            w.u8({v: k for k, v in REACTIONS.items()}[r])
        w.optional(msg.get("listName"), w.string)
        w.bool(msg["closesConnection"])
    elif t in ("ping", "pong"):
        w.varint(msg["nonce"])
    else:
        raise ValueError("unknown message type %r" % t)
    return bytes(w.b)


def deflate(body, dictionary=b""):
    """zlib stream with the reference settings (level 6, wbits 15, memLevel 8)."""
    kw = {"zdict": dictionary} if dictionary else {}
    c = zlib.compressobj(6, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, **kw)
    return c.compress(body) + c.flush()


def encode_frame(msg, compress="auto", dictionary=b"", threshold=64):
    """Message dict -> whole frame.  compress: "auto" (spec's SHOULD: >= threshold bytes
    and strictly smaller), True (compress whenever strictly smaller), False (raw)."""
    body = encode_body(msg)
    flags = 0
    if compress and msg["type"] not in NEVER_COMPRESSED and (compress is True or len(body) >= threshold):
        z = deflate(body, dictionary)
        if len(z) < len(body):
            body, flags = z, 1
    return struct.pack(">IBB", 2 + len(body), TYPE_CODES[msg["type"]], flags) + body

# --------------------------------------------------------------------------- reader

class Reader:
    def __init__(self, data, limits):
        self.d, self.i, self.lim = memoryview(data), 0, limits
        self.counts = {"sections": 0, "rows": 0, "changes": 0, "entries": 0}

    def left(self):
        return len(self.d) - self.i

    def take(self, n):
        if n > self.left():
            raise ProtocolError(MALFORMED, "truncated body (need %d bytes, %d left)" % (n, self.left()))
        v = bytes(self.d[self.i:self.i + n])
        self.i += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u16(self):
        return struct.unpack(">H", self.take(2))[0]

    def u64(self):
        return struct.unpack(">Q", self.take(8))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def varint(self):
        v = shift = 0
        for n in range(10):
            b = self.u8()
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                if b == 0 and n > 0:
                    raise ProtocolError(MALFORMED, "varint not in shortest form")
                if v > _M64:
                    raise ProtocolError(MALFORMED, "varint above 2^64-1")
                return v
            shift += 7
        raise ProtocolError(MALFORMED, "varint longer than 10 bytes")

    def index(self):
        v = self.varint()
        if v > 0x7FFFFFFF:
            raise ProtocolError(MALFORMED, "index above 2^31-1")
        return v

    def bool(self):
        b = self.u8()
        if b > 1:
            raise ProtocolError(MALFORMED, "bool byte %d" % b)
        return b == 1

    def bytes_(self, limit=None, code=PAYLOAD_TOO_LARGE):
        n = self.varint()
        if n > self.left():
            raise ProtocolError(MALFORMED, "length %d beyond the body" % n)
        if limit is not None and n > self.lim[limit]:
            raise ProtocolError(code, "%s of %d bytes above %d" % (limit, n, self.lim[limit]))
        return self.take(n)

    def string(self, limit="text", code=None):
        if code is None:
            code = ID_TOO_LONG if limit in ("id", "kind", "listName") else PAYLOAD_TOO_LARGE
        raw = self.bytes_(limit, code)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(MALFORMED, "invalid UTF-8")

    def optional(self, fn):
        return fn() if self.bool() else None

    def count(self, kind=None, min_size=1):
        """An array count: checked against bytes left, then against the total limit."""
        n = self.index()
        if n * min_size > self.left():
            raise ProtocolError(MALFORMED, "count %d cannot fit in %d bytes" % (n, self.left()))
        if kind is not None:
            self.counts[kind] += n
            if self.counts[kind] > self.lim[kind]:
                raise ProtocolError(TOO_MANY_ELEMENTS, "more than %d %s" % (self.lim[kind], kind))
        return n

    def list_version(self):
        return {"epoch": self.varint(), "version": self.varint()}

    # model values
    def row(self):
        return {"id": self.string("id"), "kind": self.string("kind"), "payload": self.bytes_("payload")}

    def rows(self):
        return [self.row() for _ in range(self.count("rows", 3))]

    def section(self):
        s = {"id": self.string("id")}
        s["header"] = self.optional(lambda: self.bytes_("payload"))
        s["footer"] = self.optional(lambda: self.bytes_("payload"))
        s["rows"] = self.rows()
        return s

    def sections(self):
        return [self.section() for _ in range(self.count("sections", 4))]

    def section_ref(self):
        tag = self.u8()
        if tag == 0:
            return {"id": self.string("id")}
        if tag == 1:
            return {"index": self.index()}
        raise ProtocolError(MALFORMED, "SectionRef tag %d" % tag)

    def row_ref(self):
        tag = self.u8()
        if tag == 0:
            return {"id": self.string("id")}
        if tag == 1:
            return {"index": self.index(), "section": self.section_ref()}
        raise ProtocolError(MALFORMED, "RowRef tag %d" % tag)

    def row_path(self):
        return [self.index(), self.index()]

    def mutation_id(self):
        return {"clientID": self.string("id"), "seq": self.varint()}

    def operation(self):
        tag = self.u8()
        name = OP_NAMES.get(tag)
        if name is None:
            raise ProtocolError(MALFORMED, "operation tag 0x%02x" % tag)
        op = {"op": name}
        if name == "setSections":
            op["sections"] = self.sections()
        elif name == "insertSections":
            op["at"] = self.index()
            op["sections"] = self.sections()
        elif name == "removeSections":
            op["sections"] = [self.section_ref() for _ in range(self.count("sections", 2))]
        elif name == "moveSection":
            op["section"] = self.section_ref()
            op["to"] = self.index()
        elif name == "swapSections":
            self.counts["sections"] += 2
            op["a"], op["b"] = self.section_ref(), self.section_ref()
        elif name in ("setHeader", "setFooter"):
            op["section"] = self.section_ref()
            op["value"] = self.optional(lambda: self.bytes_("payload"))
        elif name == "setRows":
            op["section"] = self.section_ref()
            op["rows"] = self.rows()
        elif name == "insertRows":
            op["section"] = self.section_ref()
            op["at"] = self.index()
            op["rows"] = self.rows()
        elif name == "replaceRow":
            op["row"] = self.row_ref()
            op["with"] = self.row()
        elif name == "removeRows":
            op["rows"] = [self.row_ref() for _ in range(self.count("rows", 2))]
        elif name == "removeAllRows":
            op["section"] = self.section_ref()
        elif name == "moveRow":
            op["row"] = self.row_ref()
            op["toSection"] = self.section_ref()
            op["at"] = self.index()
        elif name == "swapRows":
            op["a"], op["b"] = self.row_ref(), self.row_ref()
        return op

    def stage(self):
        mask, st = self.u8(), {}
        # ASSUMPTION: a mask of 0 (an empty stage) is accepted; the spec does not say.
        for bit, key in enumerate(STAGE_KEYS):
            if not mask & (1 << bit):
                continue
            n = self.count("changes", 1)
            if n == 0:
                raise ProtocolError(MALFORMED, "stage list %s with bit set but count 0" % key)
            items = []
            for _ in range(n):
                if key == "sectionDeletes":
                    items.append(self.index())
                elif key == "sectionInserts":
                    self.counts["sections"] += 1
                    items.append({"index": self.index(), "section": self.section()})
                elif key == "sectionMoves":
                    items.append({"from": self.index(), "to": self.index()})
                elif key == "supplementaryUpdates":
                    sec, el = self.index(), self.u8()
                    if el > 1:  # ASSUMPTION: the spec does not say what other values mean
                        raise ProtocolError(MALFORMED, "supplementary element %d" % el)
                    items.append({"section": sec, "element": SUPPLEMENTARY[el],
                                  "value": self.optional(lambda: self.bytes_("payload"))})
                elif key == "rowDeletes":
                    items.append(self.row_path())
                elif key in ("rowInserts", "rowUpdates"):
                    self.counts["rows"] += 1
                    items.append({"path": self.row_path(), "row": self.row()})
                elif key == "rowMoves":
                    items.append({"from": self.row_path(), "to": self.row_path()})
            st[key] = items
        for k in ("sections", "rows"):
            if self.counts[k] > self.lim[k]:
                raise ProtocolError(TOO_MANY_ELEMENTS, "more than %d %s" % (self.lim[k], k))
        return st


def decode_body(mtype, body, limits=CLIENT_LIMITS):
    """Raw message body -> message dict. Raises ProtocolError."""
    name = MESSAGE_TYPES.get(mtype)
    if name is None:
        raise ProtocolError(UNKNOWN_TYPE, "type 0x%02x" % mtype)
    r, m = Reader(body, limits), {"type": name}
    if name == "hello":
        if r.take(4) != b"FSYN":
            raise ProtocolError(1002, "bad Hello magic")
        m["minVersion"], m["maxVersion"] = r.u16(), r.u16()
        m["clientName"] = r.string("text")
        m["clientID"] = r.string("id")
        m["authToken"] = r.optional(lambda: r.string("text"))
    elif name == "welcome":
        m["version"] = r.u16()
        m["serverName"] = r.string("text")
        m["limits"] = {}
        for k in WELCOME_LIMITS:
            v = r.varint()
            if v > 0xFFFFFFFF:  # ASSUMPTION: the spec gives no code; malformed-frame
                raise ProtocolError(MALFORMED, "%s above 2^32-1" % k)
            m["limits"][k] = v
        m["heartbeatMilliseconds"] = r.varint()
        m["dictionary"] = r.bytes_("dictionary")
    elif name == "subscribe":
        m["listName"] = r.string("listName")
        m["resumeFrom"] = r.optional(r.list_version)
        m["digest"] = r.optional(r.u64)
    elif name == "unsubscribe":
        m["listName"] = r.string("listName")
    elif name == "mutate":
        m["listName"] = r.string("listName")
        m["clientID"] = r.string("id")
        m["seq"] = r.varint()
        m["base"] = r.list_version()
        n = r.index()
        if n > r.left():
            raise ProtocolError(MALFORMED, "operation count beyond the body")
        if n > limits["ops"]:
            raise ProtocolError(TOO_MANY_OPS, "%d operations" % n)
        m["operations"] = [r.operation() for _ in range(n)]
    elif name == "statsRequest":
        m["requestID"] = r.varint()
        m["listName"] = r.optional(lambda: r.string("listName"))
    elif name == "refreshToken":
        m["token"] = r.string("text")
    elif name == "backupRequest":
        m["requestID"] = r.varint()
        m["directory"] = r.string("text")
    elif name == "backupReply":
        m["requestID"] = r.varint()
        code = r.u16()
        m["failure"] = code or None   # code 0: the backup is complete and durable
        m["message"] = r.string("text")
        m["lists"], m["bytes"] = r.varint(), r.varint()
    elif name == "snapshot":
        m["listName"] = r.string("listName")
        m["position"] = r.list_version()
        m["digest"] = r.u64()
        reason = r.u8()
        if reason >= len(SNAPSHOT_REASONS):
            raise ProtocolError(MALFORMED, "snapshot reason %d" % reason)
        m["reason"] = SNAPSHOT_REASONS[reason]
        m["sections"] = r.sections()
    elif name == "diff":
        m["listName"] = r.string("listName")
        m["epoch"], m["fromVersion"], m["toVersion"] = r.varint(), r.varint(), r.varint()
        m["digest"] = r.u64()
        n = r.index()
        if n > r.left():
            raise ProtocolError(MALFORMED, "stage count beyond the body")
        if n > limits["stages"]:
            raise ProtocolError(TOO_MANY_ELEMENTS, "%d stages" % n)
        m["stages"] = [r.stage() for _ in range(n)]
        m["mutations"] = [r.mutation_id() for _ in range(r.count("entries", 2))]
    elif name == "ack":
        m["listName"] = r.string("listName")
        m["seq"] = r.varint()
        m["committed"] = r.list_version()
    elif name == "reject":
        m["listName"] = r.string("listName")
        m["seq"] = r.varint()
        m["code"] = r.u16()
        m["message"] = r.string("text")
    elif name == "notice":
        kind = r.u8()
        # The spec (Notice): a kind other than 1 or 2 is malformed-frame.
        if kind not in NOTICE_KINDS:
            raise ProtocolError(MALFORMED, "unknown notice kind %d" % kind)
        m["kind"] = NOTICE_KINDS[kind]
        m["message"] = r.string("text")
        m["delayMilliseconds"] = r.varint()
    elif name == "statsReply":
        m["requestID"] = r.varint()
        m["entries"] = [{"name": r.string("text"), "value": r.i64()}
                        for _ in range(r.count("entries", 9))]
    elif name == "error":
        m["code"] = r.u16()
        m["message"] = r.string("text")
        tag = r.u8()
        if tag == 3:
            delay = r.varint()
            if delay > 0xFFFFFFFF:
                raise ProtocolError(MALFORMED, "back-off delay above 2^32-1")
            m["reaction"] = {"backoffMilliseconds": delay}
        elif tag in REACTIONS:
            m["reaction"] = REACTIONS[tag]
        else:
            raise ProtocolError(MALFORMED, "reaction tag %d" % tag)
        m["listName"] = r.optional(lambda: r.string("listName"))
        m["closesConnection"] = r.bool()
    elif name in ("ping", "pong"):
        m["nonce"] = r.varint()
    if r.left():
        raise ProtocolError(MALFORMED, "%d bytes left after the %s body" % (r.left(), name))
    return m


def inflate(body, dictionary=b"", cap=CLIENT_LIMITS["inflated"]):
    """Inflate one zlib stream, checking FDICT/DICTID and capping the output."""
    if len(body) < 2 or (body[0] << 8 | body[1]) % 31 or body[0] & 0x0F != 8:
        raise ProtocolError(BAD_COMPRESSION, "not a zlib header")
    kw = {}
    if body[1] & 0x20:  # FDICT
        if not dictionary:
            raise ProtocolError(BAD_COMPRESSION, "FDICT set but no dictionary was agreed")
        if len(body) < 6 or struct.unpack(">I", body[2:6])[0] != zlib.adler32(dictionary):
            raise ProtocolError(BAD_COMPRESSION, "DICTID is not the agreed dictionary")
        kw["zdict"] = dictionary
    d = zlib.decompressobj(15, **kw)
    try:
        out = d.decompress(body, cap + 1)
        if len(out) > cap:
            raise ProtocolError(INFLATED_TOO_LARGE, "body inflates past %d bytes" % cap)
        if d.unconsumed_tail:  # can only happen if more output is pending
            more = d.decompress(d.unconsumed_tail, cap + 1 - len(out))
            if more or d.unconsumed_tail:
                raise ProtocolError(INFLATED_TOO_LARGE, "body inflates past %d bytes" % cap)
    except zlib.error as e:
        raise ProtocolError(BAD_COMPRESSION, str(e))
    if not d.eof:
        raise ProtocolError(BAD_COMPRESSION, "zlib stream ends before its end marker")
    if d.unused_data:
        raise ProtocolError(BAD_COMPRESSION, "bytes after the zlib stream")
    return out


def decode_frame(buf, dictionary=b"", limits=CLIENT_LIMITS, allow_compressed=True):
    """Decode the frame at the start of buf. Returns (message, frame_length) or
    (None, 0) when buf does not hold a whole frame yet. Raises ProtocolError."""
    if len(buf) < 4:
        return None, 0
    (length,) = struct.unpack_from(">I", buf, 0)
    if length < 2:
        raise ProtocolError(MALFORMED, "length %d < 2" % length)
    if length > limits["frame"]:
        raise ProtocolError(FRAME_TOO_LARGE, "frame length %d above %d" % (length, limits["frame"]))
    if len(buf) < 4 + length:
        return None, 0
    mtype, flags = buf[4], buf[5]
    body = bytes(buf[6:4 + length])
    if flags & 0xFE:
        raise ProtocolError(MALFORMED, "reserved flag bits 0x%02x" % flags)
    if mtype not in MESSAGE_TYPES:
        raise ProtocolError(UNKNOWN_TYPE, "type 0x%02x" % mtype)
    if flags & 1:
        if not allow_compressed or MESSAGE_TYPES[mtype] in NEVER_COMPRESSED:
            # ASSUMPTION: a compressed Hello/Welcome/Error is 1007 (spec: "MUST NOT").
            raise ProtocolError(1007, "compressed %s" % MESSAGE_TYPES[mtype])
        body = inflate(body, dictionary, limits["inflated"])
    return decode_body(mtype, body, limits), 4 + length


class FrameReader:
    """Incremental frame decoder over a socket (or any recv(n) object)."""

    def __init__(self, sock, limits=CLIENT_LIMITS):
        self.sock, self.buf, self.limits = sock, bytearray(), limits
        self.dictionary, self.ready = b"", False

    def read(self):
        """Next message (blocking; honours the socket timeout). None on EOF."""
        while True:
            msg, n = decode_frame(self.buf, self.dictionary, self.limits,
                                  allow_compressed=self.ready)
            if msg is not None:
                del self.buf[:n]
                if msg["type"] == "welcome":
                    self.dictionary, self.ready = msg["dictionary"], True
                return msg
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

# --------------------------------------------------------------------------- changesets

def apply_stage(state, st):
    """Apply one stage in place, with batch-update semantics: deletes, reloads and move
    sources use positions before the stage; inserts, move destinations and
    supplementary updates use positions after it."""
    # 1. row updates (reloads), before positions
    for u in st.get("rowUpdates", []):
        s, r = u["path"]
        state[s]["rows"][r] = dict(u["row"])
    # 2. take out deleted rows and move sources (before positions), keep movers
    moved_rows = {}
    removals = {}
    for s, r in st.get("rowDeletes", []):
        removals.setdefault(s, set()).add(r)
    for m in st.get("rowMoves", []):
        s, r = m["from"]
        moved_rows[(s, r)] = state[s]["rows"][r]
        removals.setdefault(s, set()).add(r)
    for s, rs in removals.items():
        state[s]["rows"] = [row for i, row in enumerate(state[s]["rows"]) if i not in rs]
    # 3. take out deleted and moved sections (before positions)
    moved_secs = {m["from"]: state[m["from"]] for m in st.get("sectionMoves", [])}
    gone = set(st.get("sectionDeletes", [])) | set(moved_secs)
    state[:] = [sec for i, sec in enumerate(state) if i not in gone]
    # 4. put in inserted and moved sections, ascending after positions
    ins = [(e["index"], _copy_section(e["section"])) for e in st.get("sectionInserts", [])]
    ins += [(m["to"], moved_secs[m["from"]]) for m in st.get("sectionMoves", [])]
    for at, sec in sorted(ins, key=lambda x: x[0]):
        state.insert(at, sec)
    # 5. put in inserted and moved rows, ascending after paths
    rins = [(tuple(e["path"]), dict(e["row"])) for e in st.get("rowInserts", [])]
    rins += [(tuple(m["to"]), moved_rows[tuple(m["from"])]) for m in st.get("rowMoves", [])]
    for (s, r), row in sorted(rins, key=lambda x: x[0]):
        state[s]["rows"].insert(r, row)
    # 6. header/footer updates, after positions
    for u in st.get("supplementaryUpdates", []):
        state[u["section"]][u["element"]] = u["value"]
    return state


def _copy_section(s):
    return {"id": s["id"], "header": s.get("header"), "footer": s.get("footer"),
            "rows": [dict(r) for r in s.get("rows", [])]}


def apply_changeset(state, changeset):
    """Apply a changeset (list of stages, or a Diff message) to state (a list of
    Section dicts) in place, stage by stage; returns state."""
    stages = changeset["stages"] if isinstance(changeset, dict) else changeset
    for st in stages:
        apply_stage(state, st)
    return state


def describe_stage(st, before=None):
    """One line telling what a table view is asked to do for this stage, in the order
    UIKit applies it: deletes, inserts, moves, reloads, header/footer updates.
    'before' (the replica before the stage) lets it name deleted/moved rows."""
    def rid(p):
        try:
            return " " + before[p[0]]["rows"][p[1]]["id"]
        except (TypeError, IndexError, KeyError):
            return ""

    def sid(i):
        try:
            return " " + before[i]["id"]
        except (TypeError, IndexError, KeyError):
            return ""
    parts = []
    parts += ["delete section %d%s" % (i, sid(i)) for i in st.get("sectionDeletes", [])]
    parts += ["delete [%d,%d]%s" % (p[0], p[1], rid(p)) for p in st.get("rowDeletes", [])]
    parts += ["insert section %d %s (%d rows)" % (e["index"], e["section"]["id"], len(e["section"]["rows"]))
              for e in st.get("sectionInserts", [])]
    parts += ["insert [%d,%d] %s" % (e["path"][0], e["path"][1], e["row"]["id"])
              for e in st.get("rowInserts", [])]
    parts += ["move section %d->%d%s" % (m["from"], m["to"], sid(m["from"]))
              for m in st.get("sectionMoves", [])]
    parts += ["move [%d,%d]->[%d,%d]%s" % (tuple(m["from"]) + tuple(m["to"]) + (rid(m["from"]),))
              for m in st.get("rowMoves", [])]
    parts += ["reload [%d,%d] %s" % (e["path"][0], e["path"][1], e["row"]["id"])
              for e in st.get("rowUpdates", [])]
    for u in st.get("supplementaryUpdates", []):
        v = "removed" if u["value"] is None else repr(bytes(u["value"][:40]))
        parts.append("%s of section %d = %s" % (u["element"], u["section"], v))
    return "; ".join(parts) or "(empty stage)"
