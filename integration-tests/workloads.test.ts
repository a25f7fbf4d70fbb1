// test-tier: servers
// DaemonSets and Jobs against the real api, scheduler and replication
// processes. The node agents run in this process (hollow runtime, real
// agents over NATS) so a test can make one pod fail.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { DaemonSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Job } from "@choreo/kit/gen/choreo/batch/v1/batch";
import type { Event, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { NodeAgent } from "@choreo/node-agent/agent";
import { hollowNodeConfig } from "@choreo/node-agent/hollow-nodes";
import { HollowRuntime } from "@choreo/node-agent/runtime/hollow";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

describe("workloads: DaemonSet and Job", () => {
  let c: TestCluster;
  const ac = new AbortController();
  const runtimes = new Map<string, HollowRuntime>();
  const agents: Promise<void>[] = [];
  const addNode = async (i: number): Promise<void> => {
    const node = hollowNodeConfig(i, "w-");
    const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp });
    runtimes.set(node.name, runtime);
    const agent = new NodeAgent({
      client: c.client,
      nc: c.nc,
      jsm: await jetstreamManager(c.nc),
      node,
      runtime,
      log: silentLogger(),
      restartBackoff: undefined,
    });
    agents.push(agent.start(ac.signal).catch(() => undefined));
    await waitFor(async () => (await c.client.list("nodes", { fieldSelector: `metadata.name=${node.name}` })).items.length === 1, {
      timeoutMs: 20_000,
      message: `node ${node.name}`,
    });
  };
  const pods = async (selector: string): Promise<Pod[]> =>
    (await c.client.list("pods", { namespace: "default", labelSelector: selector })).items.map((o) => unwrap(o) as Pod);
  const running = (ps: Pod[]) => ps.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);

  before(async () => {
    c = await startCluster({ actors: [{ name: "scheduler" }, { name: "replication" }] });
    for (const i of [0, 1, 2]) await addNode(i);
    // w-2 is dedicated: a NoSchedule taint the daemon does not tolerate.
    await c.client.patch("nodes", "", "w-2", "application/merge-patch+json", { spec: { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] } });
  });
  after(async () => {
    ac.abort();
    await Promise.all(agents);
    await c?.stop();
  });

  it("DaemonSet: one pod per eligible node, none on the tainted node, a new node gets its pod, an update rolls node by node and kubectl rollout status completes", async () => {
    await c.client.create(
      fromKubeJson({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: "logger", namespace: "default" },
        spec: {
          selector: { matchLabels: { app: "logger" } },
          template: { metadata: { labels: { app: "logger" } }, spec: { containers: [{ name: "log", image: "fluentd:v1" }] } },
        },
      }),
    );
    await waitFor(async () => running(await pods("app=logger")).length === 2, { timeoutMs: 30_000, message: "2 daemon pods" });
    const nodesOf = async () =>
      running(await pods("app=logger"))
        .map((p) => p.spec?.nodeName)
        .sort();
    assert.deepEqual(await nodesOf(), ["w-0", "w-1"], "not on the tainted node");

    await addNode(3);
    await waitFor(async () => (await nodesOf()).join() === "w-0,w-1,w-3", { timeoutMs: 30_000, message: "the new node gets its pod" });

    const kubeconfig = writeKubeconfig(c);
    await c.client.patch("daemonsets", "default", "logger", "application/merge-patch+json", {
      spec: { template: { spec: { containers: [{ name: "log", image: "fluentd:v2" }] } } },
    });
    // Sample the rollout: never more than maxUnavailable (1) of the 3 nodes without an available pod.
    let worst = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const up = running(await pods("app=logger")).filter((p) => p.status?.conditions.some((x) => x.type === "Ready" && x.status === "True"));
        worst = Math.max(worst, 3 - new Set(up.map((p) => p.spec?.nodeName)).size);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const rollout = await run("kubectl", ["rollout", "status", "daemonset/logger", "--timeout=60s"], kubeconfig);
    sampling = false;
    await sampler;
    assert.equal(rollout.code, 0, rollout.stderr + rollout.stdout);
    assert.match(rollout.stdout, /successfully rolled out/);
    const after = running(await pods("app=logger"));
    assert.deepEqual(
      after.map((p) => p.spec?.containers[0]?.image),
      ["fluentd:v2", "fluentd:v2", "fluentd:v2"],
    );
    assert.ok(worst <= 1, `at most 1 node without a ready daemon pod during the rollout (saw ${worst})`);
    const ds = unwrap(await c.client.get("daemonsets", "default", "logger")) as DaemonSet;
    assert.deepEqual([ds.status?.desiredNumberScheduled, ds.status?.updatedNumberScheduled, ds.status?.numberAvailable], [3, 3, 3]);
  });

  it("Job: 5 completions, parallelism 2, one pod fails once → Complete with succeeded 5, failed 1", async () => {
    const created = unwrap(
      await c.client.create(
        fromKubeJson({
          apiVersion: "batch/v1",
          kind: "Job",
          metadata: { name: "pi", namespace: "default" },
          spec: {
            completions: 5,
            parallelism: 2,
            backoffLimit: 3,
            template: {
              metadata: { annotations: { "hollow.choreo.dev/exit-after-ms": "2000" } },
              spec: { restartPolicy: "Never", containers: [{ name: "pi", image: "perl" }] },
            },
          },
        }),
      ),
    ) as Job;
    const selector = `batch.kubernetes.io/controller-uid=${created.metadata?.uid ?? ""}`;
    // Fail the first pod that runs (each runs 2 s, so it is still running when told to crash).
    const victim = await waitFor(async () => running(await pods(selector))[0], { timeoutMs: 30_000, intervalMs: 20, message: "a running job pod" });
    runtimes.get(victim.spec?.nodeName ?? "")?.crash(victim.metadata?.uid ?? "");
    let maxActive = 0;
    const job = await waitFor(
      async () => {
        const active = (await pods(selector)).filter((p) => p.status?.phase === "Running" || p.status?.phase === "Pending").length;
        maxActive = Math.max(maxActive, active);
        const j = unwrap(await c.client.get("jobs", "default", "pi")) as Job;
        return j.status?.conditions.some((x) => x.type === "Complete" && x.status === "True") ? j : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, message: "job complete" },
    );
    assert.equal(job.status?.succeeded, 5);
    assert.equal(job.status?.failed, 1);
    assert.equal(job.status?.active, 0);
    assert.ok(job.status?.completionTime, "completionTime set");
    assert.ok(maxActive <= 2, `parallelism 2 (saw ${maxActive} active)`);
    const all = await pods(selector);
    assert.equal(all.filter((p) => p.status?.phase === "Failed").length, 1);
    assert.equal(all.filter((p) => p.status?.phase === "Succeeded").length, 5);
    const events = (await c.client.list("events", { namespace: "default" })).items
      .map((o) => unwrap(o) as Event)
      .filter((e) => e.involvedObject?.name === "pi");
    assert.ok(
      events.some((e) => e.reason === "Completed"),
      "a Completed event",
    );
  });
});
