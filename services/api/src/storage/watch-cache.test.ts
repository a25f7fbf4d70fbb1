import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { Object as ObjectMsg, WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { DECODED_WINDOW, WatchCache, type CachedEvent } from "./watch-cache.js";

// The ring itself, fed change by change as its consumer feeds it (append): what each entry keeps, the
// byte bound, and how watchers wait. The consumer over a real event log: storage.test.ts.

/** A change at `rev` of a ConfigMap (or a Secret) whose data is `size` bytes, as the log delivers it (decoded from its message). */
function change(
  rev: number,
  opts: {
    name?: string;
    namespace?: string;
    kind?: "ConfigMap" | "Secret";
    size?: number;
    type?: string;
    labels?: Record<string, string>;
    prevLabels?: Record<string, string>;
    prevFields?: Record<string, string>;
  } = {},
): WatchEvent {
  const object = fromKubeJson({
    apiVersion: "v1",
    kind: opts.kind ?? "ConfigMap",
    metadata: { name: opts.name ?? `cm-${rev}`, namespace: opts.namespace ?? "default", labels: opts.labels ?? { app: "a" }, resourceVersion: String(rev) },
    data: { k: opts.kind === "Secret" ? Buffer.from("x".repeat(opts.size ?? 10)).toString("base64") : "x".repeat(opts.size ?? 10) },
  });
  const ev = {
    type: opts.type ?? "ADDED",
    object,
    status: undefined,
    revision: rev,
    prevLabels: opts.prevLabels ?? { app: "before" },
    prevFields: opts.prevFields ?? {},
    hasPrev: opts.type === "MODIFIED",
  };
  return WatchEvent.decode(WatchEvent.encode(ev).finish());
}

/** A cache that has not consumed anything yet, at revision 0 (the consumer's reset after streamState). */
function emptyCache(opts: { capacity: number; maxBytes?: number }): WatchCache {
  const cache = new WatchCache({ nc: undefined as never, jsm: undefined as never, log: silentLogger(), ...opts });
  (cache as unknown as { reset(from: number): void }).reset(0);
  return cache;
}

/**
 * Every change the cache holds after `from`, and how the read ended ("waiting" when it would wait for
 * live changes: nothing here appends meanwhile, so a read not answered within a turn of the event loop waits).
 */
async function held(cache: WatchCache, from: number): Promise<{ changes: CachedEvent[]; end: string }> {
  const ac = new AbortController();
  const it = cache.since(from, ac.signal);
  const changes: CachedEvent[] = [];
  for (;;) {
    const next = it.next();
    const n = await Promise.race([next, new Promise<"waiting">((r) => setImmediate(() => r("waiting")))]);
    if (n === "waiting") {
      ac.abort();
      assert.deepEqual(await next, { done: true, value: "aborted" });
      return { changes, end: "waiting" };
    }
    if (n.done) return { changes, end: n.value };
    changes.push(n.value);
  }
}

describe("watch cache entries", () => {
  it("keep the object's bytes and what selection reads; the decoded event only for the newest DECODED_WINDOW changes, older ones decode the same event from the bytes", async () => {
    const cache = emptyCache({ capacity: DECODED_WINDOW * 3 });
    const n = DECODED_WINDOW + 50;
    const sent: WatchEvent[] = [];
    for (let rev = 1; rev <= n; rev++) {
      // Updates whose labels and fields before are the object's own, others', or none.
      const same = rev % 2 === 0;
      const fields = { "metadata.name": `cm-${rev}`, "metadata.namespace": "default" };
      const ev =
        rev % 3 === 0
          ? change(rev, { type: "MODIFIED", prevLabels: same ? { app: "a" } : { app: "b" }, prevFields: same ? fields : { ...fields, "metadata.name": "old" } })
          : change(rev, { type: "ADDED", prevLabels: {} });
      sent.push(ev);
      cache.append(ev);
    }
    const { changes } = await held(cache, 0);
    assert.equal(changes.length, n);
    for (const c of changes) {
      const ev = sent[c.revision - 1] as WatchEvent;
      assert.equal(c.isDecoded, c.revision > n - DECODED_WINDOW, `revision ${c.revision} decoded`);
      // Decoded again from the bytes: the same event the log delivered.
      assert.deepEqual(c.event, ev);
      assert.equal(c.event === ev, c.isDecoded, "a recent change hands out the event it was given, shared");
      assert.deepEqual(c.bytes, Buffer.from(ObjectMsg.encode(ev.object as ObjectMsg).finish()));
      assert.equal(c.resource, "configmaps");
      assert.equal(c.namespace, "default");
      assert.equal(c.name, `cm-${c.revision}`);
      assert.equal(c.type, ev.type);
      assert.deepEqual(c.labels, { app: "a" });
      assert.equal(c.fields["metadata.name"], `cm-${c.revision}`);
    }
    const old = changes[0] as CachedEvent;
    assert.equal(unwrap(old.event.object as ObjectMsg).metadata?.resourceVersion, "1");
    assert.notEqual(old.event, old.event, "an old change is decoded on each read, not kept decoded");
  });

  it("keep the object's bytes from the log's message when given it (a copy of their own, not a view of the message), else encode the object", async () => {
    const cache = emptyCache({ capacity: 8 });
    const ev = change(1, { type: "MODIFIED", prevLabels: { app: "b" } });
    const message = WatchEvent.encode(ev).finish();
    // The message as the connection hands it: a view inside a larger read buffer.
    const read = new Uint8Array(message.length + 64);
    read.set(message, 32);
    const data = read.subarray(32, 32 + message.length);
    cache.append(WatchEvent.decode(data), data);
    cache.append(change(2));
    const [fromMessage, encoded] = (await held(cache, 0)).changes as [CachedEvent, CachedEvent];
    assert.deepEqual(fromMessage.bytes, Buffer.from(ObjectMsg.encode(ev.object as ObjectMsg).finish()));
    assert.notEqual(fromMessage.bytes.buffer, read.buffer, "copied out of the read buffer");
    assert.equal(fromMessage.bytes.buffer.byteLength, fromMessage.bytes.byteLength, "a buffer of its own size");
    read.fill(0); // the connection reuses its buffer
    assert.deepEqual(ObjectMsg.decode(fromMessage.bytes), ev.object);
    assert.deepEqual(encoded.bytes, Buffer.from(ObjectMsg.encode(change(2).object as ObjectMsg).finish()));
  });

  it("a change without an object is skipped and frees the slot it lands on", async () => {
    const cache = emptyCache({ capacity: 4 });
    for (let rev = 1; rev <= 4; rev++) cache.append(change(rev));
    const before = cache.heldBytes;
    const slotOwner = (await held(cache, 0)).changes[0] as CachedEvent; // revision 1: slot 1, which revision 5 takes
    cache.append({ type: "ADDED", object: undefined, status: undefined, revision: 5, prevLabels: {}, prevFields: {}, hasPrev: false });
    assert.equal(cache.lastRevision, 5);
    assert.equal(cache.heldBytes, before - slotOwner.size);
    assert.deepEqual(
      (await held(cache, 1)).changes.map((c) => c.revision),
      [2, 3, 4],
    );
  });
});

describe("watch cache bounds", () => {
  it("holds at most `capacity` changes, its byte count the sum of the held entries", async () => {
    const cache = emptyCache({ capacity: 10 });
    for (let rev = 1; rev <= 25; rev++) cache.append(change(rev, { size: rev * 7 }));
    const { changes } = await held(cache, 15);
    assert.deepEqual(
      changes.map((c) => c.revision),
      [16, 17, 18, 19, 20, 21, 22, 23, 24, 25],
    );
    // Each entry's bytes are its own (the encoder's buffer is reused, the bytes are not): each object larger than the one before.
    for (const c of changes) {
      const cm = unwrap(ObjectMsg.decode(c.bytes)) as { data?: Record<string, string> };
      assert.equal(cm.data?.["k"], "x".repeat(c.revision * 7));
    }
    assert.equal(
      cache.heldBytes,
      changes.reduce((s, c) => s + c.size, 0),
    );
    assert.equal(cache.canServe(14), false);
    assert.equal(cache.canServe(15), true);
    assert.equal((await held(cache, 14)).end, "expired");
  });

  it("holds at most `maxBytes`: the oldest changes leave, a watch from before them ends expired (410), one after them is served", async () => {
    const one = emptyCache({ capacity: 100 });
    one.append(change(1, { size: 1_000 }));
    const perChange = one.heldBytes;
    const cache = emptyCache({ capacity: 100, maxBytes: perChange * 5 + perChange / 2 });
    for (let rev = 1; rev <= 20; rev++) cache.append(change(rev, { size: 1_000 }));
    assert.ok(cache.heldBytes <= perChange * 5 + perChange / 2, `held ${cache.heldBytes}`);
    assert.equal(cache.baseRevision, 15);
    assert.equal(cache.canServe(14), false);
    assert.equal((await held(cache, 14)).end, "expired");
    assert.deepEqual(
      (await held(cache, 15)).changes.map((c) => c.revision),
      [16, 17, 18, 19, 20],
    );
    // A watcher reading when the bound passes it ends expired too.
    const ac = new AbortController();
    const it = cache.since(15, ac.signal);
    assert.equal(((await it.next()).value as CachedEvent).revision, 16);
    for (let rev = 21; rev <= 30; rev++) cache.append(change(rev, { size: 1_000 }));
    assert.deepEqual(await it.next(), { done: true, value: "expired" });
    // One change bigger than the bound: nothing is held, a watch from the newest revision waits for the next.
    cache.append(change(31, { size: perChange * 10 }));
    assert.equal(cache.heldBytes, 0);
    assert.equal(cache.baseRevision, 31);
    assert.equal(cache.canServe(31), true);
  });
});

describe("watch cache watchers", () => {
  it("a waiting watcher gets the changes appended meanwhile in order, and its one abort listener goes when the watch ends", async () => {
    const cache = emptyCache({ capacity: 1_000 });
    const ac = new AbortController();
    const it = cache.since(0, ac.signal);
    const got: number[] = [];
    for (let round = 0; round < 50; round++) {
      const next = it.next(); // waits: nothing after the cursor
      for (let i = 1; i <= 3; i++) cache.append(change(round * 3 + i));
      const first = await next;
      got.push((first.value as CachedEvent).revision);
      got.push(((await it.next()).value as CachedEvent).revision, ((await it.next()).value as CachedEvent).revision);
      assert.ok(getEventListeners(ac.signal, "abort").length <= 1, "one listener for the whole watch, not one per wait");
    }
    assert.deepEqual(
      got,
      Array.from({ length: 150 }, (_, i) => i + 1),
    );
    const waiting = it.next();
    ac.abort();
    assert.deepEqual(await waiting, { done: true, value: "aborted" });
    assert.equal(getEventListeners(ac.signal, "abort").length, 0);
  });

  it("a watcher of one resource (and namespace) is handed its changes only, live ones too", async () => {
    const cache = emptyCache({ capacity: 100 });
    const mixed = (rev: number): WatchEvent => change(rev, { kind: rev % 2 ? "Secret" : "ConfigMap", namespace: rev % 3 ? "a" : "b", name: `o-${rev}` });
    for (let rev = 1; rev <= 30; rev++) cache.append(mixed(rev));
    const read = async (only: { resource: string; namespace?: string }, n: number): Promise<number[]> => {
      const ac = new AbortController();
      const it = cache.since(0, ac.signal, only);
      const got: number[] = [];
      while (got.length < n) got.push(((await it.next()).value as CachedEvent).revision);
      ac.abort();
      return got;
    };
    const expected = (pred: (rev: number) => boolean, upTo: number): number[] => Array.from({ length: upTo }, (_, i) => i + 1).filter(pred);
    assert.deepEqual(
      await read({ resource: "configmaps" }, 15),
      expected((r) => r % 2 === 0, 30),
    );
    assert.deepEqual(
      await read({ resource: "secrets", namespace: "b" }, 5),
      expected((r) => r % 2 === 1 && r % 3 === 0, 30),
    );
    assert.deepEqual(
      await read({ resource: "configmaps", namespace: "" }, 15),
      expected((r) => r % 2 === 0, 30),
      "namespace '': every namespace",
    );
    // Live: changes of other resources pass by a waiting watcher; its next change reaches it.
    const ac = new AbortController();
    const it = cache.since(30, ac.signal, { resource: "configmaps", namespace: "b" });
    const next = it.next();
    for (let rev = 31; rev <= 36; rev++) cache.append(mixed(rev));
    assert.equal(((await next).value as CachedEvent).revision, 36);
    ac.abort();
  });

  it("a watcher aborted before it reads ends at once", async () => {
    const cache = emptyCache({ capacity: 10 });
    cache.append(change(1));
    const ac = new AbortController();
    ac.abort();
    assert.deepEqual(await cache.since(0, ac.signal).next(), { done: true, value: "aborted" });
  });
});
