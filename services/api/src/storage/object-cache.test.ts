// test-tier: servers
// The api's object cache over a real nats-server event log and Redis (the
// test stack: registry, relay, watch cache): reads with resourceVersion "0" /
// N / Exact and continued pages answered from it, at one revision while writes
// go on, selection, deletes, a rebuild, kill -9 of nats-server (the cache
// stands at what it reached, then catches up), 410 and 504 as Kubernetes
// answers, and real kubectl through the gateway.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap, type AnyObject } from "@choreo/kit";
import { WatchRequest, type Object as ApiObject, type ObjectList } from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { Registry as PromRegistry } from "prom-client";
import { waitFor } from "@choreo/kit/testing";
import { createGateway, type Gateway } from "../http/gateway.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "../http/testing/kubectl.js";
import { neverReadyWatch, returnsOnAbortBeforeReady } from "../testing/not-ready.js";
import { startStack, type Stack } from "../testing/stack.js";
import { ObjectCache } from "./object-cache.js";

const hasKubectl = await kubectlInstalled();

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}): ApiObject =>
  fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "default", labels }, data });
const names = (l: ObjectList): string[] => l.items.map((o) => unwrap(o).metadata?.name ?? "");
/** The resourceVersion of an object, wrapped (an ApiObject, kind a oneof) or not. */
const rvOf = (o: ApiObject | AnyObject): number => Number((typeof o.kind === "object" ? unwrap(o as ApiObject) : (o as AnyObject)).metadata?.resourceVersion);
const statusCode = (err: unknown): number => (err instanceof ApiError ? err.status.code : -1);

describe("ObjectCache start", () => {
  it("stops when aborted while the watch cache is not ready (a cache that failed at start never is): the api's stop does not wait on it", async () => {
    const oc = new ObjectCache({ storage: {} as never, watch: neverReadyWatch() as never, log: silentLogger() });
    await returnsOnAbortBeforeReady((signal) => oc.start(signal));
    assert.equal(oc.revision, -1, "not serving");
  });
});

describe("object cache: reads at a revision from memory", () => {
  let stack: Stack;
  let oc: ObjectCache;
  let ac: AbortController;
  let running: Promise<void>;
  let metrics: PromRegistry;

  const startCache = (): void => {
    ac = new AbortController();
    metrics = new PromRegistry();
    oc = new ObjectCache({ storage: stack.store, watch: stack.cache, log: silentLogger(), compactEveryMs: 3_600_000, registry: metrics });
    stack.registry.store.objectCache = oc;
    running = oc.start(ac.signal);
  };
  const stopCache = async (): Promise<void> => {
    ac.abort();
    await running;
  };
  /** Until the cache holds the store's current revision. */
  const caughtUp = async (): Promise<number> => {
    const rev = await stack.store.currentRevision();
    await waitFor(() => oc.revision >= rev, { timeoutMs: 30_000, message: `the cache at ${rev}` });
    return rev;
  };
  const create = (o: ApiObject) => stack.registry.create({ object: o, dryRun: false });
  const list = (o: { rv?: string; match?: string; limit?: number; cont?: string; labels?: string; fields?: string } = {}) =>
    stack.registry.list({
      resource: "configmaps",
      namespace: "default",
      labelSelector: o.labels ?? "",
      fieldSelector: o.fields ?? "",
      limit: o.limit ?? 0,
      continue: o.cont ?? "",
      resourceVersion: o.rv,
      resourceVersionMatch: o.match,
    });

  before(async () => {
    stack = await startStack();
    for (let i = 0; i < 5; i++) await create(cm(`before-${i}`, { tier: i % 2 ? "odd" : "even" }));
    startCache();
  });
  after(async () => {
    await stopCache();
    await stack.stop();
  });

  it("GET and LIST with resourceVersion 0: what was written, once the cache caught up (and what the store lists)", async () => {
    const created = await create(cm("after-0", { tier: "even" }, { k: "v" }));
    const rev = await caughtUp();
    const got = unwrap(await stack.registry.get({ resource: "configmaps", namespace: "default", name: "after-0", resourceVersion: "0" }));
    assert.deepEqual((got as { data?: unknown }).data, { k: "v" });
    assert.equal(rvOf(got), rvOf(created));
    // Over NATS (the kit client, as node agents read), too.
    const viaNats = unwrap(await stack.client.get("configmaps", "default", "after-0", { resourceVersion: "0" }));
    assert.equal(rvOf(viaNats), rvOf(created));
    const cached = await list({ rv: "0" });
    const stored = await list();
    assert.deepEqual(names(cached), names(stored));
    assert.deepEqual(cached.items, stored.items);
    assert.ok(Number(cached.metadata?.resourceVersion) >= rev);
    await assert.rejects(
      stack.registry.get({ resource: "configmaps", namespace: "default", name: "nope", resourceVersion: "0" }),
      (e) => statusCode(e) === 404,
    );
    // Its metrics: the revision it holds, its objects, the reads it answered.
    const text = await metrics.metrics();
    assert.match(text, new RegExp(`choreo_api_object_cache_revision ${oc.revision}\n`));
    assert.match(text, /choreo_api_object_cache_objects \d+/);
    assert.match(text, /choreo_api_object_cache_reads_total\{verb="get",source="cache"\} [3-9]/);
    assert.match(text, /choreo_api_object_cache_reads_total\{verb="list",source="cache"\} 1\n/);
  });

  it("a resourceVersion the cache has not reached: 504 ResourceVersionTooLarge after the wait (GET and LIST)", async () => {
    stack.registry.store.cacheWaitMs = 200;
    try {
      const far = String((await stack.store.currentRevision()) + 1_000);
      await assert.rejects(stack.registry.get({ resource: "configmaps", namespace: "default", name: "before-0", resourceVersion: far }), (e: unknown) => {
        assert.equal(statusCode(e), 504);
        assert.match((e as ApiError).status.message, /Too large resource version/);
        return true;
      });
      await assert.rejects(list({ rv: far }), (e) => statusCode(e) === 504);
      // One it has reached: served.
      const rev = await caughtUp();
      assert.equal((await list({ rv: String(rev), match: "NotOlderThan" })).items.length, (await list()).items.length);
    } finally {
      stack.registry.store.cacheWaitMs = 3_000;
    }
  });

  it("pages at the first page's revision while writes go on; Exact N is the state at N", async () => {
    for (let i = 0; i < 20; i++) await create(cm(`page-${String(i).padStart(2, "0")}`));
    await caughtUp();
    const first = await list({ rv: "0", limit: 7 });
    const at = Number(first.metadata?.resourceVersion);
    const expected = names(await list({ rv: String(at), match: "Exact" }));
    assert.equal(first.items.length, 7);
    // Writes after the first page: deletes, updates and creates among the pages still to come.
    await stack.registry.delete({ resource: "configmaps", namespace: "default", name: "page-15", options: undefined });
    const p10 = unwrap(await stack.registry.get({ resource: "configmaps", namespace: "default", name: "page-10" }));
    await stack.registry.update({
      object: fromKubeJson({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { ...p10.metadata, name: "page-10", namespace: "default" },
        data: { changed: "yes" },
      }),
      dryRun: false,
    });
    await create(cm("page-12a"));
    await caughtUp();
    const seen = [...first.items];
    let cont = first.metadata?.continue ?? "";
    while (cont) {
      const next = await list({ limit: 7, cont });
      assert.equal(next.metadata?.resourceVersion, String(at));
      seen.push(...next.items);
      cont = next.metadata?.continue ?? "";
    }
    assert.deepEqual(
      seen.map((o) => unwrap(o).metadata?.name),
      expected,
    );
    assert.ok(seen.every((o) => rvOf(o) <= at));
    assert.equal((seen.find((o) => unwrap(o).metadata?.name === "page-10") as ApiObject | undefined)?.kind?.value.metadata?.name, "page-10");
    const old10 = unwrap(seen.find((o) => unwrap(o).metadata?.name === "page-10") as ApiObject) as { data?: Record<string, string> };
    assert.equal(old10.data?.["changed"], undefined);
    // Now: page-15 gone, page-12a there, page-10 changed.
    const now = names(await list({ rv: "0" }));
    assert.ok(!now.includes("page-15") && now.includes("page-12a"));
    const new10 = unwrap(await stack.registry.get({ resource: "configmaps", namespace: "default", name: "page-10", resourceVersion: "0" })) as {
      data?: Record<string, string>;
    };
    assert.equal(new10.data?.["changed"], "yes");
    await assert.rejects(
      stack.registry.get({ resource: "configmaps", namespace: "default", name: "page-15", resourceVersion: "0" }),
      (e) => statusCode(e) === 404,
    );
  });

  it("history compacted: a continue token and Exact of an older revision answer 410 Expired", async () => {
    const first = await list({ rv: "0", limit: 3 });
    const at = Number(first.metadata?.resourceVersion);
    await create(cm("compact-1"));
    const rev = await caughtUp();
    oc.compact(rev);
    await assert.rejects(list({ limit: 3, cont: first.metadata?.continue ?? "" }), (e: unknown) => {
      assert.equal(statusCode(e), 410);
      assert.match((e as ApiError).status.message, /continue parameter is too old/);
      return true;
    });
    await assert.rejects(list({ rv: String(at), match: "Exact" }), (e) => statusCode(e) === 410);
    // Compacted deletions leave nothing behind: page-15 stays gone.
    assert.ok(!names(await list({ rv: "0" })).includes("page-15"));
  });

  it("label and field selectors on what the cache keeps; limit counts selected objects", async () => {
    await caughtUp();
    const even = await list({ rv: "0", labels: "tier=even" });
    assert.deepEqual(names(even), names(await list({ labels: "tier=even" })));
    assert.deepEqual(names(even), ["after-0", "before-0", "before-2", "before-4"]);
    const page = await list({ rv: "0", labels: "tier=even", limit: 2 });
    assert.deepEqual(names(page), ["after-0", "before-0"]);
    const rest = await list({ limit: 2, cont: page.metadata?.continue ?? "", labels: "tier=even" });
    assert.deepEqual(names(rest), ["before-2", "before-4"]);
    assert.deepEqual(names(await list({ rv: "0", fields: "metadata.name=before-3" })), ["before-3"]);
    assert.deepEqual(names(await list({ rv: "0", fields: "metadata.name!=before-3", labels: "tier=odd" })), ["before-1"]);
  });

  it("resourceVersionMatch as Kubernetes validates it: 422 Invalid; continue with a resourceVersion: 400", async () => {
    const cases: [Parameters<typeof list>[0], number, RegExp][] = [
      [{ match: "NotOlderThan" }, 422, /resourceVersionMatch is forbidden unless resourceVersion is provided/],
      [{ rv: "0", match: "Exact" }, 422, /resourceVersionMatch "exact" is forbidden for resourceVersion "0"/],
      [{ rv: "3", match: "Newest" }, 422, /Unsupported value: "Newest"/],
      [{ rv: "5", cont: "eyJhIjoiZGVmYXVsdC94In0" }, 400, /specifying resource version is not allowed when using continue/],
      [{ rv: "x" }, 400, /invalid resourceVersion/],
    ];
    for (const [q, code, msg] of cases) {
      await assert.rejects(list(q), (e: unknown) => {
        assert.equal(statusCode(e), code, JSON.stringify(q));
        assert.match((e as ApiError).status.message, msg);
        return true;
      });
    }
  });

  it("consistent lists from the cache (ConsistentListFromCache): at least the store's revision", async () => {
    stack.registry.store.consistentListFromCache = true;
    try {
      await create(cm("consistent-1"));
      const l = await list();
      assert.ok(names(l).includes("consistent-1"));
      assert.ok(
        Number(l.metadata?.resourceVersion) >= rvOf(unwrap(await stack.registry.get({ resource: "configmaps", namespace: "default", name: "consistent-1" }))),
      );
      assert.match(l.metadata?.continue ?? "", /^$/);
      const paged = await list({ limit: 2 });
      assert.ok(JSON.parse(Buffer.from(paged.metadata?.continue ?? "", "base64url").toString()).r >= 0, "a continue token of the cache");
    } finally {
      stack.registry.store.consistentListFromCache = false;
    }
  });

  it("a rebuilt cache (a restarted api) holds the same state", async () => {
    const rev = await caughtUp();
    const before = await list({ rv: "0" });
    await stopCache();
    assert.equal(oc.revision, -1);
    // Not ready: the store answers rv=0.
    assert.deepEqual(names(await list({ rv: "0" })), names(before));
    startCache();
    await waitFor(() => oc.revision >= rev, { timeoutMs: 30_000, message: "the rebuilt cache" });
    const after = await list({ rv: "0" });
    assert.deepEqual(after.items, before.items);
  });

  it("kill -9 of nats-server: the cache stands at the revision it reached, never ahead; then catches up", async () => {
    const rev = await caughtUp();
    stack.registry.store.cacheWaitMs = 300;
    stack.registry.store.consistentListFromCache = true;
    let down = false;
    try {
      await stack.nats.kill();
      down = true;
      // The store takes writes while the event log is away; the cache cannot have them.
      const during = await create(cm("during-outage", {}, { k: "1" }));
      assert.ok(rvOf(during) > rev);
      assert.ok(oc.revision < rvOf(during));
      await assert.rejects(
        stack.registry.get({ resource: "configmaps", namespace: "default", name: "during-outage", resourceVersion: "0" }),
        (e) => statusCode(e) === 404,
      );
      const stale = await list({ rv: "0" });
      assert.ok(!names(stale).includes("during-outage"));
      assert.ok(Number(stale.metadata?.resourceVersion) < rvOf(during));
      // A watch from resourceVersion 0 starts from the cache's state: its ADDED events are the list above.
      const wac = new AbortController();
      const watch = stack.registry.watch(WatchRequest.fromPartial({ resource: "configmaps", namespace: "default", resourceVersion: "0" }), wac.signal);
      const added: string[] = [];
      while (added.length < stale.items.length) {
        const n = await watch.next();
        assert.ok(!n.done && n.value.type === "ADDED" && n.value.object);
        added.push(unwrap(n.value.object).metadata?.name ?? "");
      }
      wac.abort();
      assert.deepEqual(added, names(stale));
      // A consistent list falls back to the store once the wait is over.
      assert.ok(names(await list()).includes("during-outage"));
      await stack.nats.restart();
      down = false;
      await waitFor(() => oc.revision >= rvOf(during), { timeoutMs: 60_000, message: "the cache after the restart" });
      const got = unwrap(await stack.registry.get({ resource: "configmaps", namespace: "default", name: "during-outage", resourceVersion: "0" }));
      assert.equal(rvOf(got), rvOf(during));
    } finally {
      stack.registry.store.cacheWaitMs = 3_000;
      stack.registry.store.consistentListFromCache = false;
      if (down) await stack.nats.restart(); // a failure above leaves no dead nats-server to the tests after
    }
  });

  describe("real kubectl through the gateway", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
    let dir: string;
    let gateway: Gateway;
    let kubectl: ReturnType<typeof kubectlRunner>;
    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), "choreo-object-cache-"));
      gateway = createGateway({ handlers: stack.registry, log: silentLogger() });
      const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
      kubectl = kubectlRunner(dir, writeKubeconfig(dir, { server: `http://127.0.0.1:${httpPort}` }), { requestTimeoutSeconds: 20 });
    });
    after(async () => {
      await gateway?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("kubectl get configmaps (a list, no resourceVersion) and get --raw with resourceVersion=0, limit and continue", async () => {
      await caughtUp();
      const r = await kubectl("get", "configmaps", "-o", "name");
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /configmap\/before-3\n/);
      const page = await kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps?resourceVersion=0&limit=4");
      assert.equal(page.code, 0, page.stderr);
      const p = JSON.parse(page.stdout) as { items: { metadata: { name: string } }[]; metadata: { continue?: string; resourceVersion: string } };
      assert.equal(p.items.length, 4);
      assert.ok(p.metadata.continue);
      const next = await kubectl("get", "--raw", `/api/v1/namespaces/default/configmaps?limit=4&continue=${p.metadata.continue}`);
      assert.equal(next.code, 0, next.stderr);
      const n = JSON.parse(next.stdout) as { items: { metadata: { name: string } }[]; metadata: { resourceVersion: string } };
      assert.equal(n.metadata.resourceVersion, p.metadata.resourceVersion);
      assert.ok(n.items.every((o) => o.metadata.name > (p.items[3] as { metadata: { name: string } }).metadata.name));
      const one = await kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps/before-3?resourceVersion=0");
      assert.equal(one.code, 0, one.stderr);
      assert.equal((JSON.parse(one.stdout) as { metadata: { name: string } }).metadata.name, "before-3");
      const bad = await kubectl("get", "--raw", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact");
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /resourceVersionMatch is forbidden unless resourceVersion is provided/);
    });
  });
});
