// FlowSync's JavaScript client: a dependency-free ES module for browsers (and Node 22+,
// or Node 20 with --experimental-websocket). It speaks flowsync-gateway's WebSocket
// (`/v1/ws`, JSON messages, permessage-deflate negotiated by the browser) and mirrors the
// Swift SDK's names where JavaScript allows (docs/JS-CLIENT.md).
//
// Why one file over ~450 lines: it is served by the gateway as one module and imported
// with one <script type="module">; splitting it would mean a bundler or several requests.
//
// Ordering and lifetime rules (each with its reason):
// 1. One socket per client; every list of the client is a subscription on it. Messages are
//    handled in arrival order, so a list's diffs are applied in version order.
// 2. A diff applies only if it starts at the replica's position (`fromVersion`); an older
//    one is a duplicate and is dropped; a gap makes the list resubscribe from its position
//    (the gateway's catch-up fills it). A snapshot replaces the replica (a resync).
// 3. A write keeps one idempotency id for its whole life. Unanswered writes are sent again,
//    with the same id and body, after every reconnect, and after a 5xx reject (daemon
//    unavailable or timed out): the daemon commits an id once, and a retry answers the
//    first commit's version.
// 4. Reconnects back off exponentially with full jitter (initialMs doubling to maxMs),
//    reset once a connection has delivered a snapshot or diff. Close code 4001 (the daemon
//    refused the token) stops reconnecting: a new token is needed.
// 5. Edits are not optimistic (unlike the Swift SDK): the replica shows only what the
//    server committed, so it never rolls back. Index-based edits carry the replica's
//    position as their base, so the server transforms them over what it committed since.
// 6. A write's ticket resolves when the replica has reached the version that contains it
//    (the ack and the diff travel separately and may arrive in either order), so code after
//    `await ticket.committed()` sees its edit, and its next edit's base includes it.

/** The position of a list: `{epoch: string, version: number}` (epochs are u64 strings). */
function positionText(p) {
  return `${p.epoch}:${p.version}`;
}

/** An error a write or a list ended with, carrying the gateway's problem document. */
export class FlowSyncError extends Error {
  constructor(problem) {
    super(problem && problem.detail ? `${problem.title}: ${problem.detail}` : "FlowSync error");
    this.name = "FlowSyncError";
    /** The RFC 9457 problem document (`type`, `title`, `status`, `detail`, `code`?). */
    this.problem = problem;
  }
}

/**
 * Applies one stage of a changeset to `sections` (an array of `{id, header?, footer?,
 * rows}`), in UIKit's batch order as the Swift core does (Changeset+Apply.swift): row
 * updates at old paths; removals (rows, then sections, highest index first); insertions
 * (sections, then rows, lowest index first); then headers and footers. Returns a new
 * array; the input is not modified. Throws on a stage that does not fit.
 */
export function applyStage(sections, stage) {
  const out = sections.map((s) => ({ ...s, rows: s.rows.slice() }));
  const at = (path) => {
    const section = out[path[0]];
    if (!section || path[1] < 0 || path[1] >= section.rows.length) {
      throw new Error(`stage does not fit: no row at [${path}]`);
    }
    return section;
  };
  for (const u of stage.rowUpdates || []) {
    const section = at(u.path);
    if (section.rows[u.path[1]].id !== u.row.id) throw new Error(`stage does not fit: reload of [${u.path}]`);
    section.rows[u.path[1]] = u.row;
  }
  const byPathDescending = (a, b) => b[0] - a[0] || b[1] - a[1];
  const rowRemovals = [...(stage.rowDeletes || []), ...(stage.rowMoves || []).map((m) => m.from)];
  rowRemovals.sort(byPathDescending);
  const takenRows = new Map();
  for (const path of rowRemovals) {
    const section = at(path);
    takenRows.set(String(path), section.rows.splice(path[1], 1)[0]);
  }
  const sectionRemovals = [...(stage.sectionDeletes || []), ...(stage.sectionMoves || []).map((m) => m.from)];
  sectionRemovals.sort((a, b) => b - a);
  const takenSections = new Map();
  for (const index of sectionRemovals) {
    if (index < 0 || index >= out.length) throw new Error(`stage does not fit: no section ${index}`);
    takenSections.set(index, out.splice(index, 1)[0]);
  }
  const sectionArrivals = [
    ...(stage.sectionInserts || []).map((i) => [i.index, { ...i.section, rows: (i.section.rows || []).slice() }]),
    ...(stage.sectionMoves || []).map((m) => [m.to, takenSections.get(m.from)]),
  ].sort((a, b) => a[0] - b[0]);
  for (const [index, section] of sectionArrivals) {
    if (index > out.length) throw new Error(`stage does not fit: section insert at ${index}`);
    out.splice(index, 0, section);
  }
  const rowArrivals = [
    ...(stage.rowInserts || []).map((i) => [i.path, i.row]),
    ...(stage.rowMoves || []).map((m) => [m.to, takenRows.get(String(m.from))]),
  ].sort((a, b) => a[0][0] - b[0][0] || a[0][1] - b[0][1]);
  for (const [path, row] of rowArrivals) {
    const section = out[path[0]];
    if (!section || path[1] > section.rows.length) throw new Error(`stage does not fit: row insert at [${path}]`);
    section.rows.splice(path[1], 0, row);
  }
  for (const u of stage.supplementaryUpdates || []) {
    const section = out[u.section];
    if (!section) throw new Error(`stage does not fit: no section ${u.section}`);
    const key = u.element === "header" ? "header" : "footer";
    if ("value" in u) section[key] = u.value;
    else delete section[key];
  }
  return out;
}

/** One write's verdict: `committed()` resolves to its position or rejects with a FlowSyncError. */
export class WriteTicket {
  constructor(id) {
    /** The write's idempotency id (stable across retries). */
    this.id = id;
    this._promise = new Promise((resolve, reject) => {
      this._resolve = resolve;
      this._reject = reject;
    });
    this._promise.catch(() => {}); // an unobserved reject is not an unhandled rejection
  }
  /** Resolves to `{epoch, version}` of the batch that contains this write. */
  committed() {
    return this._promise;
  }
}

/** One section of a list, by ID: row edits (Swift: `LiveSection`). */
export class LiveSection {
  constructor(list, id) {
    this.list = list;
    this.id = id;
  }
  get _section() {
    return this.list.snapshot.sections.find((s) => s.id === this.id);
  }
  /** The rows now (`[]` if the section is gone). */
  get models() {
    const section = this._section;
    return section ? section.rows : [];
  }
  /** Inserts one row (`{id, kind?, payload?}`) at `at` (default: the end). */
  add(model, at) {
    return this.addModels([model], at);
  }
  /** Inserts rows at `at` (default: the end). */
  addModels(models, at = this.models.length) {
    return this.list.submit([{ op: "insertRows", section: this.id, at, rows: models }]);
  }
  /** Removes the row at index `at` (sent by its ID, so it means the row shown there). */
  remove(at) {
    return this.list.removeModel(this._rowID(at));
  }
  /** Removes every row. */
  removeAll() {
    return this.list.submit([{ op: "removeAllRows", section: this.id }]);
  }
  /** Moves the row at `from` to index `to` in this section. */
  move(from, to) {
    return this.moveToSection(from, this.id, to);
  }
  /** Moves the row at `from` to `at` in the section `sectionID`. */
  moveToSection(from, sectionID, at) {
    return this.list.submit([{ op: "moveRow", row: this._rowID(from), toSection: sectionID, at }]);
  }
  /** Swaps the rows at `a` and `b`. */
  swap(a, b) {
    return this.list.submit([{ op: "swapRows", a: this._rowID(a), b: this._rowID(b) }]);
  }
  /** Replaces every row. */
  set(models) {
    return this.list.submit([{ op: "setRows", section: this.id, rows: models }]);
  }
  /** Replaces the row with `model.id`. */
  update(model) {
    return this.list.update(model);
  }
  /** Sets (or with `undefined`, removes) the header, any JSON value. */
  setHeader(value) {
    return this.list.submit([{ op: "setHeader", section: this.id, ...(value === undefined ? {} : { value }) }]);
  }
  /** Sets (or removes) the footer. */
  setFooter(value) {
    return this.list.submit([{ op: "setFooter", section: this.id, ...(value === undefined ? {} : { value }) }]);
  }
  _rowID(index) {
    const row = this.models[index];
    if (!row) throw new RangeError(`no row at ${index} in section ${this.id}`);
    return row.id;
  }
}

/** The live replica of one list: read, edit, observe (Swift: `ListDirector`). */
export class ListDirector {
  constructor(client, name) {
    this.client = client;
    /** The list's name. */
    this.name = name;
    /** The list now: `{position: {epoch, version} | null, sections}`. */
    this.snapshot = { position: null, sections: [] };
    this._observers = new Set();
    this._loaded = [];
    this._waiting = []; // [{position, resolve}] for rule 6
    this._closed = false;
  }

  /** Calls `resolve` once the replica is at `position` or later (or at another epoch). */
  _whenAt(position, resolve) {
    this._waiting.push({ position, resolve });
    this._settleWaiting();
  }
  _settleWaiting() {
    const now = this.snapshot.position;
    if (!now) return;
    this._waiting = this._waiting.filter((w) => {
      if (w.position.epoch !== now.epoch || w.position.version <= now.version) {
        w.resolve();
        return false;
      }
      return true;
    });
  }
  /** Whether the first snapshot has arrived. */
  get isLoaded() {
    return this.snapshot.position !== null;
  }
  /** Resolves once the first snapshot has arrived. */
  waitUntilLoaded() {
    if (this.isLoaded) return Promise.resolve(this);
    return new Promise((resolve) => this._loaded.push(resolve));
  }
  get numberOfSections() {
    return this.snapshot.sections.length;
  }
  numberOfModels(sectionIndex) {
    const section = this.snapshot.sections[sectionIndex];
    return section ? section.rows.length : 0;
  }
  get sections() {
    return this.snapshot.sections;
  }
  /** The section at `index` as a LiveSection, or undefined out of range. */
  sectionAt(index) {
    const section = this.snapshot.sections[index];
    return section ? new LiveSection(this, section.id) : undefined;
  }
  /** The section with `id` (edits on it fail on the server if it does not exist). */
  section(id) {
    return new LiveSection(this, id);
  }
  get firstSection() {
    return this.sectionAt(0);
  }
  get lastSection() {
    return this.sectionAt(this.snapshot.sections.length - 1);
  }
  /**
   * Calls `observer(change)` for every visible change, in order. A change is `{cause,
   * previous, snapshot, changeset, snapshotsAfterEachStage}`; `cause` is "initial",
   * "remote" or "resync". With `includingCurrent` (the default) a loaded list is delivered
   * at once as an "initial" change from empty. Returns a function that stops observing.
   */
  observe(observer, { includingCurrent = true } = {}) {
    this._observers.add(observer);
    if (includingCurrent && this.isLoaded) {
      const empty = { position: null, sections: [] };
      observer({
        cause: "initial",
        previous: empty,
        snapshot: this.snapshot,
        changeset: null,
        snapshotsAfterEachStage: [this.snapshot],
      });
    }
    return () => this._observers.delete(observer);
  }

  // Edits (each one write; the ticket resolves when it is committed).

  /** Inserts a section (`{id, header?, footer?, models?}`) at `at` (default: the end). */
  add(section, at = this.numberOfSections) {
    return this.addSections([section], at);
  }
  addSections(sections, at = this.numberOfSections) {
    return this.submit([{ op: "insertSections", at, sections: sections.map(toWireSection) }]);
  }
  /** Removes the section at `index` (by its ID). */
  remove(sectionAt) {
    return this.removeSection(this._sectionID(sectionAt));
  }
  removeSection(id) {
    return this.submit([{ op: "removeSections", sections: [id] }]);
  }
  /** Moves the section at `from` to `to`. */
  move(sectionAt, to) {
    return this.submit([{ op: "moveSection", section: this._sectionID(sectionAt), to }]);
  }
  swap(sectionAt, withIndex) {
    return this.submit([{ op: "swapSections", a: this._sectionID(sectionAt), b: this._sectionID(withIndex) }]);
  }
  set(sections) {
    return this.submit([{ op: "setSections", sections: sections.map(toWireSection) }]);
  }
  removeAll() {
    return this.submit([{ op: "removeAllSections" }]);
  }
  /** Appends rows to the last section (Swift: `add(models:)`), creating one ("main") if none. */
  addModels(models) {
    const last = this.lastSection;
    if (!last) return this.add({ id: "main", models });
    return last.addModels(models);
  }
  removeModel(id) {
    return this.submit([{ op: "removeRows", rows: [id] }]);
  }
  /** Replaces the row with `model.id`. */
  update(model) {
    return this.submit([{ op: "replaceRow", row: model.id, with: model }]);
  }
  /** Sends raw protocol operations (docs/GATEWAY.md, JSON model) as one atomic write. */
  submit(operations) {
    return this.client._write(this, operations);
  }
  /** Stops following the list; its observers get nothing more. */
  unsubscribe() {
    this._closed = true;
    this._observers.clear();
    this.client._forget(this);
  }

  _sectionID(index) {
    const section = this.snapshot.sections[index];
    if (!section) throw new RangeError(`no section at ${index}`);
    return section.id;
  }
  _emit(change) {
    for (const observer of [...this._observers]) {
      try {
        observer(change);
      } catch (error) {
        console.error("flowsync observer threw", error);
      }
    }
  }
  _receivedSnapshot(message) {
    const previous = this.snapshot;
    const wasLoaded = this.isLoaded;
    this.snapshot = { position: message.position, sections: message.sections };
    const change = {
      cause: wasLoaded ? "resync" : "initial",
      reason: message.reason,
      previous,
      snapshot: this.snapshot,
      changeset: null,
      snapshotsAfterEachStage: [this.snapshot],
    };
    for (const resolve of this._loaded.splice(0)) resolve(this);
    this._emit(change);
    this._settleWaiting();
  }
  /** Rule 2. Returns false when the list must resubscribe (a gap, or a stage that does not fit). */
  _receivedDiff(message) {
    const position = this.snapshot.position;
    if (!position) return false;
    if (message.epoch !== position.epoch) return false;
    if (message.toVersion <= position.version) return true; // a duplicate, or already current
    if (message.fromVersion !== position.version) return false; // a gap
    let sections = this.snapshot.sections;
    const after = [];
    try {
      for (const stage of message.changeset.stages) {
        sections = applyStage(sections, stage);
        after.push({ position: null, sections });
      }
    } catch (error) {
      return false;
    }
    const previous = this.snapshot;
    this.snapshot = { position: { epoch: message.epoch, version: message.toVersion }, sections };
    for (const s of after) s.position = this.snapshot.position;
    this._emit({
      cause: "remote",
      previous,
      snapshot: this.snapshot,
      changeset: message.changeset,
      snapshotsAfterEachStage: after.length ? after : [this.snapshot],
    });
    this._settleWaiting();
    return true;
  }
}

function toWireSection(section) {
  const wire = { id: section.id, rows: section.models || section.rows || [] };
  if (section.header !== undefined) wire.header = section.header;
  if (section.footer !== undefined) wire.footer = section.footer;
  return wire;
}

function randomID() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/**
 * One connection to flowsync-gateway (reconnecting) and its lists (Swift: `FlowSyncClient`).
 *
 * Options: `url` (`ws://host:port/v1/ws`), `token` (sent as the first `auth` message, never
 * in the URL), `backoff: {initialMs = 100, maxMs = 5000}`, `WebSocket` (an implementation,
 * default `globalThis.WebSocket`), `clientID` (prefix of idempotency ids; random by default).
 */
export class FlowSyncClient {
  constructor({ url, token, backoff = {}, WebSocket: Impl = globalThis.WebSocket, clientID = randomID() } = {}) {
    if (!Impl) throw new Error("no WebSocket implementation");
    this.url = url;
    this.token = token;
    this.clientID = clientID;
    this._Impl = Impl;
    this._initialMs = backoff.initialMs ?? 100;
    this._maxMs = backoff.maxMs ?? 5000;
    this._delayMs = this._initialMs;
    this._lists = new Map();
    this._pending = new Map(); // id -> {list, operations, base, ticket}; insertion order = send order
    this._seq = 0;
    this._statusObservers = new Set();
    /** "connecting" | "connected" | "disconnected" | "closed". */
    this.status = "connecting";
    this._closed = false;
    this._connect();
  }

  /** The live replica of `name` (one per name; subscribing on first use). */
  director(name) {
    let list = this._lists.get(name);
    if (!list) {
      list = new ListDirector(this, name);
      this._lists.set(name, list);
      this._subscribe(list);
    }
    return list;
  }

  /** Calls `observer(status, detail)` on every status change (and once now); returns a stop function. */
  observeStatus(observer) {
    this._statusObservers.add(observer);
    observer(this.status, {});
    return () => this._statusObservers.delete(observer);
  }

  /** Closes the socket for good; unanswered writes reject. */
  close() {
    this._closed = true;
    clearTimeout(this._timer);
    if (this._socket) this._socket.close(1000);
    for (const entry of this._pending.values()) {
      entry.ticket._reject(new FlowSyncError({ title: "Closed", detail: "the client was closed", status: 0 }));
    }
    this._pending.clear();
    this._setStatus("closed", {});
  }

  /** Drops the connection as a network failure would (for tests and demos): it reconnects. */
  disconnect() {
    if (this._socket) this._socket.close(4000, "disconnect()");
  }

  _setStatus(status, detail) {
    this.status = status;
    for (const observer of [...this._statusObservers]) observer(status, detail);
  }

  _connect() {
    if (this._closed) return;
    this._setStatus("connecting", {});
    const socket = new this._Impl(this.url);
    this._socket = socket;
    socket.onopen = () => {
      if (this.token) this._send({ type: "auth", token: this.token });
      this._setStatus("connected", {});
      for (const list of this._lists.values()) this._subscribe(list);
      for (const [id, entry] of this._pending) this._sendWrite(id, entry); // rule 3
    };
    socket.onmessage = (event) => this._received(event.data);
    socket.onclose = (event) => {
      if (this._socket !== socket) return;
      this._socket = null;
      if (this._closed) return;
      if (event.code === 4001) {
        this._closed = true; // rule 4: a refused token does not get better by retrying
        this._setStatus("closed", { code: event.code, reason: event.reason });
        return;
      }
      const delay = Math.random() * this._delayMs; // rule 4: full jitter
      this._delayMs = Math.min(this._maxMs, this._delayMs * 2);
      this._setStatus("disconnected", { code: event.code, reason: event.reason, retryInMilliseconds: delay });
      this._timer = setTimeout(() => this._connect(), delay);
    };
    socket.onerror = () => {}; // onclose follows and decides
  }

  _send(message) {
    if (this._socket && this._socket.readyState === 1) this._socket.send(JSON.stringify(message));
  }

  _subscribe(list) {
    const message = { type: "subscribe", list: list.name };
    if (list.snapshot.position) message.after = positionText(list.snapshot.position);
    this._send(message);
  }

  _resubscribe(list) {
    this._send({ type: "unsubscribe", list: list.name });
    this._subscribe(list);
  }

  _forget(list) {
    this._lists.delete(list.name);
    this._send({ type: "unsubscribe", list: list.name });
  }

  _write(list, operations) {
    this._seq += 1;
    const id = `${this.clientID}-${this._seq}`;
    const ticket = new WriteTicket(id);
    // Index-based edits mean the replica now: its position is their base (rule 5).
    const entry = { list: list.name, operations, base: list.snapshot.position, ticket };
    this._pending.set(id, entry);
    this._sendWrite(id, entry);
    return ticket;
  }

  _sendWrite(id, entry) {
    const message = { type: "mutate", list: entry.list, id, operations: entry.operations };
    if (entry.base) message.base = entry.base;
    this._send(message);
  }

  _received(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    const list = this._lists.get(message.list);
    switch (message.type) {
      case "snapshot":
        this._delayMs = this._initialMs;
        if (list) list._receivedSnapshot(message);
        break;
      case "diff":
        this._delayMs = this._initialMs;
        if (list && !list._receivedDiff(message)) this._resubscribe(list);
        break;
      case "ack": {
        const entry = this._pending.get(message.id);
        if (!entry) break;
        this._pending.delete(message.id);
        // Rule 6: resolved once the replica shows the commit (an ack may overtake its diff).
        if (list) list._whenAt(message.committed, () => entry.ticket._resolve(message.committed));
        else entry.ticket._resolve(message.committed);
        break;
      }
      case "reject": {
        const entry = this._pending.get(message.id);
        if (!entry) break;
        const status = message.problem && message.problem.status;
        if (status >= 500 || status === 429) {
          // Rule 3: the daemon did not decide; the same id again after a pause.
          setTimeout(() => this._pending.has(message.id) && this._sendWrite(message.id, entry), this._initialMs);
          break;
        }
        this._pending.delete(message.id);
        entry.ticket._reject(new FlowSyncError(message.problem));
        break;
      }
      case "error":
        if (message.id && this._pending.has(message.id)) {
          // A write the gateway could not read: it will never be committed.
          const entry = this._pending.get(message.id);
          this._pending.delete(message.id);
          entry.ticket._reject(new FlowSyncError(message.problem));
        } else if (list && !message.id) {
          // The daemon refused or ended the subscription: tell the observers, keep the replica.
          list._emit({ cause: "error", error: new FlowSyncError(message.problem), snapshot: list.snapshot });
        }
        break;
    }
  }
}
