// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isNotFound, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { NodeAgent } from "./agent.js";
import { hollowNodeConfig } from "./hollow-nodes.js";
import { HOLLOW_ANNOTATIONS, HollowRuntime } from "./runtime/hollow.js";

const WAIT = { timeoutMs: 20_000 };

function podJson(name: string, opts: { node?: string; restartPolicy?: string } = {}): Parameters<typeof fromKubeJson>[0] {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { ...(opts.node ? { nodeName: opts.node } : {}), restartPolicy: opts.restartPolicy ?? "Always", containers: [{ name: "app", image: "nginx" }] },
  };
}

describe("node agent against the api", () => {
  let s: Stack;
  const running: { agent: NodeAgent; runtime: HollowRuntime; ac: AbortController; done: Promise<void> }[] = [];
  const startAgent = (index: number): { agent: NodeAgent; runtime: HollowRuntime; ac: AbortController; done: Promise<void> } => {
    const node = hollowNodeConfig(index, "node-");
    const runtime = new HollowRuntime({ podCidr: node.podCidr, hostIp: node.internalIp, startDelayMs: 20 });
    const agent = new NodeAgent({
      client: s.client,
      nc: s.nc,
      jsm: s.jsm,
      log: silentLogger(),
      node,
      runtime,
      leaseRenewMs: 200,
      restartBackoff: { initialMs: 200, maxMs: 1_000 },
    });
    const ac = new AbortController();
    const done = agent.start(ac.signal);
    const r = { agent, runtime, ac, done };
    running.push(r);
    return r;
  };
  const getPod = async (name: string): Promise<Pod> => unwrap(await s.client.get("pods", "default", name)) as Pod;
  let a: ReturnType<typeof startAgent>;

  before(async () => {
    s = await startStack();
    a = startAgent(0);
    startAgent(1);
  });
  after(async () => {
    for (const r of running) r.ac.abort();
    await Promise.all(running.map((r) => r.done.catch(() => undefined)));
    await s?.stop();
  });

  it("registers its Node and renews a Lease in kube-node-lease", async () => {
    const node = await waitFor(async () => unwrap(await s.client.get("nodes", "", "node-0")) as Node, WAIT);
    assert.equal(node.metadata?.labels["kubernetes.io/hostname"], "node-0");
    assert.equal(node.metadata?.labels["kubernetes.io/os"], "linux");
    assert.equal(node.spec?.podCidr, "10.128.0.0/24");
    assert.equal(node.status?.capacity["cpu"], "4");
    assert.equal(node.status?.allocatable["pods"], "110");
    assert.equal(node.status?.conditions.find((c) => c.type === "Ready")?.status, "True");
    assert.equal(node.status?.addresses.find((x) => x.type === "InternalIP")?.address, "172.16.0.1");
    const first = await waitFor(async () => unwrap(await s.client.get("leases", "kube-node-lease", "node-0")) as Lease, WAIT);
    assert.equal(first.spec?.holderIdentity, "node-0");
    await waitFor(
      async () => {
        const l = unwrap(await s.client.get("leases", "kube-node-lease", "node-0")) as Lease;
        return l.spec?.renewTime !== first.spec?.renewTime;
      },
      { ...WAIT, message: "lease renewed" },
    );
  });

  it("runs a pod created bound to it: Running, Ready, a pod IP from its CIDR", async () => {
    await s.client.create(fromKubeJson(podJson("web-1", { node: "node-0" })));
    const p = await waitFor(
      async () => {
        const pod = await getPod("web-1");
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      { ...WAIT, message: "web-1 Running" },
    );
    assert.match(p.status?.podIp ?? "", /^10\.128\.0\.\d+$/);
    assert.deepEqual(p.status?.podIps, [{ ip: p.status?.podIp }]);
    assert.equal(p.status?.hostIp, "172.16.0.1");
    assert.ok(p.status?.startTime);
    for (const t of ["PodScheduled", "Initialized", "ContainersReady", "Ready"]) {
      assert.equal(p.status?.conditions.find((c) => c.type === t)?.status, "True", t);
    }
    const cs = p.status?.containerStatuses[0];
    assert.equal(cs?.ready, true);
    assert.ok(cs?.state?.running?.startedAt);
    assert.ok(!running[1]!.agent.informer.get("default/web-1"), "the other node's agent never sees it");
  });

  it("caches its pods without managedFields, and the api keeps a pod's own through the agent's status writes", async () => {
    const json = podJson("managed-1", { node: "node-0" }) as { metadata: Record<string, unknown> };
    json.metadata["managedFields"] = [
      {
        manager: "kubectl-client-side-apply",
        operation: "Update",
        apiVersion: "v1",
        time: "2026-11-27T10:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:spec": { "f:containers": { 'k:{"name":"app"}': { ".": {}, "f:image": {}, "f:name": {} } } } },
      },
    ];
    await s.client.create(fromKubeJson(json as Parameters<typeof fromKubeJson>[0]));
    const stored = await waitFor(
      async () => {
        const pod = await getPod("managed-1");
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      { ...WAIT, message: "managed-1 Running" },
    );
    assert.deepEqual(
      stored.metadata?.managedFields.map((m) => m.manager),
      ["kubectl-client-side-apply"],
      "the stored pod keeps its managedFields after the agent's status write",
    );
    const cached = await waitFor(() => {
      const p = a.agent.informer.get("default/managed-1");
      return p?.status?.phase === "Running" ? p : undefined;
    });
    assert.equal(cached.metadata?.managedFields.length, 0);
    assert.equal(cached.spec?.containers[0]?.image, "nginx");
  });

  it("runs a pod bound after creation, and stops and confirms a deleted pod", async () => {
    await s.client.create(fromKubeJson(podJson("web-2")));
    await s.client.bind("default", "web-2", "node-1");
    const p = await waitFor(
      async () => {
        const pod = await getPod("web-2");
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      { ...WAIT, message: "web-2 Running" },
    );
    assert.match(p.status?.podIp ?? "", /^10\.128\.1\.\d+$/);
    const uid = p.metadata!.uid;
    const terminating = unwrap(await s.client.delete("pods", "default", "web-2")) as Pod;
    assert.ok(terminating.metadata?.deletionTimestamp, "graceful: the api waits for the agent");
    await waitFor(
      async () => {
        try {
          await getPod("web-2");
          return false;
        } catch (err) {
          return isNotFound(err);
        }
      },
      { ...WAIT, message: "web-2 gone" },
    );
    assert.equal(running[1]!.runtime.has(uid), false, "stopped in the runtime");
  });

  it("a deleted pod a Service's endpoints still name keeps running until they drop it, then stops", async () => {
    const b = running[1]!;
    const named = new Set<string>();
    b.agent.endpointsListing = (ip) => named.has(ip);
    try {
      await s.client.create(fromKubeJson(podJson("web-3", { node: "node-1" })));
      const p = await waitFor(
        async () => {
          const pod = await getPod("web-3");
          return pod.status?.phase === "Running" ? pod : undefined;
        },
        { ...WAIT, message: "web-3 Running" },
      );
      const uid = p.metadata!.uid;
      named.add(p.status!.podIp);
      await s.client.delete("pods", "default", "web-3");
      await new Promise((r) => setTimeout(r, 1_500));
      assert.equal(b.runtime.has(uid), true, "still running while an Endpoints names it");
      assert.equal((await getPod("web-3")).metadata?.uid, uid, "its deletion not confirmed yet");
      named.delete(p.status!.podIp);
      await waitFor(
        async () => {
          try {
            await getPod("web-3");
            return false;
          } catch (err) {
            return isNotFound(err);
          }
        },
        { ...WAIT, message: "web-3 gone once out of the endpoints" },
      );
      assert.equal(b.runtime.has(uid), false, "stopped in the runtime");
    } finally {
      b.agent.endpointsListing = undefined;
    }
  });

  it("a failing Never pod → Failed; a crashing Always pod restarts with restartCount 1", async () => {
    const never = unwrap(await s.client.create(fromKubeJson(podJson("once", { node: "node-0", restartPolicy: "Never" })))) as Pod;
    const always = unwrap(await s.client.create(fromKubeJson(podJson("again", { node: "node-0" })))) as Pod;
    // Running, not only known: the hollow runtime's crash() ends running containers only (one still starting, under load,
    // came up after it and never crashed).
    const runningIn = (uid: string): boolean => !!a.runtime.podStatus(uid)?.containerStatuses[0]?.state?.running;
    await waitFor(() => runningIn(never.metadata!.uid) && runningIn(always.metadata!.uid), { ...WAIT, message: "both running" });
    a.runtime.fail(never.metadata!.uid);
    a.runtime.crash(always.metadata!.uid);
    const failed = await waitFor(
      async () => {
        const pod = await getPod("once");
        return pod.status?.phase === "Failed" ? pod : undefined;
      },
      { ...WAIT, message: "once Failed" },
    );
    assert.equal(failed.status?.containerStatuses[0]?.state?.terminated?.exitCode, 1);
    assert.equal(failed.status?.conditions.find((c) => c.type === "Ready")?.status, "False");
    const restarted = await waitFor(
      async () => {
        const pod = await getPod("again");
        const cs = pod.status?.containerStatuses[0];
        return cs?.restartCount === 1 && cs.state?.running && cs.ready ? pod : undefined;
      },
      { ...WAIT, message: "again restarted" },
    );
    assert.equal(restarted.status?.phase, "Running");
    assert.equal(restarted.status?.containerStatuses[0]?.lastState?.terminated?.exitCode, 1);
  });

  it("turns a pod unready and ready again", async () => {
    const p = await getPod("web-1");
    a.runtime.setReady(p.metadata!.uid, false);
    await waitFor(async () => (await getPod("web-1")).status?.conditions.find((c) => c.type === "Ready")?.status === "False", { ...WAIT, message: "unready" });
    a.runtime.setReady(p.metadata!.uid, true);
    await waitFor(async () => (await getPod("web-1")).status?.conditions.find((c) => c.type === "Ready")?.status === "True", { ...WAIT, message: "ready" });
  });

  it("hollow init containers run in order before the app; a failing one fails a Never pod, which never starts its app", async () => {
    const initPod = (name: string, policy: string, annotations: Record<string, string> = {}) =>
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: "default", annotations },
        spec: {
          nodeName: "node-1",
          restartPolicy: policy,
          initContainers: [
            { name: "one", image: "busybox" },
            { name: "two", image: "busybox" },
          ],
          containers: [{ name: "app", image: "nginx" }],
        },
      });
    await s.client.create(initPod("inits", "Always"));
    const p = await waitFor(
      async () => {
        const pod = await getPod("inits");
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      { ...WAIT, message: "inits Running" },
    );
    assert.deepEqual(
      p.status?.initContainerStatuses.map((c) => [c.name, c.state?.terminated?.reason, c.ready]),
      [
        ["one", "Completed", true],
        ["two", "Completed", true],
      ],
    );
    const [one, two] = p.status!.initContainerStatuses.map((c) => c.state!.terminated!);
    assert.ok(one!.finishedAt <= two!.startedAt, "the second started after the first finished");
    assert.ok(two!.finishedAt <= p.status!.containerStatuses[0]!.state!.running!.startedAt, "the app started after the init containers");
    assert.equal(p.status?.conditions.find((c) => c.type === "Initialized")?.status, "True");

    await s.client.create(initPod("doomed", "Never", { [HOLLOW_ANNOTATIONS.initExitCode]: "2" }));
    const failed = await waitFor(
      async () => {
        const pod = await getPod("doomed");
        return pod.status?.phase === "Failed" ? pod : undefined;
      },
      { ...WAIT, message: "doomed Failed" },
    );
    assert.equal(failed.status?.initContainerStatuses[0]?.state?.terminated?.exitCode, 2);
    assert.equal(failed.status?.initContainerStatuses[1]?.state?.waiting?.reason, "PodInitializing");
    assert.equal(failed.status?.containerStatuses[0]?.state?.waiting?.reason, "PodInitializing", "the app never started");
    assert.equal(failed.status?.conditions.find((c) => c.type === "Initialized")?.reason, "ContainersNotInitialized");
  });

  it("after an agent restart, adopts its running pods instead of restarting them", async () => {
    const before = await getPod("web-1");
    a.ac.abort();
    await a.done;
    a = startAgent(0); // a fresh, empty hollow runtime
    const uid = before.metadata!.uid;
    await waitFor(() => a.runtime.podStatus(uid), { ...WAIT, message: "adopted" });
    await waitFor(
      () => {
        const q = a.agent.controller.queue.stats();
        return q.depth === 0 && q.inFlight === 0 && a.agent.informer.hasSynced();
      },
      { ...WAIT, message: "settled" },
    );
    const now = await getPod("web-1");
    assert.equal(now.status?.podIp, before.status?.podIp);
    assert.equal(now.status?.containerStatuses[0]?.restartCount, 0);
    assert.equal(now.status?.containerStatuses[0]?.state?.running?.startedAt, before.status?.containerStatuses[0]?.state?.running?.startedAt);
    assert.equal(now.metadata?.resourceVersion, before.metadata?.resourceVersion, "no status write: nothing changed");
    // and it still runs new pods, on an IP other than the adopted one
    await s.client.create(fromKubeJson(podJson("web-3", { node: "node-0" })));
    const p3 = await waitFor(
      async () => {
        const pod = await getPod("web-3");
        return pod.status?.phase === "Running" ? pod : undefined;
      },
      { ...WAIT, message: "web-3 Running" },
    );
    assert.notEqual(p3.status?.podIp, before.status?.podIp);
  });
});
