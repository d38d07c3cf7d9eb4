// The JS client against a real gateway and daemon (started by the Swift test
// JSClientTests, which passes FLOWSYNC_WS and FLOWSYNC_HTTP). Node's own test runner;
// Node 20 needs --experimental-websocket for a global WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { FlowSyncClient, applyStage } from "../flowsync.js";

const ws = process.env.FLOWSYNC_WS;
// Node's WebSocket does not hold the event loop open while a socket is closing, so a test
// awaiting a reconnect would end early ("Promise resolution is still pending"): a timer
// holds it for the run (the runner's own timeout still bounds each test).
const keepAlive = setInterval(() => {}, 1000);
process.on("beforeExit", () => clearInterval(keepAlive));
const http = process.env.FLOWSYNC_HTTP;
// Lists of this run only, so the file also runs against a long-lived gateway.
const run = Date.now().toString(36);

/** Resolves when `condition()` holds (polled every 10 ms), rejects after `ms`. */
async function until(condition, ms = 10000, what = "condition") {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * One HTTP request on a connection of its own (`agent: false`). Not fetch(): Node's
 * fetch keeps the connection alive in the pool its WebSocket also draws from, and
 * hummingbird-websocket answers an upgrade on a connection that already served HTTP with a
 * 307 and a close (browsers never reuse an HTTP connection for a WebSocket).
 */
function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${http}${path}`, { method, agent: false, headers: { "Content-Type": "application/json" } }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function serverList(name) {
  const answer = await call("GET", `/v1/lists/${encodeURIComponent(name)}`);
  assert.equal(answer.status, 200, answer.text);
  return JSON.parse(answer.text);
}

function shape(sections) {
  return sections.map((s) => `${s.id}:[${s.rows.map((r) => r.id).join(",")}]`).join(" ");
}

async function post(name, operations) {
  const answer = await call("POST", `/v1/lists/${encodeURIComponent(name)}/mutations`, JSON.stringify({ operations }));
  assert.equal(answer.status, 200, answer.text);
}

test.after(() => clearInterval(keepAlive));

test("applyStage follows UIKit's batch order", () => {
  const before = [
    { id: "A", rows: [{ id: "a1" }, { id: "a2" }, { id: "a3" }] },
    { id: "B", rows: [{ id: "b1" }] },
    { id: "C", rows: [] },
  ];
  // Delete a1 (old path), move a3 to B at 0 (new path), delete section C, insert D at 0,
  // move section B (old 1) to 2 (new), update a2 in place.
  const stage = {
    rowUpdates: [{ path: [0, 1], row: { id: "a2", payload: 2 } }],
    rowDeletes: [[0, 0]],
    rowMoves: [{ from: [0, 2], to: [2, 0] }],
    sectionDeletes: [2],
    sectionInserts: [{ index: 0, section: { id: "D", rows: [] } }],
    sectionMoves: [{ from: 1, to: 2 }],
  };
  const after = applyStage(before, stage);
  assert.equal(shape(after), "D:[] A:[a2] B:[a3,b1]");
  assert.equal(after[1].rows[0].payload, 2);
  assert.equal(shape(before), "A:[a1,a2,a3] B:[b1] C:[]", "the input is not modified");
  assert.throws(() => applyStage(before, { rowDeletes: [[5, 0]] }));
});

test("a list mirrors the server, edits commit, and another client sees each change in order", async () => {
  const a = new FlowSyncClient({ url: ws, backoff: { initialMs: 50, maxMs: 500 } });
  const b = new FlowSyncClient({ url: ws, backoff: { initialMs: 50, maxMs: 500 } });
  try {
    const list = a.director(`js-mirror-${run}`);
    const other = b.director(`js-mirror-${run}`);
    await list.waitUntilLoaded();
    await other.waitUntilLoaded();
    const seen = [];
    other.observe((change) => seen.push(shape(change.snapshot.sections)), { includingCurrent: false });
    await list.add({ id: "todo", models: [{ id: "t1", kind: "task", payload: { title: "one" } }] }).committed();
    await list.section("todo").addModels([{ id: "t2", payload: { title: "two" } }, { id: "t3" }]).committed();
    await until(() => list.numberOfModels(0) === 3, 10000, "three rows in the replica");
    await list.section("todo").move(0, 2).committed();
    await until(() => shape(list.sections) === "todo:[t2,t3,t1]", 10000, "the move");
    await list.section("todo").remove(1).committed();
    await list.update({ id: "t1", payload: { title: "one, edited" } }).committed();
    await until(() => other.snapshot.position && other.snapshot.position.version === list.snapshot.position.version);
    const server = await serverList(`js-mirror-${run}`);
    assert.equal(shape(list.sections), shape(server.sections));
    assert.equal(shape(other.sections), shape(server.sections));
    assert.deepEqual(other.sections[0].rows.find((r) => r.id === "t1").payload, { title: "one, edited" });
    assert.equal(seen.at(-1), shape(server.sections));
    // A refused edit rejects its ticket with the daemon's problem.
    await assert.rejects(list.section("nope").add({ id: "x" }).committed(), (e) => e.problem.status === 422);
  } finally {
    a.close();
    b.close();
  }
});

test("a write sent while the connection drops is retried with its id and commits once", async () => {
  const client = new FlowSyncClient({ url: ws, backoff: { initialMs: 50, maxMs: 500 } });
  try {
    const list = client.director(`js-retry-${run}`);
    await list.waitUntilLoaded();
    await list.add({ id: "S" }).committed();
    const ticket = list.section("S").add({ id: "once" });
    client.disconnect(); // the write may or may not have reached the gateway
    const committed = await ticket.committed();
    assert.ok(committed.version >= 2);
    await until(() => client.status === "connected");
    await until(() => list.snapshot.position.version >= committed.version, 10000, "the replica catches up");
    const server = await serverList(`js-retry-${run}`);
    assert.equal(shape(server.sections), "S:[once]");
    assert.equal(shape(list.sections), "S:[once]");
  } finally {
    client.close();
  }
});

test("a client that loses its connection resumes with only what followed", async () => {
  const client = new FlowSyncClient({ url: ws, backoff: { initialMs: 50, maxMs: 500 } });
  try {
    const list = client.director(`js-resume-${run}`);
    await list.waitUntilLoaded();
    // A list larger than what it misses: the daemon sends a snapshot instead of a catch-up
    // diff when the snapshot is smaller (PROTOCOL.md, resumeTooOld).
    const filler = Array.from({ length: 40 }, (_, i) => ({ id: `f${i}`, payload: { text: "x".repeat(100) } }));
    await list.add({ id: "S", models: filler }).committed();
    await until(() => list.numberOfSections === 1);
    const causes = [];
    list.observe((change) => causes.push(change.reason ? `${change.cause}(${change.reason})` : change.cause), {
      includingCurrent: false,
    });
    const statuses = [];
    client.observeStatus((s) => statuses.push(s));
    client.disconnect();
    for (let i = 0; i < 3; i++) await post(`js-resume-${run}`, [{ op: "insertRows", section: "S", at: i, rows: [{ id: `r${i}` }] }]);
    await until(() => list.numberOfModels(0) === 43, 10000, "the missed rows");
    assert.ok(statuses.includes("disconnected") && statuses.at(-1) === "connected", statuses.join(","));
    assert.ok(causes.length >= 1 && causes.every((c) => c === "remote"), `resumed by diffs, not a snapshot: ${causes}`);
    assert.equal(shape(list.sections), shape((await serverList(`js-resume-${run}`)).sections));
  } finally {
    client.close();
  }
});
