// kubectl cp throughput: a file of random bytes copied into a pod and back out with
// `kubectl cp` (kubectl 1.32 ──WebSocket──▶ api ──NATS bus stream──▶ node agent ──▶
// docker exec `tar`), beside `docker cp` of the same file into and out of the same
// container. Every copy is checked byte for byte (sha256 of the file copied back,
// and of the file in the container). Prints MB/s (1 MB = 10^6 bytes) per run and
// the best and median of each direction; as a second reference, the same tar
// streams through `docker exec -i` (what kubectl cp does, without choreo); then
// one more copy each way with the CPU seconds each process spent on it
// (/proc/<pid>/stat: user + system, with reaped children). No assertions on times.
//   npm run bench:cp -- --mb 100 --runs 3
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { parseArgs, promisify } from "node:util";
import { waitFor } from "@choreo/kit/testing";
import { dockerAvailable, startRealCluster } from "@choreo/integration-tests/support/real-cluster";

const run = promisify(execFile);
const { values } = parseArgs({ options: { mb: { type: "string", default: "100" }, runs: { type: "string", default: "3" } } });
const MB = Number(values.mb);
const RUNS = Number(values.runs);
const BYTES = MB * 1_000_000;

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

/** Writes `bytes` random bytes to `file` in 1 MiB chunks. */
async function randomFile(file: string, bytes: number): Promise<void> {
  const chunk = 1 << 20;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let left = bytes; left > 0; left -= chunk) yield randomBytes(Math.min(chunk, left));
  }
  await pipeline(chunks(), createWriteStream(file));
}

async function sha256(file: string): Promise<string> {
  const h = createHash("sha256");
  await pipeline(createReadStream(file), h);
  return h.digest("hex");
}

/** Seconds `fn` takes. */
async function seconds(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

const rate = (s: number): number => BYTES / 1e6 / s;

function summary(name: string, secs: number[]): string {
  const rates = secs.map(rate).sort((a, b) => b - a);
  const median = rates[Math.floor(rates.length / 2)] ?? NaN;
  const each = secs.map((s) => `${s.toFixed(2)} s`).join(", ");
  return `${name.padEnd(24)} best ${rates[0]!.toFixed(1).padStart(6)} MB/s   median ${median.toFixed(1).padStart(6)} MB/s   (${each})`;
}

/** Clock ticks of a process (utime + stime + cutime + cstime, fields 14-17 of /proc/<pid>/stat); 0 when it is gone. */
function ticks(pid: number | "self"): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return [11, 12, 13, 14].reduce((sum, i) => sum + Number(f[i]), 0);
  } catch {
    return 0;
  }
}

/** Pids whose command line contains every one of `parts`. */
function pidsOf(...parts: string[]): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").replaceAll("\0", " ");
      if (parts.every((p) => cmd.includes(p))) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The pids and every live descendant of theirs. */
function withDescendants(pids: number[]): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out = new Set(pids);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, ppid] of parent) if (out.has(ppid) && !out.has(pid)) grew = Boolean(out.add(pid));
  }
  return [...out];
}

/** The CPU seconds each named group of processes spends while `fn` runs (the bench's own share is its reaped children: the CLI). */
async function cpuOf(groups: Record<string, number[]>, fn: () => Promise<unknown>): Promise<Record<string, number>> {
  const all = { ...groups, "CLI (kubectl or docker)": ["self" as const] };
  const read = () => Object.fromEntries(Object.entries(all).map(([k, pids]) => [k, pids.reduce((s: number, p) => s + ticks(p), 0)]));
  const before = read();
  await fn();
  const after = read();
  return Object.fromEntries(Object.keys(all).map((k) => [k, (after[k]! - before[k]!) / 100]));
}

if (!dockerAvailable()) {
  console.log("docker is not available: nothing to measure");
  process.exit(0);
}
console.log(`choreo cp benchmark — ${new Date().toISOString()} — ${MB} MB, ${RUNS} runs each way, one docker node`);
const c = await startRealCluster("docker", { nodes: 1 });
try {
  const env = { ...process.env, KUBECONFIG: c.kubeconfig, HOME: c.dir };
  const src = path.join(c.dir, "random.bin");
  await randomFile(src, BYTES);
  const want = await sha256(src);
  await run("kubectl", ["apply", "-f", c.manifest("bench.yaml", POD)], { env });
  const pod = await waitFor(
    async () => {
      const p = await c.pod("bench");
      return p.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
    },
    { timeoutMs: 120_000, message: "the pod running" },
  );
  const id = (pod.status?.containerStatuses?.[0]?.containerId ?? "").replace(/^docker:\/\//, "");
  /** The sha256 of a file inside the container, by docker exec (not through choreo). */
  const inside = async (file: string): Promise<string> => (await run("docker", ["exec", id, "sha256sum", file])).stdout.split(/\s+/)[0] ?? "";
  /** The copy back is the same bytes; then it is removed (the next run writes it again). */
  const check = async (what: string, file: string): Promise<void> => {
    const size = statSync(file).size;
    const got = await sha256(file);
    if (size !== BYTES || got !== want) throw new Error(`${what}: ${size} bytes, sha256 ${got}, want ${BYTES} bytes, ${want}`);
    rmSync(file);
  };
  const times = { kubectlIn: [] as number[], kubectlOut: [] as number[], dockerIn: [] as number[], dockerOut: [] as number[] };
  for (let i = 0; i < RUNS; i++) {
    const back = path.join(c.dir, `back-${i}.bin`);
    times.kubectlIn.push(await seconds(() => run("kubectl", ["cp", src, "bench:/tmp/k.bin", "-c", "main"], { env })));
    if ((await inside("/tmp/k.bin")) !== want) throw new Error("kubectl cp in: the file in the container differs");
    times.kubectlOut.push(await seconds(() => run("kubectl", ["cp", "bench:/tmp/k.bin", back, "-c", "main"], { env })));
    await check("kubectl cp out", back);
    await run("docker", ["exec", id, "rm", "/tmp/k.bin"]);

    times.dockerIn.push(await seconds(() => run("docker", ["cp", src, `${id}:/tmp/d.bin`])));
    if ((await inside("/tmp/d.bin")) !== want) throw new Error("docker cp in: the file in the container differs");
    times.dockerOut.push(await seconds(() => run("docker", ["cp", `${id}:/tmp/d.bin`, back])));
    await check("docker cp out", back);
    await run("docker", ["exec", id, "rm", "/tmp/d.bin"]);
    console.log(`run ${i + 1}/${RUNS}: bytes equal (sha256 ${want.slice(0, 12)}…) both ways, both tools`);
  }
  // The tar streams kubectl cp sends through exec, through docker exec -i instead (no choreo on the way).
  const dir = path.dirname(src);
  const outDir = path.join(c.dir, "untar");
  mkdirSync(outDir, { recursive: true });
  const sh = (script: string) => run("sh", ["-c", script], { maxBuffer: 1 << 20 });
  const tarIn = () => sh(`tar cf - -C ${dir} random.bin | docker exec -i ${id} tar xf - -C /tmp`);
  const tarOut = () => sh(`docker exec ${id} tar cf - -C /tmp random.bin | tar xf - -C ${outDir}`);
  const pipeIn: number[] = [];
  const pipeOut: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    pipeIn.push(await seconds(tarIn));
    if ((await inside("/tmp/random.bin")) !== want) throw new Error("docker exec tar in: the file in the container differs");
    pipeOut.push(await seconds(tarOut));
    await check("docker exec tar out", path.join(outDir, "random.bin"));
    await run("docker", ["exec", id, "rm", "/tmp/random.bin"]);
  }
  console.log(summary("kubectl cp into pod", times.kubectlIn));
  console.log(summary("kubectl cp out of pod", times.kubectlOut));
  console.log(summary("docker cp into", times.dockerIn));
  console.log(summary("docker cp out of", times.dockerOut));
  console.log(summary("docker exec -i tar into", pipeIn));
  console.log(summary("docker exec tar out of", pipeOut));

  // Where the CPU goes: one more kubectl cp each way, then the docker exec tar streams.
  const groups = {
    api: withDescendants([c.apis[0]!.process.pid]),
    "node agent": withDescendants([c.actors.get(c.nodes[0]!)!.pid]),
    "nats-server": pidsOf("nats-server", c.nats.dir),
    dockerd: pidsOf("dockerd"),
    containerd: pidsOf("containerd", "--config"),
    "container shim (+ tar)": withDescendants(pidsOf("containerd-shim", id)),
  };
  const back = path.join(c.dir, "back-cpu.bin");
  const profiles: [string, Record<string, number>][] = [
    ["kubectl cp in", await cpuOf(groups, () => run("kubectl", ["cp", src, "bench:/tmp/k.bin", "-c", "main"], { env }))],
    ["kubectl cp out", await cpuOf(groups, () => run("kubectl", ["cp", "bench:/tmp/k.bin", back, "-c", "main"], { env }))],
    ["docker exec tar in", await cpuOf(groups, tarIn)],
    ["docker exec tar out", await cpuOf(groups, tarOut)],
  ];
  await check("kubectl cp out (profiled)", back);
  console.log(`CPU seconds per ${MB} MB copy (100 ticks/s):`);
  console.log(`${"".padEnd(24)}${profiles.map(([n]) => n.padStart(22)).join("")}`);
  for (const k of Object.keys(profiles[0]![1])) console.log(`${k.padEnd(24)}${profiles.map(([, p]) => p[k]!.toFixed(2).padStart(22)).join("")}`);
} finally {
  await c.stop();
}
