// What authorization and auditing cost the HTTP gateway: pod creates and
// gets per second as the administrator (system:masters: RBAC is never
// consulted) and as a user whose right comes from one of 1,000
// RoleBindings (RBAC decides every request), with the audit log off and
// on (the default policy: Metadata for every request). Prints its figures.
//   npm run bench:api-auth [-- --ops 3000 --concurrency 64 --bindings 1000]
import { appendFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { parseArgs } from "node:util";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startCluster, type TestCluster } from "@choreo/integration-tests/support/cluster";
import { cpuMs } from "./proc-cpu.js";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "3000" },
    concurrency: { type: "string", default: "64" },
    bindings: { type: "string", default: "1000" },
  },
});
const OPS = Number(values.ops);
const CONC = Number(values.concurrency);
const BINDINGS = Number(values.bindings);
const USER_TOKEN = "bench-user-token-0123456789";

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

function request(agent: http.Agent, base: string, token: string, method: string, p: string, body?: unknown): Promise<number> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(p, base),
      {
        method,
        agent,
        headers: { Authorization: `Bearer ${token}`, ...(payload ? { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload) } : {}) },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

async function loop(n: number, op: (i: number) => Promise<void>): Promise<{ rate: number; p50: number; p99: number }> {
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      for (let i = next++; i < n; i = next++) {
        const s = performance.now();
        await op(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { rate: n / ((performance.now() - t0) / 1000), p50: pct(lat, 50), p99: pct(lat, 99) };
}

/** 1,000 RoleBindings of other users and groups in 50 namespaces, and the one that lets the bench user edit `default`. */
async function bindings(c: TestCluster): Promise<void> {
  for (let ns = 0; ns < 50; ns++) await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name: `team-${ns}` } }));
  let made = 0;
  const work = Array.from({ length: BINDINGS - 1 }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = work.shift(); i !== undefined; i = work.shift()) {
        await c.client.create(
          fromKubeJson({
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            metadata: { name: `b-${i}`, namespace: i % 5 === 0 ? "default" : `team-${i % 50}` },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: i % 2 ? "view" : "edit" },
            subjects: [{ kind: i % 3 ? "User" : "Group", apiGroup: "rbac.authorization.k8s.io", name: `someone-${i}` }],
          }),
        );
        made++;
      }
    }),
  );
  // A Role of its own (edit is aggregated by the replication actor, which this cluster does not run).
  await c.client.create(
    fromKubeJson({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "bench-pods", namespace: "default" },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["create", "get", "list"] }],
    }),
  );
  await c.client.create(
    fromKubeJson({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "bench-edit", namespace: "default" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "bench-pods" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "bench" }],
    }),
  );
  console.log(`  ${made + 1} RoleBindings`);
}

async function run(audit: boolean): Promise<void> {
  const c = await startCluster({ apis: 1, env: { CHOREO_LOG_LEVEL: "error", ...(audit ? {} : { CHOREO_AUDIT_LOG: "" }) } });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONC });
  try {
    // The api re-reads its token file when it changes.
    appendFileSync(path.join(c.dir, "api", "tokens"), `${USER_TOKEN},bench,bench-uid,\n`);
    await bindings(c);
    const PODS = "/api/v1/namespaces/default/pods";
    const pod = (name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app: "bench" } },
      spec: { containers: [{ name: "c", image: "nginx:1.25" }] },
    });
    for (let tries = 0; (await request(agent, c.httpUrl, USER_TOKEN, "GET", PODS)) !== 200; tries++) {
      if (tries > 100) throw new Error("the bench user is never allowed to list pods");
      await new Promise((r) => setTimeout(r, 100));
    }
    // Alternate who goes first, twice, so neither gets the warm half.
    for (const [round, who] of [
      ["a", "admin"],
      ["a", "user"],
      ["b", "user"],
      ["b", "admin"],
    ] as const) {
      const token = who === "admin" ? c.token : USER_TOKEN;
      const tag = `${round}-${who}`;
      const pid = c.apis[0]!.process.pid;
      const cpu0 = cpuMs(pid);
      const create = await loop(OPS, async (i) => {
        const code = await request(agent, c.httpUrl, token, "POST", PODS, pod(`${tag}-${i}`));
        if (code !== 201) throw new Error(`create as ${who}: ${code}`);
      });
      const cpu1 = cpuMs(pid);
      const get = await loop(OPS, async (i) => {
        const code = await request(agent, c.httpUrl, token, "GET", `${PODS}/${tag}-${i}`);
        if (code !== 200) throw new Error(`get as ${who}: ${code}`);
      });
      const cpu2 = cpuMs(pid);
      const perOp = (ms: number) => `${((ms * 1000) / OPS).toFixed(0)} µs api CPU`;
      console.log(
        `  audit ${audit ? "on " : "off"} ${who === "admin" ? "admin (system:masters, RBAC skipped)" : `user (RBAC, ${BINDINGS} bindings)  `} round ${round}: create ${create.rate.toFixed(0)}/s (p50 ${create.p50.toFixed(1)} ms, p99 ${create.p99.toFixed(1)} ms, ${perOp(cpu1 - cpu0)})  get ${get.rate.toFixed(0)}/s (p50 ${get.p50.toFixed(1)} ms, p99 ${get.p99.toFixed(1)} ms, ${perOp(cpu2 - cpu1)})`,
      );
    }
  } finally {
    agent.destroy();
    await c.stop();
  }
}

console.log(`choreo gateway authorization and audit benchmark — ${new Date().toISOString()} — node ${process.version}, ${OPS} ops at concurrency ${CONC}`);
await run(false);
await run(true);
