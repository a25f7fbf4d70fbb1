// A cluster with real nodes for the scenarios about containers: the api,
// scheduler, replication and endpoints processes plus N node-agent
// processes driving docker or the process runtime. Test files run two at a
// time on one machine, sharing its network namespace: each cluster gets its
// own pod CIDRs, service range and node names, and `leftovers()` checks
// that nothing of it remains after `stop()`.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { unwrap } from "@choreo/kit";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor, type ManagedProcess } from "@choreo/kit/testing";
import { LABELS, NAMES } from "@choreo/node-agent/net/types";
import { startCluster, withLogsOnFailure, type TestCluster } from "./cluster.js";
import { writeKubeconfig } from "./kubectl.js";

/** The runtimes scenarios run on; "hollow" (simulated pods, no processes) is the benchmarks' control-plane baseline. */
export type RealRuntime = "docker" | "process" | "hollow";

/** Whether a Docker engine answers (docker scenarios are skipped with a reason when not). */
export function dockerAvailable(): boolean {
  try {
    execFileSync("docker", ["info", "--format", "{{.ServerVersion}}"], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * A /24 index in 10.244.0.0/16 (and 10.96.0.0/16) no bridge on this machine
 * uses yet, outside the fixed ranges of choreo up (1-2), the hollow nodes
 * (100+) and the compose nodes (101-102).
 */
function freeIndex(): number {
  const routes = execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" });
  for (let tries = 0; tries < 200; tries++) {
    const i = 20 + Math.floor(Math.random() * 220);
    if (i >= 95 && i <= 110) continue;
    if (!routes.includes(`10.244.${i}.0/24`) && !routes.includes(`10.244.${i + 1}.0/24`) && !routes.includes(`10.244.${i + 2}.0/24`)) return i;
  }
  throw new Error("no free pod CIDR in 10.244.20-240");
}

export interface RealCluster extends TestCluster {
  runtime: RealRuntime;
  nodes: string[];
  kubeconfig: string;
  /** Kills node agent i with SIGKILL (its pods keep running). */
  killNode(i: number): Promise<void>;
  /** Starts node agent i (again). */
  startNode(i: number): Promise<ManagedProcess>;
  /** Writes a manifest into the cluster's dir and returns its path. */
  manifest(name: string, yaml: string): string;
  pod(name: string, namespace?: string): Promise<Pod>;
  /** What is left on the machine of this cluster's nodes and pods (empty after stop). */
  leftovers(): string[];
}

/** Starts the control plane and `nodes` node agents on `runtime`. */
export async function startRealCluster(
  runtime: RealRuntime,
  opts: { nodes?: number; agentEnv?: Record<string, string>; apiEnv?: Record<string, string> } = {},
): Promise<RealCluster> {
  // The local images the pods run (built when missing; npm test's ensure-deps has usually built them).
  execFileSync(
    process.execPath,
    ["--import", "tsx", path.join(import.meta.dirname, "../../services/node-agent/src/node-setup.ts"), "prepare", "--runtime", runtime],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  const index = freeIndex();
  const count = opts.nodes ?? 2;
  const c = await startCluster({
    env: { CHOREO_SERVICE_CIDR: `10.96.${index}.0/24`, ...opts.apiEnv },
    // The scenarios restart node agents and check the pods are adopted, not replaced. An agent's start on
    // a loaded machine has taken over 10 s, which the default grace (8 s, then 5 s to eviction) took for a
    // dead node (seen: the pod evicted while its agent started). Eviction has its own scenario (node-failure).
    actors: [{ name: "scheduler", env: { CHOREO_NODE_GRACE_SECONDS: "40" } }, { name: "replication" }, { name: "endpoints" }],
  });
  const tag = path
    .basename(c.dir)
    .replace(/^choreo-it-/, "")
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "");
  const nodes = Array.from({ length: count }, (_, i) => `${runtime}-${tag}-${i}`);
  const uids = new Set<string>();
  const startNode = (i: number): Promise<ManagedProcess> =>
    c.startActor(
      "node-agent",
      {
        CHOREO_RESTART_BACKOFF_MS: "1000",
        CHOREO_PULL_BACKOFF_MS: "500",
        CHOREO_LEASE_RENEW_MS: "1000",
        CHOREO_STOP_PODS_ON_EXIT: "1",
        ...opts.agentEnv,
      },
      [
        "--node-name",
        nodes[i]!,
        "--runtime",
        runtime,
        "--pod-cidr",
        `10.244.${index + i}.0/24`,
        "--state-dir",
        path.join(c.dir, "nodes"),
        "--images-dir",
        "/var/lib/choreo/images",
      ],
      nodes[i],
    );
  for (let i = 0; i < count; i++) await startNode(i);
  await withLogsOnFailure(c, () =>
    waitFor(async () => (await c.client.list("nodes")).items.length === count, { timeoutMs: 60_000, message: `${count} nodes registered` }),
  ).catch(async (err: unknown) => {
    await c.stop();
    throw err;
  });
  const kubeconfig = writeKubeconfig(c);
  const stopCluster = c.stop.bind(c);
  return {
    ...c,
    runtime,
    nodes,
    kubeconfig,
    killNode: async (i) => c.actors.get(nodes[i]!)?.kill(),
    startNode,
    manifest(name, yaml) {
      const f = path.join(c.dir, name);
      writeFileSync(f, yaml);
      return f;
    },
    async pod(name, namespace = "default") {
      const p = unwrap(await c.client.get("pods", namespace, name)) as Pod;
      if (p.metadata?.uid) uids.add(p.metadata.uid);
      return p;
    },
    async stop() {
      // Remember every pod that ran, so that leftovers() can look for its namespace.
      for (const o of (await c.client.list("pods").catch(() => ({ items: [] }))).items) {
        const uid = (unwrap(o) as Pod).metadata?.uid;
        if (uid) uids.add(uid);
      }
      // The agents stop their pods on SIGTERM (CHOREO_STOP_PODS_ON_EXIT in agentEnv), then the clean-up takes the rest:
      // before the directory goes, since an agent killed after its grace leaves pod namespaces mounted in it (EBUSY).
      await stopCluster(() => {
        execFileSync(
          process.execPath,
          [
            "--import",
            "tsx",
            path.join(import.meta.dirname, "../../services/node-agent/src/node-setup.ts"),
            "cleanup",
            "--state-dir",
            path.join(c.dir, "nodes"),
            ...nodes.flatMap((n) => ["--node", n]),
          ],
          { stdio: "inherit" },
        );
      });
    },
    leftovers() {
      const out: string[] = [];
      const links = execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" });
      for (const n of nodes) if (links.includes(`${NAMES.bridge(n)}:`)) out.push(`bridge ${NAMES.bridge(n)} of ${n}`);
      for (const uid of uids) if (links.includes(`${NAMES.veth(uid)}@`)) out.push(`veth ${NAMES.veth(uid)} of pod ${uid}`);
      if (existsSync("/run/netns")) for (const ns of readdirSync("/run/netns")) if ([...uids].some((u) => ns === NAMES.netns(u))) out.push(`netns ${ns}`);
      for (const table of ["filter", "nat"]) {
        const rules = execFileSync("iptables-save", ["-t", table], { encoding: "utf8" });
        for (const n of nodes) if (rules.includes(NAMES.chainPrefix(n))) out.push(`iptables ${table} chains ${NAMES.chainPrefix(n)}*`);
      }
      if (runtime === "docker" && dockerAvailable()) {
        for (const n of nodes) {
          const ids = execFileSync("docker", ["ps", "-aq", "--filter", `label=${LABELS.node}=${n}`], { encoding: "utf8" }).trim();
          if (ids) out.push(`containers of ${n}: ${ids.split("\n").length}`);
        }
      }
      return out;
    },
  };
}
