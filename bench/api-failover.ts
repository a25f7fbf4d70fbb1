// api replica loss behind HAProxy: three api replicas (kit startHaproxy in
// front, /readyz checked every 500 ms), kubectl reading in a loop and three
// keep-alive HTTPS clients writing ConfigMaps. Each repetition strikes one
// replica (in turn) and measures, from the fault:
//   kill   — kill -9: its connections are reset by the kernel at once;
//   stop   — SIGSTOP for 5 s (a hung replica): its connections stay open and
//            silent until HAProxy marks it down and cuts them;
// the requests that failed (kubectl commands, HTTPS requests), the first
// answer to a request sent after the fault (ms), the longest time any client
// waited for an answer around it (ms), and HAProxy's mark-down time. The
// replica comes back (restart / SIGCONT) and is marked UP before the next.
//   npm run bench:api-failover -- [--runs 3] [--faults kill,stop]
import { readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { parseArgs } from "node:util";
import { startHaproxy } from "@choreo/kit/testing";
import { startCluster } from "@choreo/integration-tests/support/cluster";
import { run } from "@choreo/integration-tests/support/kubectl";

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" }, faults: { type: "string", default: "kill,stop" } } });
const runs = Number(values.runs);
const faults = (values.faults ?? "").split(",").filter((f): f is "kill" | "stop" => f === "kill" || f === "stop");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const c = await startCluster({ apis: 3, env: { CHOREO_LOG_LEVEL: "error" } });
const lb = await startHaproxy({
  listeners: [{ name: "https", servers: c.apis.map((a) => ({ name: `api-${a.index}`, port: a.httpsPort, healthPort: a.httpPort })) }],
  logFile: path.join(c.dir, "haproxy.log"),
});
try {
  for (const a of c.apis) await lb.waitFor("https", `api-${a.index}`, "UP");
  const port = lb.ports.https!;
  const ca = readFileSync(path.join(c.dir, "api", "pki", "apiserver.crt"), "utf8");
  const kubeconfig = path.join(c.dir, "kubeconfig-ha");
  writeFileSync(
    kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: ha\n  cluster: {server: "https://127.0.0.1:${port}", certificate-authority-data: ${Buffer.from(ca).toString("base64")}}\nusers:\n- name: a\n  user: {token: "${c.token}"}\ncontexts:\n- name: ha\n  context: {cluster: ha, user: a, namespace: default}\ncurrent-context: ha\n`,
  );
  await run("kubectl", ["create", "configmap", "probe"], kubeconfig);

  /** Every request: its client, when sent, when it ended, and whether answered. */
  type Req = { client: string; sent: number; end: number; ok: boolean };
  const log: Req[] = [];
  let stopped = false;
  const agent = new https.Agent({ keepAlive: true, maxSockets: 3 });
  let n = 0;
  const write = (): Promise<boolean> =>
    new Promise((resolve) => {
      const body = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `bench-${n++}` } });
      const req = https.request(
        {
          host: "127.0.0.1",
          port,
          path: "/api/v1/namespaces/default/configmaps",
          method: "POST",
          agent,
          ca,
          headers: { Authorization: `Bearer ${c.token}`, "Content-Type": "application/json" },
          timeout: 30_000,
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode === 201));
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => resolve(false));
      req.end(body);
    });
  const loop = async (client: string, step: () => Promise<boolean>): Promise<void> => {
    while (!stopped) {
      const sent = Date.now();
      const ok = await step().catch(() => false);
      log.push({ client, sent, end: Date.now(), ok });
      if (!ok) await sleep(20);
    }
  };
  const loops = [
    loop("kubectl", async () => (await run("kubectl", ["get", "configmap", "probe", "-o", "name"], kubeconfig)).code === 0),
    ...[0, 1, 2].map((i) => loop(`https-${i}`, write)),
  ];

  const rows: Record<string, string | number>[] = [];
  for (const fault of faults) {
    for (let r = 0; r < runs; r++) {
      const i = (r % 3) as 0 | 1 | 2;
      const name = `api-${i}`;
      await sleep(2_000);
      const at = Date.now();
      if (fault === "kill") await c.killApi(i);
      else process.kill(c.apis[i]!.process.pid, "SIGSTOP");
      await lb.waitFor("https", name, "DOWN", 10_000);
      const downMs = Date.now() - at;
      await sleep(fault === "kill" ? 3_000 : 5_000 - downMs);
      const upFrom = Date.now();
      if (fault === "kill") await c.startApi(i);
      else process.kill(c.apis[i]!.process.pid, "SIGCONT");
      const readyMs = Date.now() - upFrom;
      await lb.waitFor("https", name, "UP", 20_000);
      const upMs = Date.now() - upFrom - readyMs;
      await sleep(1_000);
      // The requests around the fault: those ending after it, sent before the replica was back.
      const around = log.filter((q) => q.end >= at && q.sent < upFrom);
      for (const client of ["kubectl", "https"]) {
        const mine = around.filter((q) => q.client.startsWith(client));
        const answeredAfter = mine.filter((q) => q.ok && q.sent >= at).map((q) => q.end - at);
        rows.push({
          fault,
          replica: name,
          client,
          requests: mine.length,
          failed: mine.filter((q) => !q.ok).length,
          "first answer after the fault (ms)": answeredAfter.length ? Math.min(...answeredAfter) : "none",
          "longest wait (ms)": Math.max(0, ...mine.map((q) => q.end - Math.max(q.sent, at))),
          "marked down (ms)": downMs,
          "marked up after ready (ms)": upMs,
        });
      }
    }
  }
  stopped = true;
  await Promise.all(loops);
  agent.destroy();
  console.table(rows);
  console.log(JSON.stringify(rows));
} finally {
  await lb.stop();
  await c.stop();
}
