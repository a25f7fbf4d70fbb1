// test-tier: servers
// Container logs through the whole path: kubectl / choreo ──HTTPS──▶ api
// process ──NATS──▶ node agent's LogServer ──▶ hollow runtime (whose
// containers "print" a line when they start and when they exit).
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { NodeAgent } from "@choreo/node-agent/agent";
import { hollowNodeConfig } from "@choreo/node-agent/hollow-nodes";
import { LogServer } from "@choreo/node-agent/logs";
import { HOLLOW_ANNOTATIONS, HollowRuntime } from "@choreo/node-agent/runtime/hollow";
import { ROOT, startCluster, type TestCluster } from "./support/cluster.js";
import { run, startWatch, writeKubeconfig } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");
const WAIT = { timeoutMs: 30_000 };

async function createPod(c: TestCluster, name: string, containers: string[], annotations: Record<string, string> = {}, restartPolicy = "Never"): Promise<void> {
  await c.client.create(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default", annotations },
      spec: { restartPolicy, containers: containers.map((n) => ({ name: n, image: "busybox" })) },
    }),
  );
}

async function waitRunning(c: TestCluster, name: string): Promise<Pod> {
  return waitFor(
    async () => {
      const p = unwrap(await c.client.get("pods", "default", name)) as Pod;
      return p.status?.phase === "Running" ? p : undefined;
    },
    { ...WAIT, message: `pod ${name} Running` },
  );
}

describe("logs: kubectl and choreo against hollow pods", () => {
  let c: TestCluster;
  let kc: string;
  const ac = new AbortController();
  const running: Promise<void>[] = [];
  const kubectl = (...args: string[]) => run("kubectl", args, kc);
  const choreo = (...args: string[]) => run(process.execPath, [CHOREO, ...args], kc, { cwd: c.dir });

  before(async () => {
    c = await startCluster({ actors: [{ name: "scheduler" }] });
    kc = writeKubeconfig(c);
    // The agent runs in this process with its LogServer beside it, as the node-agent process wires them.
    const node = hollowNodeConfig(0, "logs-");
    const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp });
    const agent = new NodeAgent({
      client: c.client,
      nc: c.nc,
      jsm: await jetstreamManager(c.nc),
      node,
      runtime,
      log: silentLogger(),
      restartBackoff: { initialMs: 500, maxMs: 2_000 },
    });
    const server = new LogServer({ nc: c.nc, node: node.name, runtime, pods: agent.informer, log: silentLogger() });
    running.push(
      agent.start(ac.signal).catch(() => undefined),
      server.start(ac.signal),
    );
    await waitFor(async () => (await c.client.list("nodes", {})).items.length === 1, { ...WAIT, message: "node registered" });
  });
  after(async () => {
    ac.abort();
    await Promise.all(running);
    await c?.stop();
  });

  it("kubectl logs prints a one-container pod's log; choreo logs --tail 1 its last line", async () => {
    await createPod(c, "solo", ["app"]);
    await waitRunning(c, "solo");
    const r = await kubectl("logs", "solo");
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "hollow container app started (run 0)\n");
    const ts = await kubectl("logs", "solo", "--timestamps");
    assert.match(ts.stdout, /^\d{4}-\d\d-\d\dT[\d:.]+Z hollow container app started \(run 0\)\n$/);
    const tail = await choreo("logs", "solo", "--tail", "1");
    assert.equal(tail.code, 0, tail.stderr);
    assert.equal(tail.stdout, "hollow container app started (run 0)\n");
  });

  it("kubectl logs -f receives a line written later, until it is killed", async () => {
    // The container exits (a second line) a while after it starts, and is restarted (the pod keeps running).
    await createPod(c, "later", ["app"], { [HOLLOW_ANNOTATIONS.exitAfterMs]: "4000" }, "Always");
    await waitRunning(c, "later");
    const f = startWatch("kubectl", ["logs", "-f", "later"], kc);
    try {
      await waitFor(() => f.output().includes("started (run 0)"), { ...WAIT, message: "the first line" });
      await waitFor(() => f.output().includes("hollow container app exited with code 0"), { ...WAIT, message: "the line written later" });
      assert.equal(f.child.exitCode, null, "still following");
    } finally {
      await f.stop();
    }
    const choreoFollow = startWatch(process.execPath, [CHOREO, "logs", "later", "-f"], kc);
    try {
      await waitFor(() => choreoFollow.output().includes("exited with code 0"), { ...WAIT, message: "choreo logs -f" }).catch((err: unknown) => {
        throw new Error(`${String(err)}; output: ${choreoFollow.output()}`);
      });
    } finally {
      await choreoFollow.stop();
    }
  });

  it("refuses a missing container and a two-container pod without -c", async () => {
    await createPod(c, "pair", ["a", "b"]);
    await waitRunning(c, "pair");
    const missing = await kubectl("logs", "pair", "-c", "nope");
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /container nope is not valid for pod pair/);
    const none = await choreo("logs", "pair");
    assert.equal(none.code, 1);
    assert.equal(none.stderr, "Error from server (BadRequest): a container name must be specified for pod pair, choose one of: [a b]\n");
    const named = await choreo("logs", "pair", "-c", "b");
    assert.equal(named.stdout, "hollow container b started (run 0)\n");
    // kubectl ≥ 1.21 picks the first container itself and says so.
    const k = await kubectl("logs", "pair");
    if (k.code === 0) assert.equal(k.stdout, "hollow container a started (run 0)\n");
    else assert.match(k.stderr, /a container name must be specified for pod pair/);
    const gone = await kubectl("logs", "nope");
    assert.match(gone.stderr, /pods "nope" not found/);
  });

  it("answers 400 for an unscheduled pod and 503 when the node has no agent", async () => {
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "nowhere", namespace: "default" },
        spec: { nodeName: "ghost-node", containers: [{ name: "app", image: "busybox" }] },
      }),
    );
    const r = await choreo("logs", "nowhere");
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\(ServiceUnavailable\): node agent for node ghost-node is not answering/);
    await c.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "unplaceable", namespace: "default" },
        spec: { nodeSelector: { disk: "none-such" }, containers: [{ name: "app", image: "busybox" }] },
      }),
    );
    const u = await choreo("logs", "unplaceable");
    assert.match(u.stderr, /\(BadRequest\): pod unplaceable does not have a host assigned/);
  });
});

describe("logs: a node-agent process", () => {
  let c: TestCluster;
  let kc: string;
  before(async () => {
    c = await startCluster({ actors: [{ name: "scheduler" }, { name: "node-agent", args: ["--hollow-nodes", "1", "--node-name-prefix", "proc-"] }] });
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("serves kubectl logs from its hollow nodes", async () => {
    await createPod(c, "web", ["app"]);
    await waitRunning(c, "web");
    const r = await waitFor(
      async () => {
        const x = await run("kubectl", ["logs", "web"], kc);
        return x.code === 0 ? x : undefined;
      },
      { timeoutMs: 10_000, message: "kubectl logs web" },
    );
    assert.equal(r.stdout, "hollow container app started (run 0)\n");
  });

  it("kubectl 1.20 logs -f ends when the node agent is killed (-9) mid-follow", async () => {
    await createPod(c, "followed", ["app"]);
    await waitRunning(c, "followed");
    const f = startWatch("/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl", ["logs", "-f", "followed"], kc);
    try {
      await waitFor(() => f.output().includes("hollow container app started (run 0)"), { ...WAIT, message: "the first line" });
      assert.equal(f.child.exitCode, null, "still following");
      // No goodbye from a killed agent: the api ends the response after its idle timeout (15 s).
      await c.actors.get("node-agent")?.kill();
      await waitFor(() => f.child.exitCode !== null, { timeoutMs: 60_000, message: "kubectl logs -f ended" });
      assert.equal(f.output(), "hollow container app started (run 0)\n");
    } finally {
      await f.stop();
    }
  });
});
