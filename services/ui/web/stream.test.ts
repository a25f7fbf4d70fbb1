// The event stream's watches (web/stream.ts) against a fake api (a fetch
// that answers like the gateway): one watch per kind from the same starting
// revision; a broken stream resumed from the kind's last revision; 403
// stops that kind only; 410 notes the gap and goes on from the current
// revision. The browser test (integration-tests/ui-events.test.ts) runs the
// same code against a real api; this one reaches the 410 path, which a
// fresh cluster's event log never takes.
// Beside the page's code (typed with the DOM by services/ui/tsconfig.json), Node's types added for this file.
/// <reference types="node" />
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { EventStream, type StreamKind } from "./stream.js";

async function waitFor(ok: () => boolean, message: string): Promise<void> {
  for (const end = Date.now() + 5_000; !ok(); await new Promise((r) => setTimeout(r, 10))) if (Date.now() > end) throw new Error(`timed out: ${message}`);
}

type Answer = { status: number; body: string[] | object; hold?: boolean; breakAfter?: boolean };

/** The requests seen, and the answers queued per path prefix (the first that matches is used). */
const requests: string[] = [];
let answer: (url: string) => Answer;
const realFetch = globalThis.fetch;
const g = globalThis as unknown as Record<string, unknown>;

before(() => {
  g["sessionStorage"] = { getItem: () => "t", setItem: () => undefined, removeItem: () => undefined };
  g["requestAnimationFrame"] = (fn: () => void) => setTimeout(fn, 0);
  globalThis.fetch = ((url: string, init?: RequestInit) => {
    requests.push(url);
    const a = answer(url);
    if (Array.isArray(a.body)) {
      const lines = a.body;
      // The lines, then (read) a break, the end, or nothing until aborted.
      let sent = false;
      const body = new ReadableStream<Uint8Array>({
        start(ctl) {
          init?.signal?.addEventListener("abort", () => ctl.error(new DOMException("aborted", "AbortError")));
        },
        pull(ctl) {
          if (!sent) {
            sent = true;
            for (const l of lines) ctl.enqueue(new TextEncoder().encode(`${l}\n`));
            return;
          }
          if (a.breakAfter) ctl.error(new TypeError("network error"));
          else if (!a.hold) ctl.close();
          else return new Promise<void>(() => undefined);
        },
      });
      return Promise.resolve(new Response(body, { status: a.status }));
    }
    return Promise.resolve(new Response(JSON.stringify(a.body), { status: a.status }));
  }) as typeof fetch;
});
after(() => {
  globalThis.fetch = realFetch;
  delete g["sessionStorage"];
  delete g["requestAnimationFrame"];
});

const CM: StreamKind = { resource: "configmaps", kind: "ConfigMap", groupVersion: "v1" };
const DEP: StreamKind = { resource: "deployments", kind: "Deployment", groupVersion: "apps/v1" };
const ev = (type: string, name: string, rv: number) =>
  JSON.stringify({ type, object: { kind: "ConfigMap", metadata: { name, namespace: "default", resourceVersion: String(rv) } } });

describe("EventStream", () => {
  it("starts every kind from one revision, resumes a broken watch from its last revision, stops a forbidden kind only", async () => {
    requests.length = 0;
    let cmWatches = 0;
    answer = (url) => {
      if (url.includes("limit=1")) return { status: 200, body: { metadata: { resourceVersion: "100" } } };
      if (url.startsWith("/apis/apps/v1/deployments?watch=1"))
        return { status: 403, body: { kind: "Status", code: 403, message: 'deployments.apps is forbidden: User "u" cannot watch' } };
      if (url.startsWith("/api/v1/configmaps?watch=1")) {
        cmWatches++;
        // The first stream delivers two changes and breaks (the api killed); the second goes on after 102.
        if (cmWatches === 1) return { status: 200, body: [ev("ADDED", "a", 101), ev("MODIFIED", "a", 102)], breakAfter: true };
        return { status: 200, body: [ev("DELETED", "a", 103)], hold: true };
      }
      return { status: 404, body: { message: "not found" } };
    };
    const s = new EventStream(undefined);
    const ac = new AbortController();
    for (const k of [CM, DEP]) void s.follow(k, [CM, DEP], ac.signal);
    await waitFor(() => s.log.lastRevision === 103, "the change after the break");
    ac.abort();
    assert.equal(s.start, 100);
    assert.deepEqual(
      s.log.rows.map((r) => `${r.revision} ${r.verb}`),
      ["101 ADDED", "102 MODIFIED", "103 DELETED"],
    );
    const watches = requests.filter((u) => u.includes("watch=1"));
    assert.ok(watches.includes("/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=100"), watches.join("\n"));
    assert.ok(watches.includes("/api/v1/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=102"), "resumed from its last revision");
    assert.ok(watches.includes("/apis/apps/v1/deployments?watch=1&allowWatchBookmarks=true&resourceVersion=100"), "the same starting revision");
    assert.equal(watches.filter((u) => u.startsWith("/apis/apps/v1/deployments")).length, 1, "a forbidden kind is not retried");
    assert.deepEqual(s.states.get("deployments"), { state: "forbidden", message: 'deployments.apps is forbidden: User "u" cannot watch' });
  });

  it("410: notes the gap and goes on from the current revision", async () => {
    requests.length = 0;
    answer = (url) => {
      if (url.includes("limit=1")) return { status: 200, body: { metadata: { resourceVersion: "500" } } };
      if (url.includes("resourceVersion=7"))
        return {
          status: 200,
          body: [JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired", message: "too old resource version: 7" } })],
        };
      if (url.includes("resourceVersion=500")) return { status: 200, body: [ev("ADDED", "b", 501)], hold: true };
      return { status: 404, body: { message: "not found" } };
    };
    const s = new EventStream(7);
    const ac = new AbortController();
    void s.follow(CM, [CM], ac.signal);
    await waitFor(() => s.log.lastRevision === 501, "the change after the gap");
    ac.abort();
    assert.deepEqual(s.gaps, [{ resource: "configmaps", from: 7, to: 500 }]);
    assert.deepEqual(
      s.log.rows.map((r) => r.revision),
      [501],
    );
  });

  it("a namespace-scoped stream watches namespaced kinds in its namespace, nodes whole", async () => {
    requests.length = 0;
    answer = (url) => (url.includes("watch=1") ? { status: 200, body: [], hold: true } : { status: 200, body: { metadata: { resourceVersion: "9" } } });
    const s = new EventStream(undefined, "dev");
    const ac = new AbortController();
    const NODES: StreamKind = { resource: "nodes", kind: "Node", groupVersion: "v1", clusterScoped: true };
    for (const k of [CM, NODES]) void s.follow(k, [CM, NODES], ac.signal);
    await waitFor(() => requests.filter((u) => u.includes("watch=1")).length === 2, "two watches");
    ac.abort();
    assert.deepEqual(requests.filter((u) => u.includes("watch=1")).sort(), [
      "/api/v1/namespaces/dev/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=9",
      "/api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=9",
    ]);
  });
});
