// test-tier: servers
// Why a pod is going, on the pod: the DisruptionTarget condition Kubernetes
// (1.26+) puts on a pod before a disruption deletes it. Real api, scheduler,
// replication and a node agent process with 2 hollow nodes of 1 cpu each;
// kubectl 1.32. An evicted pod held by a finalizer shows the condition while
// terminating (kubectl get -o json, describe) and a kubectl watch sees it
// before or with the deletionTimestamp; the scheduler's preemption victim
// carries PreemptionByScheduler; every pod kubectl drain evicts is seen
// terminating with EvictionByEvictionAPI (an informer on the event log
// records each version).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Pod, PodCondition } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Informer } from "@choreo/kit/informer";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { podInformer, startCluster, type TestCluster } from "./support/cluster.js";
import { http } from "./support/http.js";
import { run, startWatch, writeKubeconfig } from "./support/kubectl.js";

const NODES = ["hollow-0", "hollow-1"];

const disruption = (p: Pod): PodCondition | undefined => p.status?.conditions.find((c) => c.type === "DisruptionTarget");

describe("DisruptionTarget on disrupted pods", () => {
  let c: TestCluster;
  let kc: string;
  let informer: Informer<"pod">;
  const ac = new AbortController();
  /** Every version of every pod the informer saw being deleted (deletionTimestamp set), by uid. */
  const terminating = new Map<string, Pod[]>();
  const kubectl = async (...args: string[]): Promise<string> => {
    const r = await run("kubectl", args, kc);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}\n${c.logTails(30)}`);
    return r.stdout;
  };
  const pods = (app: string): Pod[] => informer.list().filter((p) => p.metadata?.labels["app"] === app);
  const isRunning = (p: Pod): boolean => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp;

  before(async () => {
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES.length), CHOREO_NODE_CPU: "1" } },
        { name: "scheduler" },
        { name: "replication", env: { CHOREO_EVENTS: "0" } },
      ],
    });
    kc = writeKubeconfig(c);
    await waitFor(async () => (await c.client.list("nodes")).items.length === NODES.length, { timeoutMs: 30_000, message: "2 hollow nodes" });
    informer = await podInformer(c);
    const record = (p: Pod): void => {
      if (!p.metadata?.deletionTimestamp) return;
      terminating.set(p.metadata.uid, [...(terminating.get(p.metadata.uid) ?? []), p]);
    };
    informer.addEventHandler({ onAdd: record, onUpdate: (_, p) => record(p), onDelete: record });
    void informer.start(ac.signal).catch(() => undefined);
    await informer.waitForSync();
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it("an evicted pod shows the condition while terminating (kubectl get, describe) and a kubectl watch sees it with the deletion", async () => {
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "held", namespace: "default", labels: { app: "held" }, finalizers: ["choreo.test/hold"] },
        spec: { containers: [{ name: "app", image: "nginx" }] },
      }),
    );
    await waitFor(() => pods("held").some(isRunning), { timeoutMs: 60_000, message: "the pod running" });
    const cond = "{.object.status.conditions[?(@.type=='DisruptionTarget')].reason}";
    const watch = startWatch(
      "kubectl",
      ["get", "pod", "held", "--watch", "--output-watch-events", "-o", `jsonpath={.type}|{.object.metadata.deletionTimestamp}|${cond}{"\\n"}`],
      kc,
    );
    try {
      await waitFor(() => watch.output().includes("ADDED|"), { timeoutMs: 30_000, message: `the watch's first event: ${watch.output()}` });
      const body = { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "held", namespace: "default" } };
      const r = await http(c.httpUrl, c.token, "POST", "/api/v1/namespaces/default/pods/held/eviction", body);
      assert.equal(r.status, 201, r.text);

      // Held by its finalizer, the pod stays terminating once its node agent stopped it.
      const got = JSON.parse(await kubectl("get", "pod", "held", "-o", "json")) as {
        metadata: { deletionTimestamp?: string };
        status: { conditions: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[] };
      };
      assert.ok(got.metadata.deletionTimestamp, "terminating");
      const dt = got.status.conditions.find((x) => x.type === "DisruptionTarget");
      assert.deepEqual(
        { status: dt?.status, reason: dt?.reason, message: dt?.message },
        { status: "True", reason: "EvictionByEvictionAPI", message: "Eviction API: evicting" },
      );
      assert.match(dt?.lastTransitionTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.match(await kubectl("describe", "pod", "held"), /DisruptionTarget\s+True/);

      await kubectl("patch", "pod", "held", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]');
      await waitFor(() => watch.output().includes("DELETED|"), { timeoutMs: 60_000, message: `the watch's DELETED: ${watch.output()}` });
    } finally {
      await watch.stop();
    }
    const lines = watch
      .output()
      .split("\n")
      .filter((l) => /^(ADDED|MODIFIED|DELETED)\|/.test(l))
      .map((l) => l.split("|"));
    const firstMarked = lines.findIndex(([, , reason]) => reason === "EvictionByEvictionAPI");
    const firstDeleting = lines.findIndex(([, ts]) => Boolean(ts));
    assert.ok(firstMarked > 0 && firstDeleting > 0, watch.output());
    assert.ok(firstMarked <= firstDeleting, `the condition before or with the deletionTimestamp:\n${watch.output()}`);
    assert.ok(
      lines.slice(firstMarked).every(([, , reason]) => reason === "EvictionByEvictionAPI"),
      `every later version keeps it (the node agent's status writes too):\n${watch.output()}`,
    );
  });

  it("the scheduler's preemption victim carries PreemptionByScheduler", async () => {
    // 4 × 400m on 2 × 1 cpu: no room for another 500m without a victim.
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "ReplicationController",
        metadata: { name: "batch", namespace: "default" },
        spec: {
          replicas: 4,
          selector: { app: "batch" },
          template: {
            metadata: { labels: { app: "batch" } },
            spec: { priority: 10, containers: [{ name: "b", image: "busybox", resources: { requests: { cpu: "400m" } } }] },
          },
        },
      }),
    );
    await waitFor(() => pods("batch").filter(isRunning).length === 4, { timeoutMs: 60_000, message: "4 batch pods running" });
    const batch = new Set(pods("batch").map((p) => p.metadata?.uid ?? ""));
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "prod", namespace: "default", labels: { app: "prod" } },
        spec: { priority: 1000, containers: [{ name: "p", image: "nginx", resources: { requests: { cpu: "500m" } } }] },
      }),
    );
    await waitFor(() => pods("prod").some(isRunning), { timeoutMs: 60_000, message: "the high-priority pod runs" });
    const victims = [...terminating.entries()].filter(([uid]) => batch.has(uid));
    assert.equal(victims.length, 1, "one victim");
    for (const [, seen] of victims) {
      const cond = disruption(seen[0]!);
      assert.deepEqual(
        { status: cond?.status, reason: cond?.reason, message: cond?.message },
        { status: "True", reason: "PreemptionByScheduler", message: "default-scheduler: preempting to accommodate a higher priority pod" },
        "the first version seen terminating already carries the condition",
      );
    }
    await kubectl("delete", "rc", "batch", "--wait=false");
    await kubectl("delete", "pod", "prod", "--wait=false");
    await waitFor(() => pods("batch").length + pods("prod").length === 0, { timeoutMs: 60_000, message: "batch and prod gone" });
  });

  it("kubectl drain: every pod it evicts is seen terminating with EvictionByEvictionAPI", async () => {
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
    await waitFor(() => pods("web").filter(isRunning).length === 4, { timeoutMs: 60_000, message: "4 web pods running" });
    const node = NODES.find((n) => pods("web").some((p) => p.spec?.nodeName === n))!;
    const evicted = pods("web")
      .filter((p) => p.spec?.nodeName === node)
      .map((p) => p.metadata?.uid ?? "");
    assert.ok(evicted.length > 0);
    const r = await run("kubectl", ["drain", node, "--ignore-daemonsets", "--pod-selector=app=web", "--timeout=120s"], kc);
    assert.equal(r.code, 0, `kubectl drain: ${r.stderr}\n${c.logTails(40)}`);
    await waitFor(() => evicted.every((uid) => !informer.list().some((p) => p.metadata?.uid === uid)), {
      timeoutMs: 60_000,
      message: "the evicted pods gone",
    });
    for (const uid of evicted) {
      const seen = terminating.get(uid) ?? [];
      assert.ok(seen.length > 0, `pod ${uid} seen terminating`);
      assert.ok(
        seen.every((p) => disruption(p)?.reason === "EvictionByEvictionAPI" && disruption(p)?.status === "True"),
        `every terminating version of ${uid} carries the condition: ${JSON.stringify(seen.map((p) => p.status?.conditions))}`,
      );
    }
    await kubectl("uncordon", node);
  });
});
