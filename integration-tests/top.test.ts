// test-tier: servers
// Resource metrics through the whole path: kubectl top ──HTTPS──▶ api
// (metrics.k8s.io) ──NATS choreo.agent.<node>.stats──▶ node agents, which
// read their containers' cgroups (process runtime) or report requests
// (hollow). A pod burning one core shows about 1000m; a hollow pod its
// requests; every node is listed; a missing pod is 404.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import { after, before, describe, it } from "node:test";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { unwrap } from "@choreo/kit";
import { parseQuantity } from "@choreo/kit/apimachinery";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { startRealCluster, type RealCluster } from "./support/real-cluster.js";

const WAIT = { timeoutMs: 120_000, intervalMs: 1_000 };
const IMAGE = "local/busybox:1.35";
const KUBECTL_120 = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
/** Finds the burner's process on the host (pgrep -f). */
const MARK = `top-burn-${process.pid}-${Date.now()}`;

/** The process's CPU time in ms from /proc/PID/stat (utime + stime, 10 ms ticks). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * 10;
}

/** A CPU quantity in millicores ("998m" → 998, "1" → 1000, "459436123n" → 459.4). */
function milli(cpu: string): number {
  return Number(parseQuantity(cpu).nano) / 1e6;
}

/** The rows of kubectl top without headers, split on whitespace. */
function rows(stdout: string): string[][] {
  return stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => l.trim().split(/\s+/));
}

describe("kubectl top: metrics.k8s.io from the node agents", () => {
  let c: RealCluster;
  const hollow = "top-hollow";
  const kubectl = (...args: string[]) => run("kubectl", args, c.kubeconfig);

  before(async () => {
    c = await startRealCluster("process", { nodes: 1 });
    await c.startActor("node-agent", { CHOREO_NODE_CPU: "4", CHOREO_NODE_MEMORY: "16Gi" }, ["--node-name", hollow, "--runtime", "hollow"], hollow);
    await withLogsOnFailure(c, async () => {
      await waitFor(async () => (await c.client.list("nodes")).items.length === 2, { ...WAIT, message: "the hollow node registered" });
      const burn = c.manifest(
        "burn.yaml",
        `apiVersion: v1
kind: Pod
metadata:
  name: burn
  labels: {app: burn}
spec:
  nodeName: ${c.nodes[0]}
  terminationGracePeriodSeconds: 1
  containers:
  - name: burner
    image: ${IMAGE}
    command: ["sh", "-c", "while :; do :; done # ${MARK}"]
  - name: idle
    image: ${IMAGE}
    command: ["sleep", "3600"]
---
apiVersion: v1
kind: Pod
metadata:
  name: requested
  labels: {app: hollow}
spec:
  nodeName: ${hollow}
  containers:
  - name: app
    image: busybox
    resources:
      requests: {cpu: 300m, memory: 64Mi}
`,
      );
      const r = await kubectl("apply", "-f", burn);
      assert.equal(r.code, 0, r.stderr);
      await waitFor(async () => (await c.pod("burn")).status?.phase === "Running" && (await c.pod("requested")).status?.phase === "Running", {
        ...WAIT,
        message: "both pods running",
      });
    });
  });

  after(async () => {
    await c?.stop();
  });

  // The band is wide: the test machine is shared (a load of 15 on 2 cores left the loop 300m of a core), so the
  // figure is also checked against the kernel's own accounting of the loop's process over the same window.
  it("kubectl top pod: the pod burning a core shows up to one core, busy", async () => {
    await withLogsOnFailure(c, async () => {
      // The first rate needs two readings a few seconds apart: until then the pod has no metrics.
      await waitFor(async () => (await kubectl("top", "pod", "burn", "--no-headers")).code === 0, { ...WAIT, message: "burn has metrics" });
      const r = await kubectl("top", "pod", "burn", "--no-headers");
      assert.equal(r.code, 0, r.stderr);
      const [[name, cpu, memory] = []] = rows(r.stdout);
      assert.equal(name, "burn");
      const m = milli(cpu ?? "");
      assert.ok(m >= 100 && m <= 1300, `burn uses ${cpu}, expected up to one core`);
      assert.match(memory ?? "", /^\d+Mi$/);
    });
  });

  it("kubectl top pods --containers: the burner near a core, the idle container near nothing", async () => {
    const r = await kubectl("top", "pods", "--containers", "--no-headers", "-l", "app=burn");
    assert.equal(r.code, 0, r.stderr);
    const byName = new Map(rows(r.stdout).map(([pod, container, cpu]) => [`${pod}/${container}`, milli(cpu ?? "")]));
    assert.deepEqual([...byName.keys()].sort(), ["burn/burner", "burn/idle"]);
    const burner = byName.get("burn/burner") ?? 0;
    assert.ok(burner >= 100 && burner <= 1300, `burner ${burner}m`);
    assert.ok((byName.get("burn/idle") ?? 1000) * 5 < burner, `idle ${byName.get("burn/idle")}m beside the burner's ${burner}m`);
  });

  it("the burner's rate agrees with the kernel's accounting of its process over the same window", async () => {
    const pid = Number(execFileSync("pgrep", ["-f", MARK], { encoding: "utf8" }).trim().split("\n")[0]);
    assert.ok(pid > 0, "the loop's process");
    const samples: { at: number; ms: number }[] = [];
    const sampler = setInterval(() => samples.push({ at: Date.now(), ms: cpuMs(pid) }), 250);
    try {
      samples.push({ at: Date.now(), ms: cpuMs(pid) });
      await waitFor(async () => samples.length > 0 && Date.now() - samples[0]!.at > 20_000, { ...WAIT, message: "20 s of samples" });
      const asked = Date.now();
      const raw = await kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn");
      assert.equal(raw.code, 0, raw.stderr);
      const end = { at: Date.now(), ms: cpuMs(pid) };
      const m = JSON.parse(raw.stdout) as { window: string; containers: { name: string; usage: { cpu: string } }[] };
      const windowMs = Number(m.window.replace(/s$/, "")) * 1000;
      assert.ok(windowMs >= 10_000 && windowMs <= 21_000, `window ${m.window}`);
      // The kernel's figure over [asked − window, end]: the sample nearest the window's start.
      const start = samples.reduce((a, b) => (Math.abs(b.at - (asked - windowMs)) < Math.abs(a.at - (asked - windowMs)) ? b : a));
      const kernel = ((end.ms - start.ms) / (end.at - start.at)) * 1000;
      const reported = milli(m.containers.find((x) => x.name === "burner")?.usage.cpu ?? "0");
      assert.ok(Math.abs(reported - kernel) <= 0.35 * kernel + 50, `reported ${reported}m, the kernel says ${Math.round(kernel)}m`);
    } finally {
      clearInterval(sampler);
    }
  });

  it("a hollow node's pod uses what it requests; kubectl top nodes lists every node", async () => {
    await waitFor(async () => (await kubectl("top", "pod", "requested", "--no-headers")).code === 0, { ...WAIT, message: "requested has metrics" });
    const pod = await kubectl("top", "pod", "requested", "--no-headers");
    assert.deepEqual(rows(pod.stdout), [["requested", "300m", "64Mi"]]);
    await waitFor(async () => rows((await kubectl("top", "nodes", "--no-headers")).stdout).length === 2, { ...WAIT, message: "both nodes in top" });
    const nodes = await kubectl("top", "nodes", "--no-headers");
    assert.equal(nodes.code, 0, nodes.stderr);
    const byNode = new Map(rows(nodes.stdout).map((r) => [r[0], r]));
    assert.deepEqual([...byNode.keys()].sort(), [c.nodes[0], hollow].sort());
    // The hollow node: the sum of its pods' requests, and the share of its allocatable 4 cores.
    assert.deepEqual(byNode.get(hollow)?.slice(1), ["300m", "7%", "64Mi", "0%"]);
    // The real node: the machine, busy with at least the burning pod.
    assert.ok(milli(byNode.get(c.nodes[0])?.[1] ?? "0") >= 100, `real node ${byNode.get(c.nodes[0])?.join(" ")}`);
  });

  it("kubectl 1.20 (plain discovery) shows the same", { skip: existsSync(KUBECTL_120) ? false : `no kubectl 1.20 at ${KUBECTL_120}` }, async () => {
    const pod = await run(KUBECTL_120, ["top", "pod", "requested", "--no-headers"], c.kubeconfig);
    assert.equal(pod.code, 0, pod.stderr);
    assert.deepEqual(rows(pod.stdout), [["requested", "300m", "64Mi"]]);
    const nodes = await run(KUBECTL_120, ["top", "nodes", "--no-headers"], c.kubeconfig);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.deepEqual(
      rows(nodes.stdout)
        .map((r) => r[0])
        .sort(),
      [c.nodes[0], hollow].sort(),
    );
  });

  it("the JSON is metrics-server's; a missing pod is a 404 Status; the ApiClient reads the same over NATS", async () => {
    const raw = await kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dhollow");
    assert.equal(raw.code, 0, raw.stderr);
    const list = JSON.parse(raw.stdout) as { kind: string; apiVersion: string; items: Record<string, unknown>[] };
    assert.equal(list.kind, "PodMetricsList");
    assert.equal(list.apiVersion, "metrics.k8s.io/v1beta1");
    assert.equal(list.items.length, 1);
    const item = list.items[0]!;
    assert.deepEqual(item["containers"], [{ name: "app", usage: { cpu: "300m", memory: "64Mi" } }]);
    assert.match(String(item["timestamp"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(String(item["window"]), /^[\d.]+s$/);
    assert.deepEqual((item["metadata"] as { labels: unknown }).labels, { app: "hollow" });

    const missing = await kubectl("top", "pod", "nope");
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /NotFound.*podmetrics\.metrics\.k8s\.io "default\/nope" not found/);
    const missingRaw = await kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope");
    assert.notEqual(missingRaw.code, 0);
    assert.match(missingRaw.stderr, /not found/);

    const viaNats = await c.client.podMetrics("default", { labelSelector: "app=burn" });
    assert.deepEqual(
      viaNats.items.map((p) => p.containers.map((x) => x.name)),
      [["burner", "idle"]],
    );
    const nodes = await c.client.nodeMetrics();
    assert.deepEqual(nodes.items.map((n) => n.metadata?.name).sort(), [c.nodes[0], hollow].sort());
    await assert.rejects(c.client.podMetrics("default", { fieldSelector: "spec.nodeName=x" }), /field label not supported/);
    const prom = await (await fetch(`http://127.0.0.1:${c.apis[0]?.metricsPort}/metrics`)).text();
    assert.match(prom, /choreo_api_node_stats_requests_total\{[^}]*result="answered"[^}]*\} [1-9]/);
  });

  it("a real node reports the machine's cores as capacity and keeps the default reserve (100m, 256Mi) back from allocatable", async () => {
    const node = unwrap(await c.client.get("nodes", "", c.nodes[0]!)) as Node;
    const cores = os.cpus().length;
    assert.equal(node.status?.capacity["cpu"], String(cores));
    assert.equal(node.status?.allocatable["cpu"], `${cores * 1000 - 100}m`);
    const capKi = Number(node.status?.capacity["memory"]?.replace(/Ki$/, ""));
    const allocKi = Number(node.status?.allocatable["memory"]?.replace(/Ki$/, ""));
    assert.equal(capKi, Math.floor(os.totalmem() / 1024));
    assert.equal(capKi - allocKi, 256 * 1024);
  });
});
