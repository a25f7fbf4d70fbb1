// The chaos suite's cluster, faults and checks. The cluster: a 3-server NATS
// cluster with the event stream replicated (R3), Redis as a primary, two
// replicas and three Sentinels, two api replicas with write durability
// "log", the scheduler, replication and endpoints actors, and hollow node
// agents. Each fault is struck while an RC is being scaled and a writer
// creates ConfigMaps; once it has cleared, the checks: converged (the RC's
// pods ready, exactly as many as asked, each owned by it, the Service's
// Endpoints listing exactly them), no acknowledged write lost, stream
// sequence == revision, and no node taken for failed.
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Redis } from "ioredis";
import { unwrap } from "@choreo/kit";
import { EVENT_STREAM, streamState } from "@choreo/kit/bus";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Endpoints, Node, Pod, ReplicationController, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { NAMES } from "@choreo/node-agent/net/types";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { startRedisHa, waitFor, type RedisHaHandle } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "../support/cluster.js";
import { webRc } from "../support/real-pods-scenarios.js";
import { createTestHosts, type TestHosts } from "../support/test-hosts.js";
import { ServiceClient } from "./service-client.js";

export interface ChaosCluster {
  c: TestCluster;
  ha: RedisHaHandle;
  jsm: JetStreamManager;
  /** A sentinel-aware client of the Redis primary (for the revision). */
  redis: Redis;
  nodes: number;
  /** With `hosts`: the test hosts, one node agent (process runtime, real pods) on each. */
  hosts?: TestHosts;
  /** With `hosts`: a client on host 0 asking the Service all along. */
  service?: ServiceClient;
  /** kill -9 of the node agent(s): the hollow-nodes process, or host 0's agent; then started again. */
  restartNodeAgent(): Promise<void>;
  stop(): Promise<void>;
}

/** The node on test host i. */
export const hostNode = (i: number): string => `host-${i}`;

/**
 * The chaos cluster. `hosts`: the nodes are test hosts (network namespaces
 * with their own addresses, support/test-hosts.ts), each a node agent with
 * the process runtime, the RC's pods real web servers, and a client on host
 * 0 asks the Service every 100 ms; else hollow nodes.
 */
export async function startChaosCluster(opts: { nodes?: number; hosts?: boolean } = {}): Promise<ChaosCluster> {
  const nodes = opts.nodes ?? 3;
  const hosts = opts.hosts ? createTestHosts(nodes) : undefined;
  // min-replicas-to-write 1: a killed primary restarted as a primary (before the sentinels demote it) refuses writes instead of
  // taking them on a branch the failover throws away — as `choreo up --ha` runs it.
  const ha = await startRedisHa({ replicas: 2, sentinels: 3, minReplicasToWrite: 1 }).catch((err: unknown) => {
    hosts?.destroy();
    throw err;
  });
  let c: TestCluster | undefined;
  let service: ServiceClient | undefined;
  const agentEnv = { CHOREO_RESTART_BACKOFF_MS: "1000", CHOREO_STOP_PODS_ON_EXIT: "1" };
  const startHostAgent = (cluster: TestCluster, i: number) =>
    cluster.startActor(
      "node-agent",
      agentEnv,
      [
        "--node-name",
        hostNode(i),
        "--runtime",
        "process",
        "--node-ip",
        hosts!.hosts[i]!.address,
        "--state-dir",
        `${cluster.dir}/nodes`,
        "--images-dir",
        "/var/lib/choreo/images",
      ],
      hostNode(i),
      { netns: hosts!.hosts[i]!.netns, address: hosts!.hosts[i]!.address },
    );
  try {
    c = await startCluster({
      apis: 2,
      natsCluster: 3,
      ...(hosts ? { natsHost: hosts.gateway } : {}),
      env: {
        CHOREO_REDIS_URL: ha.url,
        CHOREO_REDIS_CREDENTIALS: ha.credentialsFile,
        CHOREO_REDIS_SENTINEL_CREDENTIALS: ha.sentinelCredentialsFile,
        CHOREO_WRITE_DURABILITY: "log",
        CHOREO_EVENT_REPLICAS: "3",
      },
      actors: [
        ...(hosts ? [] : [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(nodes) } }]),
        { name: "scheduler" },
        { name: "replication", env: { CHOREO_EVENTS: "0" } },
        { name: "endpoints" },
      ],
    });
    const redis = ha.client();
    const jsm = await jetstreamManager(c.nc);
    const cluster = c;
    if (hosts) for (let i = 0; i < nodes; i++) await startHostAgent(cluster, i);
    await waitFor(async () => (await cluster.client.list("nodes")).items.length === nodes, { timeoutMs: 60_000, message: `${nodes} nodes` });
    const rc = hosts
      ? fromKubeJson(parseYaml(webRc("web", 3, { app: "web" })) as Record<string, unknown>)
      : fromKubeJson({
          apiVersion: "v1",
          kind: "ReplicationController",
          metadata: { name: "web", namespace: "default" },
          spec: {
            replicas: 3,
            selector: { app: "web" },
            template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "app", image: "nginx" }] } },
          },
        });
    rc.kind!.value.metadata!.namespace = "default";
    await cluster.client.create(rc);
    const svc = unwrap(
      await cluster.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web", namespace: "default" },
          spec: { selector: { app: "web" }, ports: [hosts ? { port: 80, targetPort: 8080 } : { port: 80 }] },
        }),
      ),
    ) as Service;
    if (hosts) {
      await waitFor(() => converged({ c: cluster } as ChaosCluster, 3), { timeoutMs: 120_000, intervalMs: 250, message: "3 web pods ready on the test hosts" });
      service = new ServiceClient(hosts, 0, `http://${svc.spec!.clusterIp}:80/`);
      service.start();
    }
    return {
      c: cluster,
      ha,
      jsm,
      redis,
      nodes,
      ...(hosts ? { hosts } : {}),
      ...(service ? { service } : {}),
      async restartNodeAgent() {
        if (hosts) {
          await cluster.actors.get(hostNode(0))?.kill();
          await sleep(1_000);
          await startHostAgent(cluster, 0);
        } else {
          await cluster.actors.get("node-agent")?.kill();
          await sleep(1_000);
          await cluster.startActor("node-agent", { CHOREO_HOLLOW_NODES: String(nodes) });
        }
      },
      async stop() {
        await service?.stop();
        redis.disconnect();
        await cluster.stop();
        await ha.stop();
        hosts?.destroy();
      },
    };
  } catch (err) {
    await service?.stop();
    await c?.stop();
    await ha.stop();
    hosts?.destroy();
    throw err;
  }
}

/** A fault: `strike` returns once it has cleared (the process restarted, the server resumed). */
export interface Fault {
  name: string;
  strike(cc: ChaosCluster & { notes: string[] }): Promise<void>;
  /** Only on test hosts (a host cut off). */
  hostsOnly?: boolean;
  /** A node does fail (a host cut off): its NodeNotReady and its pods' replacement are expected. */
  nodeFails?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const restartActor = (name: string, env: Record<string, string> = {}): Fault => ({
  name: `kill -9 of the ${name} actor`,
  async strike(cc) {
    await cc.c.actors.get(name)?.kill();
    await sleep(1_000);
    await cc.c.startActor(name, env);
  },
});

async function natsLeader(cc: ChaosCluster) {
  const leader = (await cc.jsm.streams.info(EVENT_STREAM)).cluster?.leader;
  assert.ok(leader, "the event stream has a leader");
  return cc.c.natsCluster!.member(leader);
}

/** Every fault kind; `stopMs`: how long a SIGSTOPped server stays stopped. `hosts`: with the test-host faults. */
export function faults(stopMs: number, hosts = false): Fault[] {
  return allFaults(stopMs).filter((f) => hosts || !f.hostsOnly);
}

function allFaults(stopMs: number): Fault[] {
  return [
    {
      name: "kill -9 of api replica 0",
      async strike(cc) {
        await cc.c.killApi(0);
        await sleep(1_000);
        await cc.c.startApi(0);
      },
    },
    restartActor("scheduler"),
    restartActor("replication", { CHOREO_EVENTS: "0" }),
    restartActor("endpoints"),
    {
      name: "kill -9 of a node agent",
      strike: (cc) => cc.restartNodeAgent(),
    },
    {
      name: "kill -9 of the Redis primary (Sentinel failover; the old primary restarted as a replica)",
      async strike(cc) {
        const old = await cc.ha.primary();
        await old.kill();
        await cc.ha.failedOverFrom(old.port);
        await old.restart();
      },
    },
    {
      name: `SIGSTOP of the Redis primary for ${stopMs / 1000} s`,
      async strike(cc) {
        const old = await cc.ha.primary();
        const pid = old.process().pid;
        process.kill(pid, "SIGSTOP");
        try {
          await cc.ha.failedOverFrom(old.port, Math.max(30_000, stopMs + 10_000)).catch(() => undefined);
          await sleep(stopMs);
        } finally {
          process.kill(pid, "SIGCONT");
        }
      },
    },
    {
      name: "kill -9 of the event stream's NATS leader (restarted)",
      async strike(cc) {
        const m = await natsLeader(cc);
        await m.kill();
        await sleep(2_000);
        await m.restart();
      },
    },
    {
      name: `SIGSTOP of the event stream's NATS leader for ${stopMs / 1000} s`,
      async strike(cc) {
        const m = await natsLeader(cc);
        const pid = m.process().pid;
        process.kill(pid, "SIGSTOP");
        try {
          await sleep(stopMs);
        } finally {
          process.kill(pid, "SIGCONT");
        }
      },
    },
    {
      name: `test host cut off (link down) for ${Math.max(30_000, stopMs) / 1000} s, then back`,
      hostsOnly: true,
      nodeFails: true,
      async strike(cc) {
        const i = cc.nodes - 1;
        // The host has something to lose: a ready pod of the RC (the scale goes on meanwhile).
        const lost = await waitFor(
          async () => {
            const on = (await webPods(cc)).filter((p) => p.spec?.nodeName === hostNode(i) && isReady(p));
            return on.length > 0 ? on.length : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 250, message: `a ready pod on ${hostNode(i)}` },
        );
        const t0 = Date.now();
        cc.hosts!.cut(i);
        try {
          // Its pods replaced elsewhere while it is away (the grace, then eviction): as many ready pods as asked, none on it.
          await waitFor(
            async () => {
              const rc = unwrap(await cc.c.client.get("replicationcontrollers", "default", "web")) as ReplicationController;
              const ready = (await webPods(cc)).filter((p) => p.spec?.nodeName !== hostNode(i) && isReady(p));
              return ready.length === rc.spec?.replicas;
            },
            { timeoutMs: 120_000, intervalMs: 250, message: `the pods of ${hostNode(i)} replaced on other hosts` },
          );
          cc.notes.push(`${hostNode(i)} cut off with ${lost} ready pod(s) → as many ready pods as asked on the other hosts after ${Date.now() - t0} ms`);
          await sleep(Math.max(0, Math.max(30_000, stopMs) - (Date.now() - t0)));
        } finally {
          cc.hosts!.restore(i);
        }
        // Back: Ready again, and the pods it ran before are gone from it (their namespaces removed).
        await waitFor(
          async () =>
            (unwrap(await cc.c.client.get("nodes", "", hostNode(i))) as Node).status?.conditions.some((x) => x.type === "Ready" && x.status === "True") ??
            false,
          { timeoutMs: 60_000, message: `${hostNode(i)} Ready again` },
        );
      },
    },
    // A whole-store and a whole-bus outage: no failover can help, the control plane is away for stopMs.
    {
      name: `SIGSTOP of every Redis server and Sentinel for ${stopMs / 1000} s (the store away)`,
      async strike(cc) {
        await stopped(
          [...cc.ha.nodes, ...cc.ha.sentinels].map((m) => m.process().pid),
          stopMs,
        );
      },
    },
    {
      name: `SIGSTOP of every NATS server for ${stopMs / 1000} s (the bus away)`,
      async strike(cc) {
        await stopped(
          cc.c.natsCluster!.members.map((m) => m.process().pid),
          stopMs,
        );
      },
    },
  ];
}

/** SIGSTOPs every process in `pids` for `ms`, then SIGCONTs them all. */
async function stopped(pids: number[], ms: number): Promise<void> {
  for (const pid of pids) process.kill(pid, "SIGSTOP");
  try {
    await sleep(ms);
  } finally {
    for (const pid of pids) process.kill(pid, "SIGCONT");
  }
}

const metaOf = (o: ApiObject) => (unwrap(o) as { metadata?: { name: string; resourceVersion: string } }).metadata!;
const isReady = (p: Pod): boolean => p.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** What one fault cost. */
export interface FaultResult {
  fault: string;
  /** From the fault's clearing to converged. */
  convergedMs: number;
  acknowledged: number;
  refused: number;
  /** On test hosts: the client's requests to the Service from the strike to converged, and how many failed. */
  requests?: { total: number; failed: number };
  /** What the fault measured (a host's pods replaced after …). */
  notes: string[];
}

/**
 * Retries `fn` until it succeeds (the api may be away during the fault), up
 * to `timeoutMs` — counted from when `since()` says the fault cleared, when
 * given (a 5-minute outage outlasts any fixed budget).
 */
async function retrying<T>(fn: () => Promise<T>, timeoutMs = 120_000, since?: () => number | undefined): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const from = since ? since() : t0;
      if (from !== undefined && Date.now() - from > timeoutMs) throw err;
      await sleep(250);
    }
  }
}

/** The runner's own questions (the scale, convergence checks) give up and ask again after this. */
const QUICK_MS = 2_000;

/** Strikes `fault` while the RC is scaled and a writer writes; checks everything once it cleared. */
export async function runFault(cc: ChaosCluster, fault: Fault): Promise<FaultResult> {
  const { c } = cc;
  const eventsBefore = new Set((await failureEvents(cc)).map((e) => e.uid));
  const podsBefore = new Set((await retrying(() => webPods(cc))).map((p) => p.metadata?.uid));
  const notes: string[] = [];
  const struck = Date.now();
  const acknowledged = new Map<string, string>();
  let refused = 0;
  let writing = true;
  const tag = `w${Date.now().toString(36)}`;
  const writer = (async () => {
    for (let i = 0; writing; i++) {
      try {
        const m = metaOf(await c.client.create(fromKubeJson({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `${tag}-${i}`, namespace: "default" } })));
        acknowledged.set(m.name, m.resourceVersion);
      } catch {
        refused++;
      }
      await sleep(50);
    }
  })();
  let want = 0;
  let cleared = 0;
  try {
    // The scale goes in as the fault strikes (retried while the api cannot take it).
    let clearedAt: number | undefined;
    // With a 2 s timeout, as kubectl's user would ask again: an update lost with a stopped server is retried
    // soon after the fault clears instead of waiting out the harness client's 15 s (an update that did land
    // and whose answer was lost conflicts on the retry's read-modify-write only if someone wrote between).
    const quick = c.client.withTimeout(QUICK_MS);
    const scaling = retrying(
      async () => {
        const rc = unwrap(await quick.get("replicationcontrollers", "default", "web")) as ReplicationController;
        if (want === 0) want = (rc.spec?.replicas ?? 3) === 3 ? 6 : 3;
        if (rc.spec!.replicas === want) return;
        rc.spec!.replicas = want;
        await quick.update({ kind: { $case: "replicationController", value: rc } });
      },
      120_000,
      () => clearedAt,
    );
    await Promise.all([fault.strike({ ...cc, notes }).finally(() => (clearedAt = Date.now())), scaling]);
    cleared = clearedAt ?? Date.now();
    await waitFor(() => converged(cc, want), { timeoutMs: 120_000, intervalMs: 250, message: `converged to ${want} ready pods after: ${fault.name}` });
  } finally {
    writing = false;
    await writer;
  }
  const convergedAt = Date.now();
  const convergedMs = convergedAt - cleared;
  let requests: FaultResult["requests"];
  if (cc.service) {
    // Once converged the Service answers every request (the endpoints and every host's rules caught up: 2 s).
    await sleep(2_000);
    const settled = Date.now();
    await sleep(5_000);
    const after = cc.service.between(settled, Date.now());
    assert.ok(after.length >= 10, `the client kept asking the Service after: ${fault.name}`);
    assert.deepEqual(
      after.filter((r) => !r.ok).map((r) => r.detail),
      [],
      `the Service answered every request once converged after: ${fault.name}`,
    );
    const during = cc.service.between(struck, convergedAt);
    requests = { total: during.length, failed: during.filter((r) => !r.ok).length };
  }
  // No acknowledged write lost.
  const lost: string[] = [];
  for (const [name, rv] of acknowledged) {
    const got = await retrying(async () => metaOf(await c.client.get("configmaps", "default", name)).resourceVersion).catch((e: unknown) => String(e));
    if (got !== rv) lost.push(`${name}@${rv}: ${got}`);
  }
  assert.deepEqual(lost, [], `no acknowledged write lost after: ${fault.name}`);
  // Stream sequence == revision once idle.
  await waitFor(async () => Number(await cc.redis.get("{choreo}:rev")) === (await streamState(cc.jsm)).lastRevision, {
    timeoutMs: 60_000,
    message: `Redis' revision == the log's last sequence after: ${fault.name}`,
  });
  // A control-plane fault is no node failure.
  if (!fault.nodeFails) {
    const failures = (await failureEvents(cc)).filter((e) => !eventsBefore.has(e.uid)).map((e) => e.what);
    assert.deepEqual(failures, [], `no node taken for failed after: ${fault.name}`);
    // … and restarts no pod: every pod the scale keeps is one that ran before (a scale-down removes extras only).
    const kept = (await retrying(() => webPods(cc))).filter((p) => podsBefore.has(p.metadata?.uid)).length;
    assert.equal(kept, Math.min(podsBefore.size, want), `no pod replaced after: ${fault.name}`);
  }
  if (cc.hosts) {
    // No pod orphaned: every pod namespace on this machine belongs to a pod the api has (a cut-off host's stale pods removed on its return).
    const uids = new Set((await retrying(() => cc.c.client.list("pods"))).items.map((o) => (unwrap(o) as Pod).metadata?.uid ?? ""));
    await waitFor(() => podNamespaces().every((uid) => uids.has(uid)), {
      timeoutMs: 60_000,
      message: `no pod orphaned on a host after: ${fault.name} (${podNamespaces()
        .filter((u) => !uids.has(u))
        .join(", ")})`,
    });
  }
  return { fault: fault.name, convergedMs, acknowledged: acknowledged.size, refused, ...(requests ? { requests } : {}), notes };
}

async function failureEvents(cc: ChaosCluster): Promise<{ uid: string; what: string }[]> {
  return (await retrying(() => cc.c.client.list("events"))).items
    .map((o) => unwrap(o) as { metadata?: { uid: string }; reason?: string; involvedObject?: { name: string } })
    .filter((e) => e.reason === "NodeNotReady" || e.reason === "TaintManagerEviction")
    .map((e) => ({ uid: e.metadata?.uid ?? "", what: `${e.reason} ${e.involvedObject?.name}` }));
}

/** The pod uids with a network namespace on this machine (the process runtime's, NAMES.netns). */
function podNamespaces(): string[] {
  const prefix = NAMES.netns("");
  return (existsSync("/run/netns") ? readdirSync("/run/netns") : []).filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
}

/** The RC's pods not being deleted. */
async function webPods(cc: ChaosCluster): Promise<Pod[]> {
  return (await cc.c.client.list("pods", { namespace: "default", labelSelector: "app=web" })).items
    .map((o) => unwrap(o) as Pod)
    .filter((p) => !p.metadata?.deletionTimestamp);
}

/** The RC's live pods: exactly `want`, all ready, all its own; the Service's Endpoints exactly their addresses. */
async function converged(cc: ChaosCluster, want: number): Promise<boolean> {
  // A question lost with a dying server is asked again within 2 s, not after the harness client's 15 s: the
  // time to converge is the cluster's, not the runner's own request waiting out its timeout.
  const client = cc.c.client.withTimeout(QUICK_MS);
  try {
    const rc = unwrap(await client.get("replicationcontrollers", "default", "web")) as ReplicationController;
    const pods = (await client.list("pods", { namespace: "default", labelSelector: "app=web" })).items
      .map((o) => unwrap(o) as Pod)
      .filter((p) => !p.metadata?.deletionTimestamp);
    if (pods.length !== want || !pods.every(isReady)) return false;
    if (!pods.every((p) => p.metadata?.ownerReferences.some((r) => r.uid === rc.metadata?.uid && r.controller))) return false;
    const ep = unwrap(await client.get("endpoints", "default", "web")) as Endpoints;
    const listed = ep.subsets.flatMap((s) => s.addresses.map((a) => a.targetRef?.name ?? a.ip)).sort();
    return JSON.stringify(listed) === JSON.stringify(pods.map((p) => p.metadata?.name).sort());
  } catch {
    return false;
  }
}
