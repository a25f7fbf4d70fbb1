// test-tier: servers
// Hosts on two L2 segments: three test hosts (network namespaces,
// support/test-hosts.ts), host-a and host-b on segment A, host-c on segment B,
// this machine routing between the two; a node agent with the process runtime
// and no --pod-cidr on each (--backend auto, the default), the control plane
// on this machine's namespace.
//
// - every node publishes its VTEP (choreo.dev/backend-data); host-a and host-b
//   route each other's blocks via their addresses (host-gw: on-link), and
//   host-c's (and host-c theirs) through the VXLAN device choreo.vx (onlink
//   route via the VTEP, a permanent neighbour and an FDB entry each);
// - a web pod on each host and a Service over them; a client pod on host-a and
//   one on host-c reach every pod by IP, fetch 200 KB from each (TCP across
//   the overlay's smaller MTU) and reach every pod through the Service's name;
// - the overlay's UDP port answers other nodes only: a datagram from this
//   machine (the router, not a node) is dropped by the guard chain, while the
//   nodes' own traffic passed it;
// - kill -9 of host-c's agent and its device removed (a reboot's loss): the
//   restarted agent makes the device again with the same MAC, host-a's pods
//   reach host-c's again, and no host holds an entry twice;
// - host-c's Node deleted (its agent stopped): its route, neighbour and FDB
//   entries leave host-a and host-b;
// - the clean-up's removal of routes and device (cleanupAll's last steps)
//   leaves host-a none of them.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createSocket } from "node:dgram";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { VXLAN_GUARD_CHAIN, VXLAN_PORT, parseVtep, vtepMac, type VtepData } from "@choreo/node-agent/net/vxlan";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";
import { service } from "./support/real-pods-scenarios.js";
import { kubectlOf, startHostAgent } from "./support/host-agents.js";
import { createTestHosts, type TestHosts } from "./support/test-hosts.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const WAIT = { timeoutMs: 90_000 };
const BIG = 200 * 1024;

const webPod = (name: string, node: string): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: {app: vweb}
spec:
  nodeName: ${node}
  containers:
  - name: web
    image: local/busybox:1.35
    command: ["sh", "-c", "mkdir -p /www && echo $POD_NAME > /www/index.html && head -c ${BIG} /dev/zero > /www/big && exec httpd -f -p 8080 -h /www"]
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    ports:
    - {name: http, containerPort: 8080}
`;

const clientPod = (name: string, node: string, script: string): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  nodeName: ${node}
  restartPolicy: Never
  containers:
  - name: main
    image: local/busybox:1.35
    command: ["sh", "-c", ${JSON.stringify(script)}]
`;

describe("test hosts on two L2 segments: host-gw on one, VXLAN across, pods and a Service over both", () => {
  let hosts: TestHosts;
  let c: TestCluster;
  let kubeconfig: string;
  const nodes = ["host-a", "host-b", "host-c"];
  let cidrs: string[] = [];
  let vteps: VtepData[] = [];
  let pods: Pod[] = [];

  const { kubectl, apply } = kubectlOf(
    () => c,
    () => kubeconfig,
  );
  const node = async (name: string): Promise<Node> => unwrap(await c.client.get("nodes", "", name)) as Node;
  const ready = (n: Node): boolean => n.status?.conditions.some((x) => x.type === "Ready" && x.status === "True") ?? false;
  const routes = (i: number): string[] =>
    hosts
      .exec(i, "ip", ["-4", "route", "show", "proto", "199"])
      .split("\n")
      .filter(Boolean)
      .map((l) => l.trim());
  const neigh = (i: number): string[] => {
    try {
      return hosts.exec(i, "ip", ["-4", "neigh", "show", "dev", "choreo.vx"]).split("\n").filter(Boolean);
    } catch {
      return []; // no device
    }
  };
  const fdb = (i: number): string[] => {
    try {
      return hosts
        .exec(i, "bridge", ["fdb", "show", "dev", "choreo.vx"])
        .split("\n")
        .filter((l) => l.includes(" dst "));
    } catch {
      return [];
    }
  };
  const startAgent = (i: number): Promise<unknown> => startHostAgent(c, hosts, i, nodes[i]!);
  /** What host i should hold toward host j: a host-gw route on one segment, an overlay route with its neighbour and FDB entry across. */
  const expected = (i: number, j: number): { route: string; neigh?: string; fdb?: string } => {
    const same = hosts.hosts[i]!.segment === hosts.hosts[j]!.segment;
    if (same) return { route: `${cidrs[j]} via ${hosts.hosts[j]!.address} dev eth0` };
    const v = vteps[j]!;
    return {
      route: `${cidrs[j]} via ${v.vtep} dev choreo.vx onlink`,
      neigh: `${v.vtep} lladdr ${v.mac} PERMANENT`,
      fdb: `${v.mac} dst ${hosts.hosts[j]!.address} self permanent`,
    };
  };
  /** Host i holds exactly the entries toward the live peers `peers` (one each: no duplicate, nothing stale). */
  const holdsExactly = (i: number, peers: readonly number[]): boolean => {
    const want = peers.map((j) => expected(i, j));
    const r = routes(i);
    const n = neigh(i).map((l) => l.trim());
    const f = fdb(i).map((l) => l.trim());
    return (
      JSON.stringify(r.slice().sort()) === JSON.stringify(want.map((w) => w.route).sort()) &&
      JSON.stringify(n.sort()) === JSON.stringify(want.flatMap((w) => (w.neigh ? [w.neigh] : [])).sort()) &&
      JSON.stringify(f.sort()) === JSON.stringify(want.flatMap((w) => (w.fdb ? [w.fdb] : [])).sort())
    );
  };
  const tables = (): string =>
    [0, 1, 2].map((i) => `--- ${nodes[i]}\n${routes(i).join("\n")}\nneigh: ${neigh(i).join("; ")}\nfdb: ${fdb(i).join("; ")}`).join("\n");
  /** Runs `script` in a client pod on `onNode` to its end; its log. */
  const client = async (name: string, onNode: string, script: string): Promise<string> => {
    await apply(`${name}.yaml`, clientPod(name, onNode, script + "; echo DONE"));
    const log = await waitFor(
      async () => {
        const r = await run("kubectl", ["logs", name], kubeconfig);
        return r.code === 0 && r.stdout.includes("DONE") ? r.stdout : undefined;
      },
      { ...WAIT, message: `the client pod ${name} finished` },
    );
    await kubectl("delete", "pod", name, "--wait=false");
    return log;
  };

  before(async () => {
    execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "services/node-agent/src/node-setup.ts"), "prepare", "--runtime", "process"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    hosts = createTestHosts(3, { segments: [0, 0, 1] });
    try {
      c = await startCluster({
        natsHost: hosts.gateway,
        // A service range of its own: another test file's cluster on this machine programs the same default range.
        env: { CHOREO_SERVICE_CIDR: `10.96.${150 + Math.floor(Math.random() * 50)}.0/24` },
        actors: [{ name: "scheduler" }, { name: "endpoints" }],
      });
    } catch (err) {
      hosts.destroy();
      throw err;
    }
    kubeconfig = writeKubeconfig(c);
    for (let i = 0; i < nodes.length; i++) await startAgent(i);
  });

  after(async () => {
    await c?.stop();
    hosts?.destroy();
  });

  it("each node publishes its VTEP; host-gw between host-a and host-b, VXLAN to and from host-c", () =>
    withLogsOnFailure(c, async () => {
      assert.notEqual(hosts.hosts[0]!.segment, hosts.hosts[2]!.segment);
      assert.notEqual(hosts.segments[0]!.subnet, hosts.segments[1]!.subnet, "two subnets");
      const all = await waitFor(
        async () => {
          const ns = await Promise.all(nodes.map((n) => node(n).catch(() => undefined)));
          return ns.every((n) => n && ready(n) && n.spec?.podCidr && parseVtep(n.metadata?.annotations)) ? (ns as Node[]) : undefined;
        },
        { ...WAIT, message: "3 nodes Ready with a pod CIDR and a published VTEP" },
      );
      cidrs = all.map((n) => n.spec!.podCidr);
      vteps = all.map((n) => parseVtep(n.metadata?.annotations)!);
      for (let i = 0; i < 3; i++) {
        assert.equal(vteps[i]!.mac, vtepMac(nodes[i]!), "the device's MAC, from the node's name");
        assert.equal(vteps[i]!.vtep, cidrs[i]!.replace(/\/\d+$/, ""), "the VTEP address is the block's network address");
        assert.deepEqual([vteps[i]!.vni, vteps[i]!.port], [1, 4789]);
      }
      await waitFor(
        () =>
          [0, 1, 2].every((i) =>
            holdsExactly(
              i,
              [0, 1, 2].filter((j) => j !== i),
            ),
          ),
        {
          timeoutMs: 30_000,
          message: "host-gw between host-a and host-b, VXLAN between them and host-c",
        },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${tables()}`);
      });
      // The device: VNI 1, port 4789, no learning, 50 bytes below the underlay's MTU, its VTEP address only.
      for (let i = 0; i < 3; i++) {
        const link = hosts.exec(i, "ip", ["-d", "link", "show", "choreo.vx"]);
        assert.match(link, /mtu 1450 /);
        assert.match(link, new RegExp(`link/ether ${vteps[i]!.mac} `));
        assert.match(link, new RegExp(`vxlan id 1 local ${hosts.hosts[i]!.address.replace(/\./g, "\\.")} dev eth0 .*dstport 4789 .*nolearning`));
        assert.match(hosts.exec(i, "ip", ["-4", "-o", "addr", "show", "dev", "choreo.vx"]), new RegExp(`inet ${vteps[i]!.vtep}/32 `));
      }
      process.stdout.write(`# ${nodes[0]} routes:\n${routes(0).join("\n")}\n# ${nodes[2]} routes:\n${routes(2).join("\n")}\n`);
    }));

  it("a pod on each host; clients on host-a and host-c reach every pod by IP (200 KB each) and through the Service's name", () =>
    withLogsOnFailure(c, async () => {
      for (let i = 0; i < 3; i++) await apply(`web-${i}.yaml`, webPod(`web-${i}`, nodes[i]!));
      await apply("svc.yaml", service("vweb", { app: "vweb" }));
      pods = await waitFor(
        async () => {
          const ps = await Promise.all([0, 1, 2].map(async (i) => unwrap(await c.client.get("pods", "default", `web-${i}`)) as Pod));
          const eps = (await kubectl("get", "endpoints", "vweb", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean);
          return ps.every((p) => p.status?.phase === "Running" && p.status.podIp) && eps.length === 3 ? ps : undefined;
        },
        { ...WAIT, message: "3 web pods Running and in the endpoints" },
      );
      const ips = pods.map((p) => p.status!.podIp);
      for (let i = 0; i < 3; i++) assert.ok(ips[i]!.startsWith(cidrs[i]!.replace(/0\/\d+$/, "")), `web-${i} has an address of ${nodes[i]}'s block`);
      const script = [
        ...ips.map((ip) => `wget -q -O - http://${ip}:8080/ || echo FAILED ${ip}`),
        ...ips.map((ip) => `echo BIG $(wget -q -O - http://${ip}:8080/big | wc -c) ${ip}`),
        "for i in $(seq 1 30); do wget -q -O - http://vweb.default.svc.cluster.local:80/ || echo FAILED svc; done",
      ].join("; ");
      for (const [name, on] of [
        ["client-a", nodes[0]!],
        ["client-c", nodes[2]!],
      ] as const) {
        const lines = (await client(name, on, script)).split("\n").filter((l) => l && l !== "DONE");
        assert.deepEqual(
          lines.filter((l) => l.startsWith("FAILED")),
          [],
          `${name}: no request failed`,
        );
        assert.deepEqual(lines.slice(0, 3), ["web-0", "web-1", "web-2"], `${name}: each pod answered on its IP`);
        assert.deepEqual(
          lines.slice(3, 6),
          ips.map((ip) => `BIG ${BIG} ${ip}`),
          `${name}: 200 KB from each pod, whole`,
        );
        const bySvc = lines.slice(6);
        assert.equal(bySvc.length, 30);
        assert.deepEqual([...new Set(bySvc)].sort(), ["web-0", "web-1", "web-2"], `${name}: every pod answered through the Service`);
      }
    }));

  it("the overlay's UDP port answers other nodes only: a datagram from a machine that is not a node is dropped, the nodes' traffic passed", () =>
    withLogsOnFailure(c, async () => {
      // Per guard rule of host i: [packets, target, source].
      const guard = (i: number): { pkts: number; target: string; source: string }[] =>
        hosts
          .exec(i, "iptables", ["-nvxL", VXLAN_GUARD_CHAIN])
          .split("\n")
          .slice(2)
          .filter(Boolean)
          .map((l) => l.trim().split(/\s+/))
          .map((f) => ({ pkts: Number(f[0]), target: f[2]!, source: f[7]! }));
      for (const i of [0, 2]) {
        const others = [0, 1, 2].filter((j) => j !== i).map((j) => hosts.hosts[j]!.address);
        assert.deepEqual(
          guard(i).map((r) => `${r.target} ${r.source}`),
          [...others.sort().map((a) => `RETURN ${a}`), "DROP 0.0.0.0/0"],
          `${nodes[i]}: the other nodes pass, nothing else`,
        );
        assert.match(
          hosts.exec(i, "iptables", ["-S", "INPUT"]).split("\n")[1] ?? "",
          new RegExp(`--dport ${VXLAN_PORT} -j ${VXLAN_GUARD_CHAIN}$`),
          "first in INPUT",
        );
      }
      const fromC = guard(0).find((r) => r.source === hosts.hosts[2]!.address)!;
      assert.ok(fromC.pkts > 0, "host-c's encapsulated traffic reached host-a through the guard");
      const dropped = guard(0).find((r) => r.target === "DROP")!.pkts;
      // This machine routes between the segments but is no node: its datagram to host-a's overlay port is dropped.
      const sock = createSocket("udp4");
      await new Promise<void>((res, rej) => sock.send(Buffer.alloc(64), VXLAN_PORT, hosts.hosts[0]!.address, (err) => (err ? rej(err) : res())));
      sock.close();
      await waitFor(() => guard(0).find((r) => r.target === "DROP")!.pkts > dropped, { timeoutMs: 5_000, message: "the stranger's datagram dropped" });
    }));

  it("kill -9 of host-c's agent and its device gone: restarted, it makes the device again, host-a's pods reach host-c's, no entry twice", () =>
    withLogsOnFailure(c, async () => {
      await c.actors.get(nodes[2]!)?.kill();
      // What a reboot loses: the device with its neighbour and FDB entries and the routes through it.
      hosts.exec(2, "ip", ["link", "del", "choreo.vx"]);
      assert.deepEqual(
        routes(2).filter((r) => r.includes("choreo.vx")),
        [],
      );
      await startAgent(2);
      await waitFor(
        () =>
          [0, 1, 2].every((i) =>
            holdsExactly(
              i,
              [0, 1, 2].filter((j) => j !== i),
            ),
          ),
        {
          timeoutMs: 60_000,
          message: "every host holds exactly one entry per peer again",
        },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${tables()}`);
      });
      assert.match(hosts.exec(2, "ip", ["-d", "link", "show", "choreo.vx"]), new RegExp(`link/ether ${vteps[2]!.mac} `), "the same MAC as before");
      const ip = pods[2]!.status!.podIp;
      const log = await client("asker", nodes[0]!, `for i in $(seq 1 20); do wget -q -O - http://${ip}:8080/ && break; sleep 0.5; done`);
      assert.match(log, /^web-2$/m, "a pod on host-a reached the pod on host-c");
    }));

  it("host-c's Node deleted: its route, neighbour and FDB entries leave host-a and host-b", () =>
    withLogsOnFailure(c, async () => {
      await c.actors.get(nodes[2]!)?.stop(10_000);
      await kubectl("delete", "node", nodes[2]!);
      await waitFor(() => holdsExactly(0, [1]) && holdsExactly(1, [0]), {
        timeoutMs: 30_000,
        message: "host-a and host-b hold only each other",
      }).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${tables()}`);
      });
    }));

  it("the clean-up's network part (what cleanupAll runs after the bridges) leaves host-a no choreo route, device, neighbour or FDB entry", () =>
    withLogsOnFailure(c, async () => {
      // As choreo down: the agent stops first (its routes and device stay), then the clean-up.
      await c.actors.get(nodes[0]!)?.stop(10_000);
      const script = [
        `const { removeRoutes } = await import(${JSON.stringify(path.join(ROOT, "services/node-agent/src/net/routes.ts"))});`,
        `const { removeVxlan } = await import(${JSON.stringify(path.join(ROOT, "services/node-agent/src/net/vxlan.ts"))});`,
        "await removeRoutes(); await removeVxlan(); await removeVxlan();",
      ].join(" ");
      assert.ok(routes(0).length > 0 && hosts.exec(0, "ip", ["link", "show", "choreo.vx"]).includes("choreo.vx"), "something to clean");
      hosts.exec(0, process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { timeoutMs: 30_000 });
      assert.deepEqual(routes(0), []);
      assert.throws(() => hosts.exec(0, "ip", ["link", "show", "choreo.vx"]), "the device is gone (a second removal is fine)");
      assert.deepEqual([neigh(0), fdb(0)], [[], []]);
      assert.throws(() => hosts.exec(0, "iptables", ["-S", VXLAN_GUARD_CHAIN]), "the overlay port's guard is gone");
      assert.doesNotMatch(hosts.exec(0, "iptables", ["-S", "INPUT"]), new RegExp(VXLAN_GUARD_CHAIN), "and its jump");
    }));
});
