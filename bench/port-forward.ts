// Port-forward throughput benchmark: one TCP stream of 100 MB through
// `kubectl port-forward` (1.32: SPDY in a WebSocket; 1.20: SPDY/3.1) ──▶ api
// ──NATS bus stream──▶ node agent ──TCP──▶ the pod, each way (pod → client:
// the pod sends a file; client → pod: the pod counts what it reads until EOF).
// Beside it, the references on the same machine: a direct connection to the
// pod's IP, and `docker exec -i` streaming the same bytes. Prints MB/s
// (median of the runs). No assertions.
//   npm run bench:port-forward -- --mb 100 --runs 3
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { parseArgs, promisify } from "node:util";
import { waitFor } from "@choreo/kit/testing";
import { dockerAvailable, startRealCluster } from "@choreo/integration-tests/support/real-cluster";

const run = promisify(execFile);
const { values } = parseArgs({ options: { mb: { type: "string", default: "100" }, runs: { type: "string", default: "3" } } });
const MB = Number(values.mb);
const BYTES = MB * 1024 * 1024;
const RUNS = Number(values.runs);
const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: pf
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: send
    image: local/busybox:1.35
    command: ["sh", "-c", "head -c ${BYTES} /dev/urandom > /tmp/blob && exec nc -ll -p 9100 -e cat /tmp/blob"]
  - name: count
    image: local/busybox:1.35
    command: ["nc", "-ll", "-p", "9101", "-e", "wc", "-c"]
`;

/** Seconds to receive everything port 9100 sends (pod → client). */
function download(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    let got = 0;
    const s = connect({ host, port });
    s.on("data", (b: Buffer) => (got += b.length));
    s.on("error", reject);
    s.on("close", () => (got === BYTES ? resolve(Number(process.hrtime.bigint() - t) / 1e9) : reject(new Error(`received ${got} of ${BYTES} bytes`))));
  });
}

/** Seconds to send BYTES to port 9101 and hear the pod's count of them (client → pod, then the half-close). */
function upload(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    let reply = "";
    const s = connect({ host, port });
    const chunk = Buffer.alloc(256 * 1024, 7);
    let sent = 0;
    const pump = (): void => {
      while (sent < BYTES) {
        sent += chunk.length;
        if (!s.write(chunk)) return void s.once("drain", pump);
      }
      s.end();
    };
    s.on("connect", pump);
    s.on("data", (b: Buffer) => (reply += b.toString()));
    s.on("error", reject);
    s.on("close", () =>
      Number(reply.trim()) === BYTES
        ? resolve(Number(process.hrtime.bigint() - t) / 1e9)
        : reject(new Error(`the pod counted ${reply.trim()} of ${BYTES} bytes`)),
    );
  });
}

/** A `kubectl port-forward pod/pf :9100 :9101` and its two local ports. */
async function forward(kubectl: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; ports: [number, number] }> {
  const child = spawn(kubectl, ["port-forward", "--address", "127.0.0.1", "pod/pf", ":9100", ":9101"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
  const ports = await waitFor(
    () => {
      const found = [...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> \d+/g)].map((m) => Number(m[1]));
      return found.length >= 2 ? ([found[0], found[1]] as [number, number]) : undefined;
    },
    { timeoutMs: 60_000, message: `${kubectl} port-forward listening` },
  );
  return { child, ports };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const line = (name: string, secs: number[]): string =>
  `${name.padEnd(44)} ${(MB / median(secs)).toFixed(1).padStart(7)} MB/s   (median of ${secs.length}: ${secs.map((s) => s.toFixed(2)).join(", ")} s)`;

async function measure(name: string, fn: () => Promise<number>): Promise<void> {
  const secs: number[] = [];
  for (let i = 0; i < RUNS; i++) secs.push(await fn());
  console.log(line(name, secs));
}

if (!dockerAvailable()) {
  console.log("docker is not available: nothing to measure");
  process.exit(0);
}
console.log(`choreo port-forward benchmark — ${new Date().toISOString()} — ${MB} MB, one stream, ${RUNS} runs each, one docker node`);
const c = await startRealCluster("docker", { nodes: 1 });
try {
  const env = { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir };
  await run("kubectl", ["apply", "-f", c.manifest("pf.yaml", POD)], { env });
  const pod = await waitFor(
    async () => {
      const p = await c.pod("pf");
      return p.status?.containerStatuses?.every((s) => s.state?.running) && p.status.podIp ? p : undefined;
    },
    { timeoutMs: 120_000, message: "the pod running" },
  );
  const ip = pod.status?.podIp ?? "";
  // The sender writes its file before it listens.
  await waitFor(
    async () => {
      try {
        return (await download(ip, 9100)) > 0;
      } catch {
        return false;
      }
    },
    { timeoutMs: 120_000, message: "the pod's sender listening" },
  );
  await measure("pod → client, direct to the pod IP", () => download(ip, 9100));
  await measure("client → pod, direct to the pod IP", () => upload(ip, 9101));
  for (const [kubectl, name] of [
    ["kubectl", "kubectl 1.32 port-forward (WebSocket)"],
    [KUBECTL_120, "kubectl 1.20 port-forward (SPDY)"],
  ] as const) {
    const f = await forward(kubectl, env);
    try {
      await measure(`pod → client, ${name}`, () => download("127.0.0.1", f.ports[0]));
      await measure(`client → pod, ${name}`, () => upload("127.0.0.1", f.ports[1]));
    } finally {
      f.child.kill("SIGKILL");
    }
  }
  const container =
    (await run("docker", ["ps", "-q", "--filter", "label=dev.choreo.container=send", "--filter", "label=dev.choreo.pod.name=pf"])).stdout
      .trim()
      .split("\n")[0] ?? "";
  if (container) {
    await measure("pod → client, docker exec cat (reference)", async () => {
      const t = process.hrtime.bigint();
      await run("sh", ["-c", `docker exec ${container} cat /tmp/blob | wc -c`], { maxBuffer: 1024 * 1024 });
      return Number(process.hrtime.bigint() - t) / 1e9;
    });
  } else {
    console.log("docker exec reference: the sender's container was not found by label");
  }
} finally {
  await c.stop();
}
