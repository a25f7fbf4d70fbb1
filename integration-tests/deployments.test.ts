// test-tier: servers
// Deployments on a real control plane (api, scheduler, replication, hollow
// nodes) driven by real kubectl: create → 3 pods; set image → a new
// ReplicaSet, the old one scaled to 0, within maxSurge/maxUnavailable at
// every moment the event log shows; rollout status, history (change-cause),
// undo (revision 3); a rollout whose pods never become ready stops with
// ProgressDeadlineExceeded while the old pods keep running; kill -9 of the
// replication actor mid-rollout resumes without overshooting; kill -9 of the
// api, of redis-server and of nats-server mid-rollout: each rollout finishes
// and no node is taken for failed; kubectl delete
// takes the ReplicaSets and pods with it. Then real pods (process runtime)
// behind a Service: a rollout while a client loops through it loses no
// request.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Informer } from "@choreo/kit/informer";
import { waitFor } from "@choreo/kit/testing";
import { podInformer, startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";
import { startRealCluster, type RealCluster } from "./support/real-cluster.js";

const isReady = (p: Pod): boolean => p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;
const isLive = (p: Pod): boolean => !p.metadata?.deletionTimestamp && p.status?.phase !== "Failed" && p.status?.phase !== "Succeeded";

/** Follows the pods labelled app=<app> through the event log: every intermediate state is seen. */
class PodWatch {
  readonly pods = new Map<string, Pod>();
  maxLive = 0;
  minReady = Number.POSITIVE_INFINITY;
  sampling = false;
  private see(p: Pod, gone = false): void {
    const name = p.metadata?.name ?? "";
    if (gone || !isLive(p)) this.pods.delete(name);
    else this.pods.set(name, p);
    if (!this.sampling) return;
    const live = [...this.pods.values()];
    this.maxLive = Math.max(this.maxLive, live.length);
    this.minReady = Math.min(this.minReady, live.filter(isReady).length);
  }
  constructor(informer: Informer<"pod">, app: string) {
    const mine = (p: Pod): boolean => p.metadata?.labels["app"] === app;
    informer.addEventHandler({
      onAdd: (p) => mine(p) && this.see(p),
      onUpdate: (_o, n) => mine(n) && this.see(n),
      onDelete: (p) => mine(p) && this.see(p, true),
    });
  }
  images(): string[] {
    return [...this.pods.values()].map((p) => p.spec?.containers[0]?.image ?? "").sort();
  }
  ready(): number {
    return [...this.pods.values()].filter(isReady).length;
  }
  start(): void {
    this.maxLive = this.pods.size;
    this.minReady = this.ready();
    this.sampling = true;
  }
}

function manifest(
  name: string,
  o: { replicas: number; image: string; cause?: string; surge?: string | number; unavailable?: string | number; deadline?: number },
): string {
  return JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "default", ...(o.cause ? { annotations: { "kubernetes.io/change-cause": o.cause } } : {}) },
    spec: {
      replicas: o.replicas,
      selector: { matchLabels: { app: name } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: o.surge ?? "25%", maxUnavailable: o.unavailable ?? "25%" } },
      ...(o.deadline ? { progressDeadlineSeconds: o.deadline } : {}),
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "app", image: o.image }] } },
    },
  });
}

describe("deployments", () => {
  let c: TestCluster;
  let kubeconfig: string;
  let informer: Informer<"pod">;
  const ac = new AbortController();
  const kubectl = async (...args: string[]) => {
    const r = await run("kubectl", args, kubeconfig);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const apply = (json: string) => run("kubectl", ["apply", "-f", "-"], kubeconfig, { input: json });
  const deployment = async (name: string) => unwrap(await c.client.get("deployments", "default", name)) as Deployment;
  const replicaSets = async (app: string) =>
    (await c.client.list("replicasets", { namespace: "default", labelSelector: `app=${app}` })).items.map((o) => unwrap(o) as ReplicaSet);

  before(async () => {
    c = await startCluster({
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "3", CHOREO_NODE_PODS: "110" } }, { name: "scheduler" }, { name: "replication" }],
    });
    kubeconfig = writeKubeconfig(c);
    await waitFor(async () => (await c.client.list("nodes")).items.length === 3, { timeoutMs: 30_000, message: "3 hollow nodes" });
    informer = await podInformer(c);
    void informer.start(ac.signal).catch(() => undefined);
    await informer.waitForSync();
  });
  after(async () => {
    ac.abort();
    await c?.stop();
  });

  it("set image rolls within maxSurge/maxUnavailable; rollout status, history with change-cause, undo to revision 3", async () => {
    const watch = new PodWatch(informer, "web");
    const created = await apply(manifest("web", { replicas: 3, image: "nginx:1", cause: "v1", unavailable: 0 }));
    assert.equal(created.code, 0, created.stderr);
    await waitFor(() => watch.ready() === 3, { timeoutMs: 60_000, message: "3 ready pods" });
    assert.equal((await replicaSets("web")).length, 1);
    await kubectl("rollout", "status", "deployment/web", "--timeout=60s");

    // maxSurge 25% of 3 → 1; maxUnavailable 0: never more than 4 pods, never fewer than 3 ready.
    watch.start();
    await kubectl("set", "image", "deployment/web", "app=nginx:2");
    await kubectl("annotate", "deployment/web", "kubernetes.io/change-cause=v2", "--overwrite");
    const status = await kubectl("rollout", "status", "deployment/web", "--timeout=90s");
    assert.match(status, /successfully rolled out/);
    await waitFor(() => watch.images().join() === "nginx:2,nginx:2,nginx:2", { timeoutMs: 30_000, message: "3 pods of nginx:2" });
    assert.ok(watch.maxLive <= 4, `never more than replicas + maxSurge = 4 pods (saw ${watch.maxLive})`);
    assert.ok(watch.minReady >= 3, `never fewer than replicas − maxUnavailable = 3 ready (saw ${watch.minReady})`);

    const rss = await replicaSets("web");
    assert.equal(rss.length, 2);
    const byImage = new Map(rss.map((rs) => [rs.spec?.template?.spec?.containers[0]?.image ?? "", rs]));
    assert.equal(byImage.get("nginx:1")?.spec?.replicas, 0);
    assert.equal(byImage.get("nginx:2")?.spec?.replicas, 3);
    for (const rs of rss) {
      const hash = rs.metadata?.labels["pod-template-hash"] ?? "";
      assert.ok(hash && rs.metadata?.name === `web-${hash}`, `name <deployment>-<hash>: ${rs.metadata?.name}`);
      assert.equal(rs.spec?.selector?.matchLabels["pod-template-hash"], hash);
    }
    await waitFor(async () => (await deployment("web")).metadata?.annotations["deployment.kubernetes.io/revision"] === "2", {
      timeoutMs: 10_000,
      message: "revision 2",
    });
    await waitFor(async () => /2\s+v2/.test(await kubectl("rollout", "history", "deployment/web")), { timeoutMs: 20_000, message: "history shows v2" });
    const history = await kubectl("rollout", "history", "deployment/web");
    assert.match(history, /1\s+v1/);
    assert.match(history, /2\s+v2/);
    const described = await kubectl("describe", "deployment/web");
    assert.match(described, /ScalingReplicaSet\s+.*Scaled up replica set web-\w+ from 0 to 1/);
    assert.match(described, /NewReplicaSet:\s+web-\w+ \(3\/3 replicas created\)/);

    await kubectl("rollout", "undo", "deployment/web");
    await kubectl("rollout", "status", "deployment/web", "--timeout=90s");
    await waitFor(() => watch.images().join() === "nginx:1,nginx:1,nginx:1", { timeoutMs: 30_000, message: "back to nginx:1" });
    const d = await deployment("web");
    assert.equal(d.metadata?.annotations["deployment.kubernetes.io/revision"], "3");
    assert.equal((await replicaSets("web")).length, 2, "undo reuses the first ReplicaSet");
    assert.match(await kubectl("rollout", "history", "deployment/web"), /3\s+v1/);
    assert.ok(watch.maxLive <= 4 && watch.minReady >= 3, `undo within the bounds too (max ${watch.maxLive}, min ready ${watch.minReady})`);
  });

  it("kubectl create deployment, scale, rollout pause/resume, restart, undo --to-revision, get", async () => {
    const watch = new PodWatch(informer, "app");
    await kubectl("create", "deployment", "app", "--image=nginx:1", "--replicas=2");
    await kubectl("rollout", "status", "deployment/app", "--timeout=60s");
    await kubectl("scale", "deployment/app", "--replicas=4");
    await waitFor(() => watch.ready() === 4, { timeoutMs: 60_000, message: "scaled to 4" });

    await kubectl("rollout", "pause", "deployment/app");
    await kubectl("set", "image", "deployment/app", "nginx=nginx:2");
    await waitFor(
      async () => {
        const d = await deployment("app");
        const p = d.status?.conditions.find((x) => x.type === "Progressing");
        return d.status?.observedGeneration === d.metadata?.generation && p?.reason === "DeploymentPaused";
      },
      { timeoutMs: 30_000, message: "paused and observed" },
    );
    assert.equal((await replicaSets("app")).length, 1, "a paused Deployment starts no rollout");
    assert.deepEqual(watch.images(), ["nginx:1", "nginx:1", "nginx:1", "nginx:1"]);

    await kubectl("rollout", "resume", "deployment/app");
    await kubectl("rollout", "status", "deployment/app", "--timeout=90s");
    await waitFor(() => watch.images().join() === "nginx:2,nginx:2,nginx:2,nginx:2", { timeoutMs: 30_000, message: "resumed to nginx:2" });

    await kubectl("rollout", "restart", "deployment/app");
    await kubectl("rollout", "status", "deployment/app", "--timeout=90s");
    await waitFor(() => [...watch.pods.values()].filter((p) => p.metadata?.annotations["kubectl.kubernetes.io/restartedAt"]).length === 4, {
      timeoutMs: 30_000,
      message: "restarted pods",
    });
    assert.equal((await replicaSets("app")).length, 3);

    await kubectl("rollout", "undo", "deployment/app", "--to-revision=1");
    await kubectl("rollout", "status", "deployment/app", "--timeout=90s");
    await waitFor(() => watch.images().join() === "nginx:1,nginx:1,nginx:1,nginx:1", { timeoutMs: 30_000, message: "back to revision 1" });
    assert.equal((await deployment("app")).metadata?.annotations["deployment.kubernetes.io/revision"], "4");
    assert.match(await kubectl("get", "deployment", "app"), /app\s+4\/4\s+4\s+4/);
    const described = await kubectl("describe", "deployment/app");
    assert.match(described, /OldReplicaSets:\s+app-\w+ \(0\/0 replicas created\)/);
  });

  it("pods that never become ready: Progressing False ProgressDeadlineExceeded, the old pods keep running", async () => {
    const watch = new PodWatch(informer, "stuck");
    assert.equal((await apply(manifest("stuck", { replicas: 2, image: "nginx:1", deadline: 10, unavailable: 0 }))).code, 0);
    await kubectl("rollout", "status", "deployment/stuck", "--timeout=60s");
    // Hollow containers start unready with this annotation: the new pod never becomes available.
    await kubectl("patch", "deployment/stuck", "--type=merge", "-p", '{"spec":{"template":{"metadata":{"annotations":{"hollow.choreo.dev/ready":"false"}}}}}');
    const r = await run("kubectl", ["rollout", "status", "deployment/stuck", "--timeout=60s"], kubeconfig);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /exceeded its progress deadline/);
    const cond = (await deployment("stuck")).status?.conditions.find((x) => x.type === "Progressing");
    assert.deepEqual([cond?.status, cond?.reason], ["False", "ProgressDeadlineExceeded"]);
    const old = [...watch.pods.values()].filter((p) => !p.metadata?.annotations["hollow.choreo.dev/ready"]);
    assert.equal(old.filter(isReady).length, 2, "both old pods still running and ready");
  });

  it("kill -9 of the api, of redis-server and of nats-server mid-rollout: each rollout finishes once the fault clears, and no node is taken for failed", async () => {
    const name = "faults";
    const podsOf = async (): Promise<Pod[]> =>
      (await c.client.list("pods", { namespace: "default", labelSelector: `app=${name}` })).items.map((o) => unwrap(o) as Pod).filter(isLive);
    const complete = async (image: string): Promise<boolean> => {
      const d = await deployment(name);
      const st = d.status;
      const pods = await podsOf();
      return (
        (st?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
        st?.updatedReplicas === 10 &&
        st.availableReplicas === 10 &&
        st.replicas === 10 &&
        pods.length === 10 &&
        pods.every((p) => p.spec?.containers[0]?.image === image)
      );
    };
    assert.equal((await apply(manifest(name, { replicas: 10, image: "nginx:1", surge: 2, unavailable: 0 }))).code, 0);
    await waitFor(() => complete("nginx:1"), { timeoutMs: 90_000, intervalMs: 200, message: "10 pods of nginx:1" });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const faults: [string, () => Promise<void>][] = [
      ["api", async () => (await c.killApi(0), await sleep(1_000), await c.startApi(0))],
      ["redis-server", async () => (await c.redis.kill(), await sleep(3_000), await c.redis.restart())],
      ["nats-server", async () => (await c.nats.kill(), await sleep(3_000), await c.nats.restart())],
    ];
    for (const [i, [what, fault]] of faults.entries()) {
      const image = `nginx:${i + 2}`;
      await kubectl("set", "image", `deployment/${name}`, `app=${image}`);
      await waitFor(async () => (await podsOf()).some((p) => p.spec?.containers[0]?.image === image), {
        timeoutMs: 30_000,
        intervalMs: 20,
        message: `the rollout to ${image} under way`,
      });
      await fault();
      const cleared = Date.now();
      await waitFor(() => complete(image), { timeoutMs: 120_000, intervalMs: 200, message: `the rollout to ${image} finished after the ${what} fault` });
      console.log(`deployment faults: kill -9 of ${what} mid-rollout → complete ${Date.now() - cleared} ms after it was back`);
    }
    // A control-plane outage is not a node failure: no node marked NotReady, no pod evicted.
    const reasons = (await c.client.list("events")).items.map((o) => (unwrap(o) as { reason?: string }).reason);
    assert.ok(!reasons.includes("TaintManagerEviction"), "no pod evicted");
    assert.ok(!reasons.includes("NodeNotReady"), "no node taken for failed");
    const nodes = (await c.client.list("nodes")).items.map((o) => unwrap(o) as Node);
    assert.ok(
      nodes.every((n) => !n.spec?.taints.some((t) => t.key === "node.kubernetes.io/unreachable")),
      "no node tainted unreachable",
    );
    assert.ok(
      nodes.every((n) => n.status?.conditions.find((x) => x.type === "Ready")?.status === "True"),
      "every node Ready",
    );
    await kubectl("delete", `deployment/${name}`);
  });

  it("kill -9 of the replication actor mid-rollout: it resumes and finishes, never more than replicas + maxSurge pods", async () => {
    const watch = new PodWatch(informer, "big");
    assert.equal((await apply(manifest("big", { replicas: 20, image: "nginx:1" }))).code, 0);
    await kubectl("rollout", "status", "deployment/big", "--timeout=90s");
    watch.start();
    await kubectl("set", "image", "deployment/big", "app=nginx:2");
    await waitFor(() => watch.images().filter((i) => i === "nginx:2").length >= 3, { timeoutMs: 30_000, intervalMs: 5, message: "rollout under way" });
    await c.actors.get("replication")?.kill();
    const atKill = watch.images().filter((i) => i === "nginx:2").length;
    await c.startActor("replication");
    await kubectl("rollout", "status", "deployment/big", "--timeout=120s");
    await waitFor(() => watch.images().every((i) => i === "nginx:2") && watch.pods.size === 20, { timeoutMs: 30_000, message: "20 pods of nginx:2" });
    console.log(`deployment crash: killed with ${atKill}/20 updated; max pods ${watch.maxLive}, min ready ${watch.minReady}`);
    // maxSurge 25% of 20 → 5, maxUnavailable 25% → 5.
    assert.ok(watch.maxLive <= 25, `never more than 25 pods (saw ${watch.maxLive})`);
    assert.ok(watch.minReady >= 15, `never fewer than 15 ready (saw ${watch.minReady})`);

    // kubectl delete: the garbage collector takes the ReplicaSets, then their pods.
    await kubectl("delete", "deployment/big");
    await waitFor(async () => (await replicaSets("big")).length === 0 && watch.pods.size === 0, { timeoutMs: 60_000, message: "ReplicaSets and pods gone" });
  });
});

/** A Deployment of HTTP pods answering "<VERSION> <pod name>", ready when serving, draining 2 s on SIGTERM; and its Service. */
const realWeb = (version: string): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: web
        image: local/busybox:1.35
        command: ["sh", "-c"]
        args:
        - |
          echo "$VERSION $POD_NAME" > /www/index.html
          httpd -f -p 8080 -h /www &
          pid=$!
          trap 'sleep 2; kill $pid; exit 0' TERM
          wait $pid
        env:
        - {name: VERSION, value: ${version}}
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports:
        - {name: http, containerPort: 8080}
        readinessProbe:
          httpGet: {path: /index.html, port: http}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
`;

describe("deployments on real pods (process runtime)", () => {
  let c: RealCluster;
  const kubectl = async (...args: string[]) => {
    const r = await run("kubectl", args, c.kubeconfig);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const get = async (url: string): Promise<string | undefined> => {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      return r.ok ? (await r.text()).trim() : undefined;
    } catch {
      return undefined;
    }
  };
  before(async () => {
    c = await startRealCluster("process");
  });
  after(async () => {
    if (!c) return;
    await c.stop();
    assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
  });

  it("a rollout (kubectl set env: one local image) while a client loops through the Service: no request fails", () =>
    withLogsOnFailure(c, async () => {
      await kubectl("apply", "-f", c.manifest("web.yaml", realWeb("v1")));
      await kubectl("rollout", "status", "deployment/web", "--timeout=120s");
      const vip = await kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}");
      await waitFor(
        async () => (await kubectl("get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean).length === 3,
        { timeoutMs: 60_000, message: "3 ready endpoints" },
      );
      let stop = false;
      let ok = 0;
      const failures: string[] = [];
      const versions = new Set<string>();
      const client = (async () => {
        while (!stop) {
          const body = await get(`http://${vip}:80/`);
          if (body) {
            ok++;
            versions.add(body.split(" ")[0] ?? "");
          } else failures.push(new Date().toISOString());
        }
      })();
      await kubectl("set", "env", "deployment/web", "VERSION=v2");
      await kubectl("rollout", "status", "deployment/web", "--timeout=180s");
      // The last old pods drain for 2 s after SIGTERM.
      await waitFor(async () => (await get(`http://${vip}:80/`))?.startsWith("v2") === true && versions.has("v2"), {
        timeoutMs: 30_000,
        message: "v2 answers",
      });
      await new Promise((r) => setTimeout(r, 3_000));
      stop = true;
      await client;
      assert.deepEqual(failures, [], `no failed requests (${ok} answered)`);
      assert.ok(ok > 50, `the client kept sending (${ok} answered)`);
      assert.deepEqual([...versions].sort(), ["v1", "v2"]);
    }));
});
