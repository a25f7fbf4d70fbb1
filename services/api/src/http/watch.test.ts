import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";
import { pod, startTestGateway, until, type TestGateway } from "./testing/harness.js";

const PODS = "/api/v1/namespaces/default/pods";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

interface Stream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: { type: string; object: Record<string, unknown> }[];
  ended: boolean;
  destroy(): void;
}

/** Opens a watch; resolves once the response headers arrived (the gateway flushes them at once). */
function openWatch(base: string, path: string, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, base), { headers, agent: false }, (res) => {
      const s: Stream = { status: res.statusCode ?? 0, headers: res.headers, events: [], ended: false, destroy: () => req.destroy() };
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line.trim()) s.events.push(JSON.parse(line) as Stream["events"][number]);
        }
      });
      res.on("end", () => (s.ended = true));
      res.on("close", () => (s.ended = true));
      res.on("error", () => (s.ended = true));
      resolve(s);
    });
    req.on("error", reject);
    req.end();
  });
}

const nameOf = (o: Record<string, unknown>) => (o["metadata"] as { name: string }).name;

describe("watch", () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway();
    await t.call("POST", PODS, { body: pod("a") });
    await t.call("POST", PODS, { body: pod("b") });
  });
  after(() => t.close());

  it("streams synthetic ADDED from rv=0, then live changes", async () => {
    const w = await openWatch(t.base, `${PODS}?watch=true&resourceVersion=0`);
    assert.equal(w.status, 200);
    assert.equal(w.headers["content-type"], "application/json");
    assert.equal(w.headers["transfer-encoding"], "chunked");
    await until(() => w.events.length >= 2, 8000, "synthetic events");
    assert.deepEqual(
      w.events.map((e) => [e.type, nameOf(e.object)]),
      [
        ["ADDED", "a"],
        ["ADDED", "b"],
      ],
    );
    assert.equal(w.events[0]!.object["kind"], "Pod");
    await t.call("POST", PODS, { body: pod("c") });
    await t.call("PATCH", `${PODS}/c`, { body: '{"metadata":{"labels":{"x":"1"}}}', headers: { "Content-Type": "application/merge-patch+json" } });
    await t.call("DELETE", `${PODS}/c`);
    await until(() => w.events.length >= 5, 8000, "live events");
    assert.deepEqual(
      w.events.slice(2).map((e) => [e.type, nameOf(e.object)]),
      [
        ["ADDED", "c"],
        ["MODIFIED", "c"],
        ["DELETED", "c"],
      ],
    );
    w.destroy();
  });

  it("resumes from a resourceVersion without synthetic events", async () => {
    const list = await t.call("GET", PODS);
    const rv = (list.json["metadata"] as { resourceVersion: string }).resourceVersion;
    const w = await openWatch(t.base, `${PODS}?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true`);
    await t.call("POST", PODS, { body: pod("d") });
    await until(() => w.events.length >= 1, 8000, "event after rv");
    assert.deepEqual(
      w.events.map((e) => [e.type, nameOf(e.object)]),
      [["ADDED", "d"]],
    );
    const req = t.handlers.calls.filter((c) => c.method === "watch").at(-1)!.req as {
      allowBookmarks: boolean;
      resourceVersion: string;
      timeoutSeconds: number;
    };
    assert.equal(req.allowBookmarks, true);
    assert.equal(req.resourceVersion, rv);
    assert.ok(req.timeoutSeconds >= 1800 && req.timeoutSeconds <= 3600, "default timeout 30–60 min");
    w.destroy();
  });

  it("watches one object by name (fieldSelector) and as Table rows", async () => {
    const w = await openWatch(t.base, `${PODS}?fieldSelector=metadata.name%3Da&resourceVersion=0&watch=true`, { Accept: TABLE });
    await until(() => w.events.length >= 1, 8000, "table event");
    const ev = w.events[0]!;
    assert.equal(ev.type, "ADDED");
    assert.equal(ev.object["kind"], "Table");
    const rows = ev.object["rows"] as { cells: unknown[]; object: Record<string, unknown> }[];
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.object["kind"], "PartialObjectMetadata");
    assert.equal(nameOf(rows[0]!.object), "a");
    assert.equal(w.events.length, 1, "only the named pod");
    w.destroy();
    const byPath = await openWatch(t.base, `${PODS}/b?watch=true`);
    await until(() => byPath.events.length >= 1, 8000, "watch by path");
    assert.equal(nameOf(byPath.events[0]!.object), "b");
    byPath.destroy();
  });

  it("answers a too old resourceVersion with 200 and one ERROR 410 line", async () => {
    t.handlers.compact();
    const w = await openWatch(t.base, `${PODS}?watch=true&resourceVersion=1`);
    assert.equal(w.status, 200);
    await until(() => w.ended, 8000, "stream end");
    assert.equal(w.events.length, 1);
    assert.equal(w.events[0]!.type, "ERROR");
    const s = w.events[0]!.object;
    assert.equal(s["kind"], "Status");
    assert.equal(s["code"], 410);
    assert.equal(s["reason"], "Expired");
    assert.match(s["message"] as string, /too old resource version: 1/);
  });

  it("refuses a bad selector with a 400 Status", async () => {
    const r = await t.call("GET", `${PODS}?watch=true&fieldSelector=spec.nope%3D1`);
    assert.equal(r.status, 400);
    assert.equal(r.json["reason"], "BadRequest");
  });

  it("ends with timeoutSeconds", async () => {
    const w = await openWatch(t.base, `${PODS}?watch=true&resourceVersion=${t.handlers.revision}&timeoutSeconds=1`);
    await until(() => w.ended, 8000, "timeout end");
    assert.equal(w.events.length, 0);
  });

  it("stops the handler's watch when the client disconnects", async () => {
    await until(() => t.handlers.activeWatches === 0, 8000, "earlier watches to end");
    const w = await openWatch(t.base, `${PODS}?watch=true&resourceVersion=${t.handlers.revision}`);
    await until(() => t.handlers.activeWatches === 1, 8000, "watch to start");
    w.destroy();
    await until(() => t.handlers.activeWatches === 0, 8000, "watch cleanup");
  });

  it("close() ends open watches", async () => {
    const t2 = await startTestGateway();
    const w = await openWatch(t2.base, `${PODS}?watch=true`);
    await until(() => t2.handlers.activeWatches === 1, 8000, "watch to start");
    await t2.close();
    await until(() => w.ended && t2.handlers.activeWatches === 0, 8000, "watch to end on close");
  });
});
