// test-tier: servers
// kubectl drain under a PodDisruptionBudget: an RC of 4 pods spread over 2
// hollow nodes (pods are ready as soon as they run, so replacements become
// ready at once and the drain is fast), a budget of minAvailable 3, and
// kubectl 1.32's drain of one node. Pods move one at a time: an informer
// (the event log, not polling) is sampled every 20 ms and never shows fewer
// than 3 ready pods; the drain completes and leaves the node cordoned. The
// replication actor (RC manager and disruption controller) is killed -9 while
// the drain waits, and the budget still holds. Then the direct checks: an
// eviction past the budget is 429, a budget with both bounds is 422.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { PodDisruptionBudget } from "@choreo/kit/gen/choreo/policy/v1/policy";
import type { Informer } from "@choreo/kit/informer";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { podInformer, startCluster, type TestCluster } from "./support/cluster.js";
import { http } from "./support/http.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const NODES = ["hollow-0", "hollow-1"];
const KUBECTL_120 = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

const isReady = (p: Pod): boolean => p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;

describe("kubectl drain under a PodDisruptionBudget", () => {
  let c: TestCluster;
  let kc: string;
  let informer: Informer<"pod">;
  /** The node drained first, and the other. */
  let drained = "";
  let other = "";
  const ac = new AbortController();
  const kubectl = async (...args: string[]): Promise<string> => {
    const r = await run("kubectl", args, kc);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}\n${c.logTails(30)}`);
    return r.stdout;
  };
  /** The web pods live (not being deleted), from the informer's cache. */
  const live = (): Pod[] => informer.list().filter((p) => p.metadata?.labels["app"] === "web" && !p.metadata.deletionTimestamp);
  const budget = async (): Promise<PodDisruptionBudget> => unwrap(await c.client.get("poddisruptionbudgets", "default", "web")) as PodDisruptionBudget;

  before(async () => {
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES.length) } },
        { name: "scheduler" },
        { name: "replication", env: { CHOREO_EVENTS: "0" } },
      ],
    });
    kc = writeKubeconfig(c);
    await waitFor(async () => (await c.client.list("nodes")).items.length === NODES.length, { timeoutMs: 30_000, message: "2 hollow nodes" });
    informer = await podInformer(c);
    void informer.start(ac.signal).catch(() => undefined);
    await informer.waitForSync();
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it("drains one node: pods move one at a time, never fewer than 3 ready, through a kill -9 of the replication actor", async () => {
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "ReplicationController",
        metadata: { name: "web", namespace: "default" },
        spec: {
          replicas: 4,
          selector: { app: "web" },
          template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
        },
      }),
    );
    await waitFor(() => live().filter(isReady).length === 4, { timeoutMs: 60_000, message: "4 ready pods" });
    const onNode = (n: string): Pod[] => live().filter((p) => p.spec?.nodeName === n);
    drained = NODES.find((n) => onNode(n).length >= 2 && onNode(n).length < 4) ?? "";
    assert.ok(drained, `the pods are spread over both nodes: ${NODES.map((n) => `${n}=${onNode(n).length}`).join(" ")}`);
    other = NODES.find((n) => n !== drained)!;

    await kubectl("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=3");
    await waitFor(
      async () => {
        const s = (await budget()).status;
        return s?.observedGeneration === 1 && s.disruptionsAllowed === 1 && s.currentHealthy === 4 && s.desiredHealthy === 3 && s.expectedPods === 4;
      },
      { timeoutMs: 30_000, message: "the budget's status: 4 healthy, 3 desired, 1 allowed" },
    );
    assert.match(await kubectl("get", "pdb", "web"), /web\s+3\s+N\/A\s+1\s/);
    const described = await kubectl("describe", "pdb", "web");
    for (const line of [/Min available:\s+3/, /Selector:\s+app=web/, /Allowed disruptions:\s+1/, /Current:\s+4/, /Desired:\s+3/, /Total:\s+4/])
      assert.match(described, line, described);

    // Sampled from the informer every 20 ms while the drain runs.
    let minReady = Infinity;
    let samples = 0;
    const sampler = setInterval(() => {
      minReady = Math.min(minReady, live().filter(isReady).length);
      samples++;
    }, 20);
    try {
      const moving = onNode(drained).map((p) => p.metadata?.uid ?? "");
      const drain = run("kubectl", ["drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=180s"], kc);
      // The first eviction went through; the others wait on the budget: kill -9 the replication actor now.
      // (Being deleted, or already gone from the cache between two looks.)
      const evicted = (uid: string): boolean => {
        const p = informer.list().find((x) => x.metadata?.uid === uid);
        return !p || !!p.metadata?.deletionTimestamp;
      };
      await waitFor(() => moving.some(evicted), {
        timeoutMs: 60_000,
        intervalMs: 5,
        message: "a first pod evicted",
      });
      await c.actors.get("replication")?.kill();
      await c.startActor("replication", { CHOREO_EVENTS: "0" });
      const r = await drain;
      assert.equal(r.code, 0, `kubectl drain: ${r.stderr}\n${c.logTails(40)}`);
      assert.match(r.stdout, new RegExp(`node/${drained} drained`));
      await waitFor(() => live().filter(isReady).length === 4 && onNode(drained).length === 0, {
        timeoutMs: 60_000,
        message: "4 ready pods, none on the drained node",
      });
    } finally {
      clearInterval(sampler);
    }
    console.log(`drain: ${samples} samples, fewest ready ${minReady}`);
    assert.ok(samples > 10, `sampled during the drain (${samples})`);
    assert.ok(minReady >= 3, `never fewer than 3 ready pods (saw ${minReady})`);
    assert.equal(onNode(other).length, 4);
    const node = unwrap(await c.client.get("nodes", "", drained)) as Node;
    assert.equal(node.spec?.unschedulable, true, "the drained node is cordoned");

    await kubectl("uncordon", drained);
    assert.notEqual((unwrap(await c.client.get("nodes", "", drained)) as Node).spec?.unschedulable, true);
    await kubectl("cordon", drained);
    assert.equal((unwrap(await c.client.get("nodes", "", drained)) as Node).spec?.unschedulable, true);
  });

  it("an eviction past the budget is 429 with the DisruptionBudget cause; a missing pod's is 404", async () => {
    // minAvailable 4 of 4: a new generation, then no disruption allowed.
    await kubectl("patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":4}}');
    await waitFor(
      async () => {
        const b = await budget();
        return b.status?.observedGeneration === 2 && b.status.disruptionsAllowed === 0 && b.status.currentHealthy === 4;
      },
      { timeoutMs: 30_000, message: "the budget at 0 allowed" },
    );
    const name = live()[0]?.metadata?.name ?? "";
    const body = { apiVersion: "policy/v1", kind: "Eviction", metadata: { name, namespace: "default" } };
    const r = await http(c.httpUrl, c.token, "POST", `/api/v1/namespaces/default/pods/${name}/eviction`, body);
    assert.equal(r.status, 429, r.text);
    assert.equal(r.json["reason"], "TooManyRequests");
    assert.equal(r.json["message"], "Cannot evict pod as it would violate the pod's disruption budget.");
    const causes = (r.json["details"] as { causes: { reason: string; message: string }[] }).causes;
    assert.deepEqual(
      causes.map((x) => x.reason),
      ["DisruptionBudget"],
    );
    assert.match(causes[0]!.message, /The disruption budget web needs 4 healthy pods and has 4 currently/);
    assert.ok(
      live().some((p) => p.metadata?.name === name),
      "the pod stays",
    );
    // The same refusal through the NATS door (kit's ApiClient).
    await assert.rejects(c.client.evict("default", name), (err: unknown) => err instanceof ApiError && err.code === 429 && err.reason === "TooManyRequests");
    const missing = await http(c.httpUrl, c.token, "POST", "/api/v1/namespaces/default/pods/nobody/eviction", { ...body, metadata: { name: "nobody" } });
    assert.equal(missing.status, 404, missing.text);
  });

  it("a budget with both minAvailable and maxUnavailable is 422 on spec, nothing stored", async () => {
    const pdb = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: "both" },
      spec: { minAvailable: 1, maxUnavailable: 1, selector: {} },
    };
    const r = await http(c.httpUrl, c.token, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb);
    assert.equal(r.status, 422, r.text);
    const causes = (r.json["details"] as { causes: { field: string; message: string }[] }).causes;
    assert.ok(
      causes.some((x) => x.field === "spec" && /minAvailable and maxUnavailable cannot be both set/.test(x.message)),
      r.text,
    );
    const get = await http(c.httpUrl, c.token, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/both");
    assert.equal(get.status, 404);
  });

  it(
    "kubectl 1.20 drains the other node back, within the budget",
    { skip: existsSync(KUBECTL_120) ? false : `no kubectl 1.20 at ${KUBECTL_120}` },
    async () => {
      // A strategic merge patch (kubectl patch's default).
      await kubectl("patch", "pdb", "web", "-p", '{"spec":{"minAvailable":3}}');
      await kubectl("uncordon", drained);
      let minReady = Infinity;
      const sampler = setInterval(() => (minReady = Math.min(minReady, live().filter(isReady).length)), 20);
      try {
        const r = await run(KUBECTL_120, ["drain", other, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=180s"], kc);
        assert.equal(r.code, 0, `kubectl 1.20 drain: ${r.stderr}\n${c.logTails(40)}`);
        await waitFor(() => live().filter(isReady).length === 4 && live().every((p) => p.spec?.nodeName === drained), {
          timeoutMs: 60_000,
          message: "4 ready pods back on the first node",
        });
      } finally {
        clearInterval(sampler);
      }
      assert.ok(minReady >= 3, `never fewer than 3 ready pods (saw ${minReady})`);
      assert.equal((unwrap(await c.client.get("nodes", "", other)) as Node).spec?.unschedulable, true);
    },
  );
});
