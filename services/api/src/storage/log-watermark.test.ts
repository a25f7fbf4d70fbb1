import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "@choreo/kit";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { eventParts } from "./event-revision.js";
import { neverReadyWatch, returnsOnAbortBeforeReady } from "../testing/not-ready.js";
import { LogWatermark, sameChange, type LogChange } from "./log-watermark.js";
import { CachedEvent } from "./watch-cache.js";

/** A ConfigMap as the store writes it (resourceVersion ""), with `data`. */
function configMap(name: string, data: Record<string, string>): ObjectMsg {
  return fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", uid: `uid-${name}`, resourceVersion: "" }, data });
}

/** The change record's event as the generic store writes it: the other fields, then the object's bytes as field 2. */
function written(o: ObjectMsg, type = "ADDED"): Uint8Array {
  return WatchEvent.encode({ type, object: undefined, status: undefined, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false })
    .uint32(18)
    .bytes(ObjectMsg.encode(o).finish())
    .finish();
}

/**
 * The change as the log holds it at `rev` (the relay writes the revision and the resourceVersion in; encoded here by
 * ts-proto, not by the relay's withRevision), as the watch cache holds it: decoded, with the object's bytes taken from
 * the message.
 */
function logged(record: Uint8Array, rev: number): LogChange {
  const ev = WatchEvent.decode(record);
  ev.revision = rev;
  const meta = ev.object?.kind?.value.metadata;
  if (meta) meta.resourceVersion = String(rev);
  const message = WatchEvent.encode(ev).finish();
  return new CachedEvent(rev, WatchEvent.decode(message) as ConstructorParameters<typeof CachedEvent>[1], eventParts(message)?.object);
}

/** A watch cache reduced to what the watermark reads: revisions appended by the test. */
function fakeCache() {
  let last = 0;
  let wake: (() => void) | undefined;
  const events = new Map<number, LogChange>();
  const filler = logged(written(configMap("filler", {})), 0);
  return {
    ready: Promise.resolve(),
    get lastRevision() {
      return last;
    },
    append(rev: number, event?: LogChange) {
      if (event) events.set(rev, event);
      last = rev;
      wake?.();
    },
    async *since(from: number, signal: AbortSignal): AsyncGenerator<LogChange, "expired" | "aborted"> {
      let cursor = from;
      while (!signal.aborted) {
        while (cursor < last) {
          cursor++;
          yield events.get(cursor) ?? { revision: cursor, type: filler.type, bytes: filler.bytes, event: filler.event };
        }
        await new Promise<void>((r) => {
          wake = r;
          signal.addEventListener("abort", () => r(), { once: true });
        });
      }
      return "aborted";
    },
  };
}

describe("LogWatermark", () => {
  it("stops when aborted while the watch cache is not ready (a cache that failed at start never is)", async () => {
    const w = new LogWatermark(neverReadyWatch() as never, 5_000);
    await returnsOnAbortBeforeReady((signal) => w.start(signal));
    assert.equal(w.running, false);
  });

  it("answers at once before it runs (the api's bootstrap writes), then once the log holds the revision", async () => {
    const cache = fakeCache();
    const w = new LogWatermark(cache as never, 5_000);
    await w.reached(99); // not running: no wait
    const ac = new AbortController();
    const running = w.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    assert.equal(w.running, true);
    let done = false;
    const p = w.reached(3).then(() => (done = true));
    cache.append(2);
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, "revision 2 is not 3");
    cache.append(3);
    await p;
    assert.equal(w.revision, 3);
    await w.reached(1); // already seen
    ac.abort();
    await running;
  });

  it("a revision the log does not confirm in time → 504 Timeout; stopping rejects the waiters with 503", async () => {
    const cache = fakeCache();
    const w = new LogWatermark(cache as never, 50);
    const ac = new AbortController();
    const running = w.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    await assert.rejects(
      w.reached(10),
      (e: unknown) => e instanceof ApiError && e.status.code === 504 && /did not confirm it within 50 ms/.test(e.status.message),
    );
    const slow = new LogWatermark(cache as never, 60_000);
    const ac2 = new AbortController();
    const running2 = slow.start(ac2.signal);
    await new Promise((r) => setImmediate(r));
    const pending = slow.reached(1000);
    ac2.abort();
    await assert.rejects(pending, (e: unknown) => e instanceof ApiError && e.status.code === 503);
    await running2;
    ac.abort();
    await running;
  });

  it("a write whose revision the log holds for another change (two Redis primaries in a split brain) → 503, not acknowledged", async () => {
    const cache = fakeCache();
    const w = new LogWatermark(cache as never, 5_000);
    const ac = new AbortController();
    const running = w.start(ac.signal);
    await new Promise((r) => setImmediate(r));
    const mine = written(configMap("mine", { a: "1" }));
    const theirs = written(configMap("theirs", { a: "1" }));
    const notRecorded = (e: unknown) => e instanceof ApiError && e.status.code === 503 && /another change at its revision 7/.test(e.status.message);
    // Waiting: the log's 7 is another object's create.
    const p = w.reached(7, mine);
    cache.append(7, logged(theirs, 7));
    await assert.rejects(p, notRecorded);
    // Already in the log when asked: checked against the cache's change at that revision.
    await assert.rejects(w.reached(7, mine), notRecorded);
    // The same object, other content (two primaries updating one object at one revision).
    cache.append(8, logged(written(configMap("mine", { a: "2" }), "MODIFIED"), 8));
    await assert.rejects(w.reached(8, written(configMap("mine", { a: "3" }), "MODIFIED")), (e: unknown) => e instanceof ApiError && e.status.code === 503);
    // The same object and content but another type (a delete logged where an update was written).
    cache.append(9, logged(written(configMap("mine", { a: "2" }), "DELETED"), 9));
    await assert.rejects(w.reached(9, written(configMap("mine", { a: "2" }), "MODIFIED")), (e: unknown) => e instanceof ApiError && e.status.code === 503);
    // This write at its revision: answered, waiting or not.
    const ok = written(configMap("mine", { a: "4" }), "MODIFIED");
    const q = w.reached(10, ok);
    cache.append(10, logged(ok, 10));
    await q;
    await w.reached(10, ok);
    ac.abort();
    await running;
  });

  it("sameChange: a written record and its logged form match for every change type; the resourceVersion the relay writes in is not a difference", () => {
    for (const type of ["ADDED", "MODIFIED", "DELETED"]) {
      const rec = written(configMap("x", { k: "v" }), type);
      assert.equal(sameChange(rec, logged(rec, 12345)), true, type);
      assert.equal(sameChange(rec, logged(written(configMap("x", { k: "w" }), type), 12345)), false, type);
      // Another revision's resourceVersion in the log's object (the same object logged at another revision) is a difference.
      const at = logged(rec, 12345);
      assert.equal(sameChange(rec, { revision: 12346, type: at.type, bytes: at.bytes, event: at.event }), false, type);
      // The same object under another type; a type that is a prefix of the written one.
      assert.equal(sameChange(rec, { ...at, type: type === "ADDED" ? "MODIFIED" : "ADDED", bytes: at.bytes, event: at.event, revision: 12345 }), false, type);
      assert.equal(sameChange(rec, { ...at, type: type.slice(0, 3), bytes: at.bytes, event: at.event, revision: 12345 }), false, type);
    }
    // The watch cache's bytes when it encoded the decoded object itself (no message bytes): the same answers.
    const rec = written(configMap("y", { k: "v" }));
    const own = (l: LogChange): LogChange => new CachedEvent(l.revision, l.event as ConstructorParameters<typeof CachedEvent>[1]);
    assert.equal(sameChange(rec, own(logged(rec, 77))), true);
    assert.equal(sameChange(rec, own(logged(written(configMap("y", { k: "w" })), 77))), false);
  });

  it("sameChange: a record the wire walk cannot read (no metadata; a resourceVersion already set) is compared decoded", () => {
    const bare = (v: string): ObjectMsg => fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", data: { k: v } });
    assert.equal(bare("v").kind?.value.metadata, undefined);
    const rec = written(bare("v"));
    assert.equal(sameChange(rec, logged(rec, 5)), true);
    assert.equal(sameChange(rec, logged(written(bare("w")), 5)), false);
    // A written resourceVersion "9" is not the store's "" (the log's is blanked before comparing): no match.
    const set = fromKubeJson({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "z", namespace: "default", uid: "u", resourceVersion: "9" },
      data: { k: "v" },
    });
    assert.equal(sameChange(written(set), logged(written(set), 9)), false);
  });
});
