// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { startStack, type Stack } from "@choreo/api/testing";
import { BridgeNetwork } from "../net/bridge-network.js";
import { cleanupNode } from "../net/cleanup.js";
import { run } from "../exec.js";
import { claimTestCidrs, leftovers, testPod, wget, type TestPod } from "../net/test-pods.js";
import { NAMES } from "../net/types.js";
import { ServiceProxy } from "./service-proxy.js";

const WAIT = { timeoutMs: 20_000 };
const { cidrs, span } = claimTestCidrs();
const tag = `px${process.pid}`;
const node = `${tag}-node`;
const prefix = NAMES.chainPrefix(node);
// A second agent's proxy on the same machine, with its own chains.
const otherPrefix = NAMES.chainPrefix(`${tag}-other`);
const proxyChains = (p: string): string[] => [`${p}SERVICES`, `${p}SVC-`, `${p}SEP-`, `${p}NODEPORTS`, `${p}PX-POST`];
const nodePort = 30000 + (process.pid % 2700);

/** Asks `url` until every name in `want` answered; fails on a name outside `allowed`. */
async function answeredBy(url: string, want: string[], allowed: string[], netns?: string): Promise<void> {
  const seen = new Set<string>();
  await waitFor(
    async () => {
      const body = (await wget(url, netns)).trim();
      assert.ok(allowed.includes(body), `unexpected answer ${body}`);
      seen.add(body);
      return want.every((w) => seen.has(w));
    },
    { ...WAIT, message: `${want.join(", ")} answering ${url}` },
  );
}

describe("service proxy", () => {
  let s: Stack;
  const net = new BridgeNetwork({ node, podCidr: cidrs[0], clusterCidr: span, log: silentLogger() });
  const pods: TestPod[] = [];
  const ips: string[] = [];
  const running: { ac: AbortController; done: Promise<void> }[] = [];
  const startProxy = (chainPrefix: string): { ac: AbortController; done: Promise<void> } => {
    const proxy = new ServiceProxy({ node, client: s.client, nc: s.nc, jsm: s.jsm, log: silentLogger(), chainPrefix });
    const ac = new AbortController();
    const r = { ac, done: proxy.start(ac.signal) };
    running.push(r);
    return r;
  };

  before(async () => {
    s = await startStack();
    await net.init();
    for (const name of ["a", "b", "client"]) {
      const p = await testPod(`${tag}-${name}`);
      pods.push(p);
      ips.push(await net.attach(p.uid, p.netnsPath));
      if (name !== "client") await p.serve(`pod-${name}`, 8080);
    }
  });

  after(async () => {
    for (const r of running) r.ac.abort();
    await Promise.all(running.map((r) => r.done.catch(() => undefined)));
    for (const [i, p] of pods.entries()) {
      await net.detach(p.uid, ips[i] ?? "").catch(() => undefined);
      await p.remove().catch(() => undefined);
    }
    await net.destroy().catch(() => undefined);
    // The second proxy stands for an agent without its network here: its loopback guard is the clean-up's.
    await cleanupNode(`${tag}-other`);
    await s?.stop();
    assert.deepEqual(await leftovers([prefix, otherPrefix, NAMES.bridge(node), tag]), []);
  });

  it("sends a Service's traffic to its ready endpoints, follows changes, and cleans up", async () => {
    const [ipA, ipB] = ips as [string, string];
    const first = startProxy(prefix);
    const svc = unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "web", namespace: "default" },
          spec: { type: "NodePort", selector: { app: "web" }, ports: [{ name: "http", port: 80, targetPort: 8080, nodePort }] },
        }),
      ),
    ) as Service;
    const vip = svc.spec?.clusterIp ?? "";
    const endpoints = (addresses: string[]) =>
      fromKubeJson({
        apiVersion: "v1",
        kind: "Endpoints",
        metadata: { name: "web", namespace: "default" },
        subsets: [
          { addresses: addresses.map((ip) => ({ ip })), notReadyAddresses: [{ ip: "10.244.0.250" }], ports: [{ name: "http", port: 8080, protocol: "TCP" }] },
        ],
      });
    const ep = unwrap(await s.client.create(endpoints([ipA, ipB]))) as Endpoints;
    const both = ["pod-a", "pod-b"];

    await answeredBy(`http://${vip}:80/`, both, both);
    await answeredBy(`http://${vip}:80/`, both, both, pods[2]!.netns);
    // Hairpin: pod a through its own Service lands on itself too.
    await answeredBy(`http://${vip}:80/`, ["pod-a"], both, pods[0]!.netns);
    // Node ports on 127.0.0.1 from the host itself, with the loopback guard in place.
    assert.ok((await run("iptables-save", ["-t", "filter"])).includes(`-A INPUT -j ${prefix}LOCALNET`), "the 127.0.0.0/8 guard is jumped");
    await answeredBy(`http://127.0.0.1:${nodePort}/`, both, both);

    // b leaves the endpoints: after the rewrite only a answers, from everywhere.
    ep.subsets[0]!.addresses = ep.subsets[0]!.addresses.filter((a) => a.ip === ipA);
    await s.client.update({ kind: { $case: "endpoints", value: ep } });
    await waitFor(async () => !(await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${ipB}:8080`), {
      ...WAIT,
      message: "b no longer targeted",
    });
    for (let i = 0; i < 10; i++) assert.equal((await wget(`http://${vip}:80/`, pods[2]!.netns)).trim(), "pod-a");

    // Another agent's proxy writes the same rules in its own chains; stopping the first leaves it serving.
    const second = startProxy(otherPrefix);
    await waitFor(async () => (await run("iptables-save", ["-t", "nat"])).includes(`-A ${otherPrefix}SERVICES -d ${vip}/32`), {
      ...WAIT,
      message: "second proxy synced",
    });
    first.ac.abort();
    await first.done;
    assert.deepEqual(await leftovers(proxyChains(prefix)), [], "the first proxy's chains are gone");
    assert.notDeepEqual(await leftovers([`${prefix}FORWARD`]), [], "the node's network chains stay");
    assert.notDeepEqual(await leftovers([`${prefix}LOCALNET`]), [], "the loopback guard stays while route_localnet does");
    for (let i = 0; i < 5; i++) assert.equal((await wget(`http://${vip}:80/`, pods[2]!.netns)).trim(), "pod-a");
    assert.equal((await wget(`http://127.0.0.1:${nodePort}/`)).trim(), "pod-a");

    // No ready endpoint: refused at once instead of a hanging connection.
    await s.client.delete("endpoints", "default", "web");
    await waitFor(
      async () => (await run("iptables-save", ["-t", "filter"])).includes(`-A ${otherPrefix}SERVICES -d ${vip}/32 -p tcp -m tcp --dport 80 -j REJECT`),
      { ...WAIT, message: "reject rule" },
    );
    await assert.rejects(wget(`http://${vip}:80/`), /refused/);

    second.ac.abort();
    await second.done;
    assert.deepEqual(await leftovers(proxyChains(otherPrefix)), [], "the second proxy's chains are gone");
  });

  it("leaves an unreachable peer's endpoints out and forgets the unanswered connections sent there: their next SYN reaches a live endpoint", async () => {
    const [ipA, dead] = ips as [string, string];
    // Pod b stands for an endpoint on a node gone silent: its SYNs are dropped, nothing answers.
    const silence = ["netns", "exec", pods[1]!.netns, "iptables", "-I", "INPUT", "-p", "tcp", "--dport", "8080", "-j", "DROP"];
    await run("ip", silence);
    const left = new Set<string>(["here"]);
    const listeners: (() => void)[] = [];
    const peers = { unreachable: () => left, onChange: (fn: () => void) => void listeners.push(fn) };
    const proxy = new ServiceProxy({ node, client: s.client, nc: s.nc, jsm: s.jsm, log: silentLogger(), chainPrefix: prefix, peers });
    const ac = new AbortController();
    const r = { ac, done: proxy.start(ac.signal) };
    running.push(r);
    const svc = unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "peers", namespace: "default" },
          spec: { selector: { app: "peers" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
        }),
      ),
    ) as Service;
    const vip = svc.spec?.clusterIp ?? "";
    await s.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Endpoints",
        metadata: { name: "peers", namespace: "default" },
        subsets: [
          {
            addresses: [
              { ip: dead, nodeName: "gone" },
              { ip: ipA, nodeName: "here" },
            ],
            ports: [{ name: "http", port: 8080, protocol: "TCP" }],
          },
        ],
      }),
    );
    // First "here" is the one left out: every new connection goes to the silent address.
    await waitFor(async () => proxy.leftOut === 1 && (await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${dead}:8080`), {
      ...WAIT,
      message: "rules written, one endpoint left out",
    });
    assert.ok(!(await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${ipA}:8080`), "pod a left out");
    const asked = run("ip", ["netns", "exec", pods[2]!.netns, "timeout", "6", "busybox", "wget", "-q", "-O", "-", `http://${vip}:80/`]).then(
      (out) => out.trim(),
      (err: unknown) => `failed: ${String(err)}`,
    );
    await waitFor(async () => (await run("conntrack", ["-L", "-p", "tcp", "--reply-src", dead])).includes("SYN_SENT"), {
      ...WAIT,
      message: "a SYN sent to the silent endpoint",
    });
    // The probes change their mind: "gone" is silent, "here" answers.
    left.clear();
    left.add("gone");
    for (const fn of listeners) fn();
    assert.equal(await asked, "pod-a", "the request started toward the silent endpoint was answered by a live one");
    assert.ok(!(await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${dead}:8080`), "the silent endpoint left out");
    // None left but the silent one: fail open, it keeps its rules.
    left.add("here");
    for (const fn of listeners) fn();
    // (leftOut is counted as the sync ends, after its rules are in: both, not one then the other.)
    await waitFor(async () => proxy.leftOut === 0 && (await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${dead}:8080`), {
      ...WAIT,
      message: "fail open: the silent endpoint back in the rules, none left out",
    });
    ac.abort();
    await r.done;
    silence[4] = "-D";
    await run("ip", silence);
    await s.client.delete("endpoints", "default", "peers");
    await s.client.delete("services", "default", "peers");
  });

  it("a restarted proxy keeps the rules it finds until its caches are listed (kill -9 of an agent loses no request)", async () => {
    const [ipA] = ips as [string, string];
    // The proxy of the agent that dies: its rules stay in the kernel (kill -9 runs no clean-up; here it just stops changing them).
    const dead = startProxy(prefix);
    const svc = unwrap(
      await s.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "kept", namespace: "default" },
          spec: { selector: { app: "kept" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
        }),
      ),
    ) as Service;
    const vip = svc.spec?.clusterIp ?? "";
    await s.client.create(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Endpoints",
        metadata: { name: "kept", namespace: "default" },
        subsets: [{ addresses: [{ ip: ipA }], ports: [{ name: "http", port: 8080, protocol: "TCP" }] }],
      }),
    );
    await answeredBy(`http://${vip}:80/`, ["pod-a"], ["pod-a"], pods[2]!.netns);
    // The restarted agent's proxy, whose first list of Services and Endpoints is held back (an api slow to answer after the restart).
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    let listing = (): void => undefined;
    const listed = new Promise<void>((r) => (listing = r));
    const slow = Object.create(s.client, {
      list: {
        value: async (...args: Parameters<typeof s.client.list>) => {
          listing();
          await gate;
          return s.client.list(...args);
        },
      },
    }) as typeof s.client;
    const proxy = new ServiceProxy({ node, client: slow, nc: s.nc, jsm: s.jsm, log: silentLogger(), chainPrefix: prefix });
    const ac = new AbortController();
    const restarted = { ac, done: proxy.start(ac.signal) };
    running.push(restarted);
    try {
      // Its informers are listing: whatever it does before it knows the Services is done.
      await listed;
      assert.ok((await run("iptables-save", ["-t", "nat"])).includes(`--to-destination ${ipA}:8080`), "the Service's rules are still in place");
      for (let i = 0; i < 5; i++) assert.equal((await wget(`http://${vip}:80/`, pods[2]!.netns)).trim(), "pod-a");
      // A pod deleted meanwhile waits for the Endpoints too: before they are listed, any address may be named.
      assert.ok(proxy.lists("10.250.255.254"), "unknown before the Endpoints are listed");
    } finally {
      release();
    }
    await waitFor(() => proxy.syncs > 0 && proxy.hasSynced(), { ...WAIT, message: "the restarted proxy synced" });
    assert.ok(!proxy.lists("10.250.255.254") && proxy.lists(ipA), "listed: only the Endpoints' ready addresses");
    for (let i = 0; i < 5; i++) assert.equal((await wget(`http://${vip}:80/`, pods[2]!.netns)).trim(), "pod-a");
    restarted.ac.abort();
    await restarted.done;
    dead.ac.abort();
    await dead.done;
    assert.deepEqual(await leftovers(proxyChains(prefix)), [], "the chains are gone");
    await s.client.delete("endpoints", "default", "kept");
    await s.client.delete("services", "default", "kept");
  });
});
