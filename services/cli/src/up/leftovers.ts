// What a cluster started by `choreo up` from one data dir may leave on the
// machine when `choreo up` dies without stopping it (kill -9, a crash, a
// power cut of the terminal): its processes (recorded in <data dir>/pids with
// their start times) and what its real nodes made (containers labelled with
// the node, pod network namespaces, the node's bridge and veths, its CHO-
// iptables chains, mounts under its state dir, its cgroups). `sweep` lists
// them, stops the processes, runs the node agents' own clean-up
// (node-setup cleanup --node …, what `choreo up` runs when it stops) and says
// what went. Only this cluster's nodes are touched — never another
// cluster's, nor anything choreo did not name.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { waitFor } from "@choreo/kit/process";
import { LABELS, NAMES } from "@choreo/node-agent/net/types";
import { nodeSetup } from "./node-setup.js";
import { processStartTime } from "./supervisor.js";

/** What `choreo up` records of a cluster for `choreo down` (`<data dir>/cluster.json`). */
export interface ClusterRecord {
  /** The real nodes' names. */
  nodes: string[];
  /** The node agents' state dir. */
  stateDir: string;
}

export function recordFile(dataDir: string): string {
  return path.join(dataDir, "cluster.json");
}

export function pidDir(dataDir: string): string {
  return path.join(dataDir, "pids");
}

export function writeClusterRecord(dataDir: string, record: ClusterRecord): void {
  writeFileSync(recordFile(dataDir), `${JSON.stringify(record, null, 2)}\n`);
}

/** The record, else what the state dir shows (one directory per node that ran). */
function readClusterRecord(dataDir: string): ClusterRecord {
  try {
    const r = JSON.parse(readFileSync(recordFile(dataDir), "utf8")) as Partial<ClusterRecord>;
    if (Array.isArray(r.nodes) && typeof r.stateDir === "string") return { nodes: r.nodes.map(String), stateDir: r.stateDir };
  } catch {
    // none (a cluster of an older choreo): the state dir tells
  }
  const stateDir = path.join(dataDir, "nodes");
  const nodes = existsSync(stateDir)
    ? readdirSync(stateDir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
    : [];
  return { nodes, stateDir };
}

/** A process of the cluster still running: its name, pid, and whether it is the one recorded (same start time). */
interface LiveProcess {
  name: string;
  pid: number;
}

/** The recorded processes that still run (pid and start time both match: a reused pid is another process). */
export function liveProcesses(dataDir: string): LiveProcess[] {
  const dir = pidDir(dataDir);
  if (!existsSync(dir)) return [];
  const live: LiveProcess[] = [];
  for (const name of readdirSync(dir).sort()) {
    const [pid, start] = readFileSync(path.join(dir, name), "utf8").trim().split(" ");
    const n = Number(pid);
    if (Number.isInteger(n) && n > 0 && start && processStartTime(n) === start) live.push({ name, pid: n });
  }
  return live;
}

function tryKill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone meanwhile
  }
}

/**
 * SIGTERM to each (node agents stop their pods on it), SIGKILL to those
 * still there after `graceMs`; returns the pids that needed the SIGKILL.
 */
async function stopProcesses(procs: LiveProcess[], graceMs: number): Promise<Set<number>> {
  const start = new Map(procs.map((p) => [p.pid, processStartTime(p.pid)]));
  const alive = (p: LiveProcess): boolean => start.get(p.pid) !== undefined && processStartTime(p.pid) === start.get(p.pid);
  // SIGCONT too: a stopped process would hold the SIGTERM until the grace ran out.
  for (const p of procs) {
    tryKill(p.pid, "SIGTERM");
    tryKill(p.pid, "SIGCONT");
  }
  const gone = await waitFor(() => procs.every((p) => !alive(p)), { timeoutMs: graceMs, intervalMs: 100 }).catch(() => false);
  const killed = new Set<number>();
  if (gone) return killed;
  for (const p of procs)
    if (alive(p)) {
      tryKill(p.pid, "SIGKILL");
      killed.add(p.pid);
    }
  await waitFor(() => procs.every((p) => !alive(p)), { timeoutMs: 10_000, intervalMs: 100, message: "the cluster's processes to die" });
  return killed;
}

/** The order `choreo up` stops in: the actors (controllers and node agents) while the api and the servers still answer, then the api, then the servers. */
const STOP_ORDER = (name: string): number => (name === "nats-server" || name === "redis-server" ? 2 : name === "api" ? 1 : 0);

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => execFile(cmd, args, { timeout: 30_000 }, (err, stdout) => resolve(err ? "" : stdout)));
}

/** The pod uids a node's state dir knows (`<state>/<node>/pods/<uid>`). */
function podUids(stateDir: string, node: string): string[] {
  const pods = path.join(stateDir, node, "pods");
  return existsSync(pods) ? readdirSync(pods) : [];
}

/** Lines describing what of `nodes` is on the machine now, each naming one thing (sorted). */
export async function nodeLeftovers(record: ClusterRecord): Promise<string[]> {
  if (record.nodes.length === 0) return [];
  const out: string[] = [];
  const links = (await run("ip", ["-o", "link", "show"])).split("\n");
  const netns = existsSync("/run/netns") ? new Set(readdirSync("/run/netns")) : new Set<string>();
  const saved = await run("iptables-save", []);
  const mounts = readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "");
  const cgroupRoots = existsSync("/sys/fs/cgroup") ? ["/sys/fs/cgroup", ...readdirSync("/sys/fs/cgroup").map((c) => path.join("/sys/fs/cgroup", c))] : [];
  const docker = existsSync("/var/run/docker.sock");
  for (const node of record.nodes) {
    const bridge = NAMES.bridge(node);
    for (const l of links) {
      const name = /^\d+: ([^@:\s]+)[@:]/.exec(l)?.[1];
      if (name === bridge) out.push(`bridge ${bridge} of ${node}`);
      else if (name && l.includes(` master ${bridge} `)) out.push(`veth ${name} on ${bridge} of ${node}`);
    }
    let table = "";
    const chains = new Map<string, number>();
    for (const line of saved.split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      else if (line.startsWith(`:${NAMES.chainPrefix(node)}`)) chains.set(table, (chains.get(table) ?? 0) + 1);
    }
    for (const [t, n] of chains) out.push(`iptables ${t} chains ${NAMES.chainPrefix(node)}* of ${node} (${n})`);
    for (const uid of podUids(record.stateDir, node)) {
      const ns = NAMES.netns(uid);
      if (!netns.has(ns)) continue;
      out.push(`network namespace ${ns} of ${node}`);
      const pids = (await run("ip", ["netns", "pids", ns])).split("\n").filter((p) => /^\d+$/.test(p.trim()));
      for (const pid of pids) out.push(`pod process ${pid} in ${ns}`);
    }
    const nodeDir = path.resolve(record.stateDir, node);
    for (const m of mounts) if (m === nodeDir || m.startsWith(`${nodeDir}/`)) out.push(`mount ${m}`);
    for (const r of cgroupRoots) if (existsSync(path.join(r, "choreo", node))) out.push(`cgroup ${path.join(r, "choreo", node)}`);
    if (docker) {
      const ids = (await run("docker", ["ps", "-aq", "--filter", `label=${LABELS.node}=${node}`])).trim();
      for (const id of ids ? ids.split("\n") : []) out.push(`container ${id} of ${node}`);
    }
  }
  return out.sort();
}

/** What `sweep` found and removed, and what it could not remove. */
export interface SweepReport {
  removed: string[];
  remaining: string[];
}

/**
 * Stops the cluster's recorded processes that still run, then removes what
 * its nodes left (node-setup cleanup of those nodes), and reports what was
 * there before and is gone now. Run by `choreo down` (when no `choreo up`
 * runs, or after it stopped) and by `choreo up` on a data dir whose last
 * `choreo up` did not stop.
 */
export async function sweep(dataDir: string, log: (line: string) => void): Promise<SweepReport> {
  const removed: string[] = [];
  const procs = liveProcesses(dataDir);
  for (const rank of [0, 1, 2]) {
    const group = procs.filter((p) => STOP_ORDER(p.name) === rank);
    if (group.length === 0) continue;
    const killed = await stopProcesses(group, 15_000);
    for (const p of group) removed.push(`process ${p.name} (pid ${p.pid}${killed.has(p.pid) ? ", killed after 15 s" : ""})`);
  }
  rmSync(pidDir(dataDir), { recursive: true, force: true });
  const record = readClusterRecord(dataDir);
  const before = await nodeLeftovers(record);
  if (before.length === 0) return { removed, remaining: [] };
  await nodeSetup(["cleanup", "--state-dir", record.stateDir, ...record.nodes.flatMap((n) => ["--node", n])], log);
  const after = new Set(await nodeLeftovers(record));
  removed.push(...before.filter((x) => !after.has(x)));
  return { removed, remaining: [...after] };
}
