// test-tier: servers
// Three api replicas behind one address (HAProxy, kit startHaproxy: TCP
// passthrough, /readyz checked every 500 ms). kubectl and a keep-alive HTTPS
// client write ConfigMaps through HAProxy in loops, a hollow node agent and
// the scheduler run beside (they reach the api over NATS, where every replica
// answers in one queue group); then one replica is killed -9. The clients
// keep being answered: the only failures allowed are requests in flight on
// the killed replica's connections (counted and printed), no acknowledged
// write is lost, the nodes stay Ready and a pod created through HAProxy
// after the kill runs. The replica started again is marked UP and given
// connections.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { startHaproxy, waitFor, type HaproxyHandle } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run } from "./support/kubectl.js";

const KUBECTL = "/usr/bin/kubectl";
const KILLED = 1;

/** A kubeconfig whose server is HAProxy's address. */
function kubeconfigThrough(c: TestCluster, url: string): string {
  const ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt")).toString("base64");
  const file = path.join(c.dir, "kubeconfig-ha");
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: ha",
      `  cluster: {server: "${url}", certificate-authority-data: ${ca}}`,
      "users:",
      "- name: admin",
      `  user: {token: "${c.token}"}`,
      "contexts:",
      "- name: ha",
      "  context: {cluster: ha, user: admin, namespace: default}",
      "current-context: ha",
      "",
    ].join("\n"),
  );
  return file;
}

/** One write through HAProxy over a kept-alive connection: resolves with the status code, rejects when the connection dies. */
function createConfigMap(agent: https.Agent, port: number, ca: string, token: string, name: string): Promise<number> {
  const body = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { n: name } });
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/v1/namespaces/default/configmaps",
        method: "POST",
        agent,
        ca,
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
        timeout: 15_000,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(body);
  });
}

interface LoopResult {
  acknowledged: string[];
  failures: { at: number; why: string }[];
  /** When each answered request was sent and answered (ms since the epoch). */
  answered: { sent: number; at: number }[];
}

/** Runs `step(i)` until `stop()`; an exception or a non-2xx is a failure. */
async function loop(step: (i: number) => Promise<{ ok: boolean; name: string; why?: string }>, stop: () => boolean): Promise<LoopResult> {
  const out: LoopResult = { acknowledged: [], failures: [], answered: [] };
  for (let i = 0; !stop(); i++) {
    const sent = Date.now();
    try {
      const r = await step(i);
      if (r.ok) {
        out.acknowledged.push(r.name);
        out.answered.push({ sent, at: Date.now() });
      } else out.failures.push({ at: Date.now(), why: r.why ?? "refused" });
    } catch (err) {
      out.failures.push({ at: Date.now(), why: (err as Error).message });
    }
  }
  return out;
}

describe("api replicas behind HAProxy: kill -9 of one while clients write", () => {
  let c: TestCluster;
  let lb: HaproxyHandle;
  let kubeconfig: string;
  let ca: string;

  before(async () => {
    c = await startCluster({
      apis: 3,
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "2" } }, { name: "scheduler" }],
    });
    lb = await startHaproxy({
      listeners: [{ name: "https", servers: c.apis.map((a) => ({ name: `api-${a.index}`, port: a.httpsPort, healthPort: a.httpPort })) }],
      logFile: path.join(c.dir, "haproxy.log"),
    });
    for (const a of c.apis) await lb.waitFor("https", `api-${a.index}`, "UP");
    kubeconfig = kubeconfigThrough(c, `https://127.0.0.1:${lb.ports.https}`);
    ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt"), "utf8");
    await waitFor(async () => (await c.client.list("nodes")).items.length === 2, { timeoutMs: 60_000, message: "two hollow nodes" });
  });
  after(async () => {
    await lb?.stop();
    await c?.stop();
  });

  it("kubectl works through HAProxy (every replica given connections)", async () => {
    for (let i = 0; i < 6; i++) {
      const r = await run(KUBECTL, ["get", "nodes", "-o", "name"], kubeconfig);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /node\/hollow-/);
    }
    const stats = await lb.stats();
    for (const a of c.apis) assert.ok((stats[`https/api-${a.index}`]?.sessions ?? 0) > 0, `api-${a.index} given connections: ${JSON.stringify(stats)}`);
  });

  it("kill -9 of one replica: clients keep being answered, no acknowledged write lost, nodes stay Ready; back, it serves again", async () => {
    await withLogsOnFailure(c, async () => {
      let stopped = false;
      const port = lb.ports.https!;
      const agent = new https.Agent({ keepAlive: true, maxSockets: 3 });
      const kubectl = loop(
        async (i) => {
          const name = `kubectl-${i}`;
          const r = await run(KUBECTL, ["create", "configmap", name, `--from-literal=i=${i}`], kubeconfig);
          return { ok: r.code === 0, name, why: r.stderr.trim() };
        },
        () => stopped,
      );
      const clients = [0, 1, 2].map((w) =>
        loop(
          async (i) => {
            const name = `http-${w}-${i}`;
            const code = await createConfigMap(agent, port, ca, c.token, name);
            return { ok: code === 201, name, why: `status ${code}` };
          },
          () => stopped,
        ),
      );
      await new Promise((r) => setTimeout(r, 2_000));
      const killedAt = Date.now();
      await c.killApi(KILLED);
      await lb.waitFor("https", `api-${KILLED}`, "DOWN", 5_000);
      const markedDownMs = Date.now() - killedAt;
      await new Promise((r) => setTimeout(r, 3_000));
      stopped = true;
      const [k, ...h] = await Promise.all([kubectl, ...clients]);
      agent.destroy();

      const http = { acknowledged: h.flatMap((x) => x.acknowledged), failures: h.flatMap((x) => x.failures), answered: h.flatMap((x) => x.answered) };
      const firstAfter = (r: Pick<LoopResult, "answered">) => Math.min(...r.answered.filter((a) => a.sent >= killedAt).map((a) => a.at)) - killedAt;
      console.log(
        JSON.stringify({
          markedDownMs,
          kubectl: { acknowledged: k.acknowledged.length, failures: k.failures, answeredAgainMs: firstAfter(k) },
          http: {
            acknowledged: http.acknowledged.length,
            failures: http.failures.length,
            reasons: [...new Set(http.failures.map((f) => f.why))],
            answeredAgainMs: firstAfter(http),
          },
        }),
      );
      // Kept answering after the kill: requests sent after it were answered.
      assert.ok(
        k.answered.some((a) => a.sent > killedAt + 500),
        "kubectl answered after the kill",
      );
      assert.ok(
        http.answered.some((a) => a.sent > killedAt + 500),
        "the HTTPS client answered after the kill",
      );
      // Only requests in flight on the killed replica's connections may fail: one per kept-alive connection at most, once.
      assert.ok(k.failures.length <= 1, `kubectl failures: ${JSON.stringify(k.failures)}`);
      assert.ok(http.failures.length <= 3, `HTTPS client failures: ${JSON.stringify(http.failures)}`);
      for (const f of [...k.failures, ...http.failures]) assert.ok(f.at >= killedAt, `a failure before the kill: ${f.why}`);

      // No acknowledged write lost.
      const names = new Set(
        (await c.client.list("configmaps", { namespace: "default" })).items.map((o) => (unwrap(o) as { metadata: { name: string } }).metadata.name),
      );
      for (const n of [...k.acknowledged, ...http.acknowledged]) assert.ok(names.has(n), `acknowledged ${n} is there`);

      // The nodes stayed Ready; a pod created through HAProxy after the kill is bound and runs.
      for (const o of (await c.client.list("nodes")).items) {
        const ready = (unwrap(o) as Node).status?.conditions.find((x) => x.type === "Ready");
        assert.equal(ready?.status, "True", `${(unwrap(o) as Node).metadata?.name} Ready`);
      }
      const r = await run(KUBECTL, ["run", "after-kill", "--image=nginx", "--restart=Never"], kubeconfig);
      assert.equal(r.code, 0, r.stderr);
      await waitFor(async () => (await run(KUBECTL, ["get", "pod", "after-kill", "-o", "jsonpath={.status.phase}"], kubeconfig)).stdout === "Running", {
        timeoutMs: 30_000,
        message: "the pod created after the kill Running",
      });

      // Back: HAProxy marks it UP and gives it connections again.
      await c.startApi(KILLED);
      const upAt = Date.now();
      await lb.waitFor("https", `api-${KILLED}`, "UP", 10_000);
      const before = (await lb.stats())[`https/api-${KILLED}`]?.sessions ?? 0;
      for (let i = 0; i < 6; i++) assert.equal((await run(KUBECTL, ["get", "configmap", "kubectl-0", "-o", "name"], kubeconfig)).code, 0);
      const after = (await lb.stats())[`https/api-${KILLED}`]?.sessions ?? 0;
      console.log(JSON.stringify({ markedUpMs: Date.now() - upAt, sessionsToTheReturnedReplica: after - before }));
      assert.ok(after > before, "the replica back is given connections");
    });
  });
});
