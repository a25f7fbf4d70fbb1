// Exec round-trip benchmark: `kubectl exec p -- true` (kubectl 1.32 ──WebSocket──▶
// api ──NATS──▶ node agent ──▶ docker exec) against `docker exec <container> true`
// on the same machine, N runs each, one at a time. Prints p50/p99/mean in ms.
// No assertions on times.
//   npm run bench:exec -- --runs 50
import { execFile } from "node:child_process";
import { parseArgs } from "node:util";
import { promisify } from "node:util";
import { waitFor } from "@choreo/kit/testing";
import { dockerAvailable, startRealCluster } from "@choreo/integration-tests/support/real-cluster";

const run = promisify(execFile);
const { values } = parseArgs({ options: { runs: { type: "string", default: "50" } } });
const RUNS = Number(values.runs);

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: bench
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: local/busybox:1.35
    command: ["sleep", "3600"]
`;

/** Milliseconds of `n` sequential runs of `fn`. */
async function time(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return out;
}

function summary(name: string, ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN;
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return `${name.padEnd(28)} p50 ${at(0.5).toFixed(1).padStart(7)} ms   p99 ${at(0.99).toFixed(1).padStart(7)} ms   mean ${mean.toFixed(1).padStart(7)} ms   (${s.length} runs)`;
}

if (!dockerAvailable()) {
  console.log("docker is not available: nothing to measure");
  process.exit(0);
}
console.log(`choreo exec benchmark — ${new Date().toISOString()} — ${RUNS} runs each, one docker node`);
const c = await startRealCluster("docker", { nodes: 1 });
try {
  const env = { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir };
  await run("kubectl", ["apply", "-f", c.manifest("bench.yaml", POD)], { env });
  const pod = await waitFor(
    async () => {
      const p = await c.pod("bench");
      return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    { timeoutMs: 120_000, message: "the pod running" },
  );
  const id = (pod.status?.containerStatuses?.[0]?.containerId ?? "").replace(/^docker:\/\//, "");
  // One warm-up each (kubectl's discovery cache, docker's first exec).
  await run("kubectl", ["exec", "bench", "--", "true"], { env });
  await run("docker", ["exec", id, "true"]);
  console.log(summary("kubectl exec bench -- true", await time(RUNS, () => run("kubectl", ["exec", "bench", "--", "true"], { env }))));
  console.log(summary("docker exec <id> true", await time(RUNS, () => run("docker", ["exec", id, "true"]))));
} finally {
  await c.stop();
}
