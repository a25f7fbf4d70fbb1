// test-tier: servers
// Several machines: three test hosts (network namespaces with their own
// addresses on one test bridge, support/test-hosts.ts), each running a node
// agent with the process runtime and no --pod-cidr, the control plane on
// this machine's namespace.
//
// - each node gets its own block of the cluster CIDR from the api (node IPAM),
//   and every host routes the other hosts' blocks via their addresses (host-gw);
// - an RC of 3 web pods spreads over the 3 hosts; a client pod on one host
//   reaches every pod by its IP and through the Service's name (cluster DNS and
//   the service proxy on its host, the pods on the others);
// - kill -9 of a node agent (three times) while a client on its host asks the
//   Service: no request lost (the restarted proxy keeps the rules it finds);
// - a host cut off (link down) → within seconds the other hosts' peer probes
//   find it silent and their proxies give its pod no new connections, while
//   the api still has it Ready and in the Endpoints; the cut-off host, every
//   peer silent, leaves nobody out; its pod is replaced on another host; the
//   Service answers from the 3 live pods; plugged back, its agent removes the
//   stale pod (its namespace is gone) and the node is Ready again;
// - the endpoints actor down while the RC scales down → the deleted pod keeps
//   running until the endpoints drop it (its agent waits), and a client
//   asking the Service all along loses no request;
// - a deleted Node gives its block back; the routes to it go from every host;
// - a fourth host joins with `choreo join` (bootstrap token, CA hash, its
//   credential through a CSR and the exchange, run inside its namespace): its
//   Node gets a block and its InternalIP on the hosts' network, every host
//   routes to it, and a pod on another host reaches a pod on it.
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { serveNatsUsers } from "@choreo/kit/bus";
import { waitFor } from "@choreo/kit/testing";
import { NAMES } from "@choreo/node-agent/net/types";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";
import { service, webRc } from "./support/real-pods-scenarios.js";
import { kubectlOf, startHostAgent } from "./support/host-agents.js";
import { createTestHosts, type TestHosts } from "./support/test-hosts.js";
import { ServiceClient } from "./chaos/service-client.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const CHOREO_BIN = path.join(ROOT, "services/cli/bin/choreo.js");
const WAIT = { timeoutMs: 90_000 };

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

describe("three test hosts: node IPAM, host-gw routes, pods and a Service across hosts, a host cut off", () => {
  let hosts: TestHosts;
  let c: TestCluster;
  let kubeconfig: string;
  let joining: ChildProcess | undefined;
  const users = new AbortController();
  const nodes = ["host-a", "host-b", "host-c"];

  const { kubectl, apply } = kubectlOf(
    () => c,
    () => kubeconfig,
  );
  const node = async (name: string): Promise<Node> => unwrap(await c.client.get("nodes", "", name)) as Node;
  const ready = (n: Node): boolean => n.status?.conditions.some((x) => x.type === "Ready" && x.status === "True") ?? false;
  const webPods = async (): Promise<Pod[]> =>
    (await c.client.list("pods", { namespace: "default", labelSelector: "app=web" })).items
      .map((o) => unwrap(o) as Pod)
      .filter((p) => !p.metadata?.deletionTimestamp);
  const routes = (i: number): string => hosts.exec(i, "ip", ["-4", "route", "show", "proto", "199"]);
  const startAgent = (i: number): Promise<unknown> => startHostAgent(c, hosts, i, nodes[i]!);

  before(async () => {
    execFileSync(process.execPath, ["--import", "tsx", path.join(ROOT, "services/node-agent/src/node-setup.ts"), "prepare", "--runtime", "process"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    // Hosts 0-2 run agents started by the test; host 3 joins later with `choreo join`.
    hosts = createTestHosts(4);
    try {
      c = await startCluster({
        natsHost: hosts.gateway,
        // A service range of its own: another test file's cluster on this machine programs the same default range.
        // The api's https also listens on the hosts' network (its certificate names the address): where `choreo join` finds it.
        env: { CHOREO_SERVICE_CIDR: `10.96.${200 + Math.floor(Math.random() * 50)}.0/24`, CHOREO_ADVERTISE_ADDRESS: hosts.gateway },
        actors: [{ name: "scheduler", env: { CHOREO_NODE_GRACE_SECONDS: "8" } }, { name: "replication" }, { name: "endpoints" }],
      });
    } catch (err) {
      hosts.destroy();
      throw err;
    }
    kubeconfig = writeKubeconfig(c);
    // What choreo up does for joining nodes: it owns nats-server's users (here the harness does).
    serveNatsUsers(c.nc, c.nats, users.signal);
    for (let i = 0; i < nodes.length; i++) await startAgent(i);
  });

  after(async () => {
    users.abort();
    if (joining && joining.exitCode === null) {
      joining.kill("SIGTERM");
      await new Promise((r) => joining!.once("exit", r));
    }
    await c?.stop();
    hosts?.destroy();
  });

  it("each node gets its own block from the api; every host routes the others' blocks via their addresses", () =>
    withLogsOnFailure(c, async () => {
      const all = await waitFor(
        async () => {
          const ns = await Promise.all(nodes.map((n) => node(n).catch(() => undefined)));
          return ns.every((n) => n && ready(n) && n.spec?.podCidr) ? (ns as Node[]) : undefined;
        },
        { ...WAIT, message: "3 nodes Ready with a pod CIDR" },
      );
      const cidrs = all.map((n) => n.spec!.podCidr);
      for (const cidr of cidrs) assert.match(cidr, /^10\.244\.\d+\.0\/24$/, "a block of the cluster CIDR");
      assert.equal(new Set(cidrs).size, 3, "no block twice");
      await waitFor(
        () => {
          for (let i = 0; i < 3; i++) {
            const table = routes(i);
            for (let j = 0; j < 3; j++) {
              const want = `${cidrs[j]} via ${hosts.hosts[j]!.address}`;
              if ((i === j) === table.includes(want)) return false;
            }
          }
          return true;
        },
        { timeoutMs: 30_000, message: "every host routes the two other blocks, none its own" },
      );
    }));

  it("an RC of 3 web pods spreads over the hosts; a client on one host reaches every pod by IP and through the Service's name", () =>
    withLogsOnFailure(c, async () => {
      await apply("web.yaml", webRc("web", 3, { app: "web" }));
      await apply("svc.yaml", service("web", { app: "web" }));
      const pods = await waitFor(
        async () => {
          const ps = await webPods();
          const eps = (await kubectl("get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean);
          return ps.length === 3 && ps.every((p) => p.status?.phase === "Running") && eps.length === 3 ? ps : undefined;
        },
        { ...WAIT, message: "3 web pods Running and in the endpoints" },
      );
      assert.deepEqual(new Set(pods.map((p) => p.spec?.nodeName)), new Set(nodes), "one pod per host");
      const ips = pods.map((p) => p.status!.podIp);
      const script = [
        ...ips.map((ip) => `wget -q -O - http://${ip}:8080/ || echo FAILED ${ip}`),
        "for i in $(seq 1 60); do wget -q -O - http://web.default.svc.cluster.local:80/ || echo FAILED svc; done",
        "echo DONE",
      ].join("; ");
      await apply("client.yaml", clientPod("client", nodes[0]!, script));
      const log = await waitFor(
        async () => {
          const r = await run("kubectl", ["logs", "client"], kubeconfig);
          return r.code === 0 && r.stdout.includes("DONE") ? r.stdout : undefined;
        },
        { ...WAIT, message: "the client pod finished" },
      );
      const lines = log.split("\n").filter((l) => l && l !== "DONE");
      assert.deepEqual(
        lines.filter((l) => l.startsWith("FAILED")),
        [],
        "no request failed",
      );
      assert.equal(lines.length, 63);
      const byIp = lines.slice(0, 3).map((l) => l.split(" ")[1]);
      assert.deepEqual(
        byIp,
        pods.map((p) => p.metadata?.name),
        "each pod answered on its IP, across hosts",
      );
      const bySvc = new Set(lines.slice(3).map((l) => l.split(" ")[1]));
      assert.deepEqual([...bySvc].sort(), pods.map((p) => p.metadata!.name!).sort(), "every pod answered through the Service");
      await kubectl("delete", "pod", "client", "--wait=false");
    }));

  it("kill -9 of host-a's agent (three times) while a client on host-a asks the Service: no request lost", () =>
    withLogsOnFailure(c, async () => {
      const client = new ServiceClient(hosts, 0, `http://${await kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")}:80/`);
      const t0 = Date.now();
      client.start();
      try {
        await waitFor(() => client.between(t0, Date.now()).some((a) => a.ok), { ...WAIT, message: "the client answered" });
        for (let k = 0; k < 3; k++) {
          await c.actors.get(nodes[0]!)?.kill();
          await new Promise((r) => setTimeout(r, 1_000));
          await startAgent(0);
          // The restarted agent lists the Services and rewrites its rules meanwhile; the client goes on asking.
          const from = Date.now();
          await waitFor(() => client.between(from, Date.now()).length >= 30, { ...WAIT, message: "30 more requests" });
        }
      } finally {
        await client.stop();
      }
      const asked = client.between(t0, Date.now());
      const failed = asked.filter((a) => !a.ok);
      process.stdout.write(`# kill -9 of host-a's agent ×3: ${failed.length} of ${asked.length} requests failed\n`);
      assert.deepEqual(
        failed.map((a) => a.detail),
        [],
        "no request failed",
      );
    }));

  it("a host cut off → the other hosts leave its pod out before the api acts; its pod replaced on another host, the Service answering from 3 pods; back → its stale pod removed, Ready again", () =>
    withLogsOnFailure(c, async () => {
      const before = await webPods();
      const lost = before.find((p) => p.spec?.nodeName === nodes[2]);
      assert.ok(lost, "a web pod on host-c");
      const lostIp = lost.status!.podIp;
      const client = new ServiceClient(hosts, 0, `http://${await kubectl("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")}:80/`);
      client.start();
      const cutAt = Date.now();
      let replacedAfter = 0;
      hosts.cut(2);
      try {
        // host-a's probes find host-c silent: its proxy gives host-c's pod no new connections, without waiting for the control plane.
        await waitFor(() => !hosts.exec(0, "iptables-save", ["-t", "nat"]).includes(`--to-destination ${lostIp}:8080`), {
          ...WAIT,
          message: "host-a's rules leave host-c's pod out",
        });
        assert.ok(ready(await node(nodes[2]!)), "host-c still Ready in the api");
        const listed = (await kubectl("get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/);
        assert.ok(listed.includes(lostIp), "the Endpoints still list host-c's pod");
        assert.match(c.actors.get(nodes[0]!)!.output(), /"peer":"host-c".*"msg":"peer unreachable/);
        // host-c, every peer silent, takes it for its own side: it leaves nobody out (nothing to undo when it returns).
        await waitFor(() => c.actors.get(nodes[2]!)!.output().includes("most peers unreachable at once"), {
          ...WAIT,
          message: "host-c finds every peer silent",
        });
        const natC = hosts.exec(2, "iptables-save", ["-t", "nat"]);
        for (const p of before.filter((x) => x.spec?.nodeName !== nodes[2])) {
          assert.ok(natC.includes(`--to-destination ${p.status!.podIp}:8080`), `host-c still sends to ${p.spec?.nodeName}'s pod`);
        }
        const replaced = await waitFor(
          async () => {
            const ps = (await webPods()).filter((p) => p.metadata?.uid !== lost.metadata?.uid && p.status?.phase === "Running");
            return ps.length === 3 && ps.every((p) => p.spec?.nodeName !== nodes[2]) ? ps : undefined;
          },
          { ...WAIT, message: "3 web pods Running on the two hosts left" },
        );
        replacedAfter = Date.now() - cutAt;
        assert.equal(replaced.length, 3);
        // The Service answers from live pods only (the endpoints follow the replacement).
        await waitFor(
          async () => {
            const eps = (await kubectl("get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean).sort();
            return JSON.stringify(eps) === JSON.stringify(replaced.map((p) => p.status!.podIp).sort());
          },
          { ...WAIT, message: "the endpoints hold the 3 live pods" },
        );
      } finally {
        await client.stop();
      }
      const asked = client.between(cutAt, Date.now());
      process.stdout.write(
        `# host cut off → ${asked.filter((a) => !a.ok).length} of ${asked.length} requests from host-a failed until the endpoints dropped its pod\n`,
      );
      hosts.restore(2);
      await waitFor(async () => ready(await node(nodes[2]!)), { ...WAIT, message: "host-c Ready again" });
      // The evicted pod's object is gone; its agent removes what ran (the pod's network namespace with its processes).
      await waitFor(() => !execFileSync("ip", ["netns", "list"], { encoding: "utf8" }).includes(NAMES.netns(lost.metadata!.uid!)), {
        ...WAIT,
        message: "the stale pod's namespace removed on host-c",
      });
      process.stdout.write(`# host cut off → replacement Running after ${replacedAfter} ms\n`);
    }));

  it("the endpoints actor down while the RC scales down: the removed pod keeps serving until the endpoints drop it, and the client loses nothing", () =>
    withLogsOnFailure(c, async () => {
      const all = await webPods();
      assert.equal(all.length, 3);
      // A client on host-a asks the Service every 100 ms for the whole scenario.
      const script =
        "for i in $(seq 1 120); do wget -q -O - http://web.default.svc.cluster.local:80/ >/dev/null && echo OK || echo FAILED; sleep 0.1; done; echo DONE";
      await apply("asking.yaml", clientPod("asking", nodes[0]!, script));
      const logs = async (): Promise<string> => {
        const r = await run("kubectl", ["logs", "asking"], kubeconfig);
        return r.code === 0 ? r.stdout : "";
      };
      await waitFor(async () => (await logs()).includes("OK"), { ...WAIT, message: "the client asking the Service" });
      await c.actors.get("endpoints")?.stop(5_000);
      await kubectl("scale", "rc", "web", "--replicas=2");
      const removed = await waitFor(
        async () => {
          const ps = (await c.client.list("pods", { namespace: "default", labelSelector: "app=web" })).items.map((o) => unwrap(o) as Pod);
          return ps.find((p) => p.metadata?.deletionTimestamp);
        },
        { ...WAIT, message: "the RC deletes one pod" },
      );
      // Without the endpoints actor nothing takes it out of the Service: its agent keeps it running (it would
      // have had SIGTERM at once, and stopped serving 2 s later, while the Service still sent it a third of the requests).
      await new Promise((r) => setTimeout(r, 4_000));
      const still = await c.client.get("pods", "default", removed.metadata!.name!).then(
        (o) => unwrap(o) as Pod,
        () => undefined,
      );
      assert.equal(still?.metadata?.uid, removed.metadata?.uid, "the deleted pod still runs while the endpoints list it");
      await c.startActor("endpoints");
      await waitFor(
        async () => {
          try {
            await c.client.get("pods", "default", removed.metadata!.name!);
            return false;
          } catch {
            return true;
          }
        },
        { ...WAIT, message: "the removed pod stopped once out of the endpoints" },
      );
      const out = await waitFor(
        async () => {
          const l = await logs();
          return l.includes("DONE") ? l : undefined;
        },
        { ...WAIT, message: "the client finished" },
      );
      const lines = out.split("\n").filter((l) => l === "OK" || l === "FAILED");
      assert.equal(lines.length, 120);
      assert.equal(lines.filter((l) => l === "FAILED").length, 0, "no request failed");
      await kubectl("delete", "pod", "asking", "--wait=false");
      await kubectl("scale", "rc", "web", "--replicas=3");
      await waitFor(async () => (await webPods()).filter((p) => p.status?.phase === "Running").length === 3, { ...WAIT, message: "3 web pods again" });
    }));

  it("a deleted Node gives its block back and every host drops its route", () =>
    withLogsOnFailure(c, async () => {
      await c.actors.get(nodes[2]!)?.stop(10_000);
      const cidr = (await node(nodes[2]!)).spec!.podCidr;
      await kubectl("delete", "node", nodes[2]!);
      await waitFor(() => [0, 1].every((i) => !routes(i).includes(cidr)), { timeoutMs: 30_000, message: "the routes to host-c's block gone" });
      // Its block is free again: a new node may take it by name.
      const file = path.join(c.dir, "node.yaml");
      execFileSync("sh", ["-c", `cat > ${JSON.stringify(file)}`], {
        input: `apiVersion: v1\nkind: Node\nmetadata:\n  name: other\nspec:\n  podCIDR: ${cidr}\n`,
      });
      await kubectl("create", "-f", file);
      assert.equal((await node("other")).spec?.podCidr, cidr);
    }));

  it("a fourth machine joins with choreo join: its Node gets a block, every host routes to it, and a pod on it answers a pod on another host", () =>
    withLogsOnFailure(c, async () => {
      const token = (await run(process.execPath, [CHOREO_BIN, "token", "create", "--ttl", "10m"], kubeconfig)).stdout.trim();
      assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
      const printed = (await run(process.execPath, [CHOREO_BIN, "token", "create", "--ttl", "10m", "--print-join-command"], kubeconfig)).stdout.trim();
      const caHash = /--ca-hash (sha256:[0-9a-f]{64})/.exec(printed)?.[1];
      assert.ok(caHash, printed);
      const server = `https://${hosts.gateway}:${c.apis[0]!.httpsPort}`;
      const joiner = hosts.hosts[3]!;
      // The join runs inside host 3's network namespace, as on a machine of its own; its InternalIP is found, not given.
      joining = spawn(
        "nsenter",
        [
          `--net=/run/netns/${joiner.netns}`,
          process.execPath,
          CHOREO_BIN,
          "join",
          "--server",
          server,
          "--token",
          token,
          "--ca-hash",
          caHash,
          "--node-name",
          "host-d",
          "--runtime",
          "process",
          "--data-dir",
          path.join(c.dir, "join"),
          "--state-dir",
          path.join(c.dir, "nodes"),
          "--images-dir",
          "/var/lib/choreo/images",
        ],
        { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      joining.stdout?.on("data", (b: Buffer) => (out += b.toString()));
      joining.stderr?.on("data", (b: Buffer) => (out += b.toString()));
      const joined = await waitFor(
        async () => {
          if (joining?.exitCode !== null) throw new Error(`choreo join exited ${joining?.exitCode}: ${out}`);
          const n = await node("host-d").catch(() => undefined);
          return n && ready(n) && n.spec?.podCidr ? n : undefined;
        },
        { ...WAIT, message: "host-d Ready with a pod CIDR" },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n--- choreo join\n${out}`);
      });
      assert.equal(
        joined.status?.addresses.find((a) => a.type === "InternalIP")?.address,
        joiner.address,
        "its InternalIP is its address on the hosts' network",
      );
      assert.match(joined.spec!.podCidr, /^10\.244\.\d+\.0\/24$/);
      await waitFor(() => [0, 1].every((i) => routes(i).includes(`${joined.spec!.podCidr} via ${joiner.address}`)), {
        timeoutMs: 30_000,
        message: "hosts a and b route host-d's block",
      });
      await apply("joined-web.yaml", clientPod("joined-web", "host-d", "mkdir -p /www && echo joined > /www/index.html && exec httpd -f -p 8080 -h /www"));
      const ip = await waitFor(
        async () => {
          const p = unwrap(await c.client.get("pods", "default", "joined-web")) as Pod;
          return p.status?.phase === "Running" && p.status.podIp ? p.status.podIp : undefined;
        },
        { ...WAIT, message: "a pod Running on host-d" },
      );
      await apply("asker.yaml", clientPod("asker", nodes[0]!, `for i in $(seq 1 20); do wget -q -O - http://${ip}:8080/ && break; sleep 0.5; done; echo DONE`));
      const asked = await waitFor(
        async () => {
          const r = await run("kubectl", ["logs", "asker"], kubeconfig);
          return r.code === 0 && r.stdout.includes("DONE") ? r.stdout : undefined;
        },
        { ...WAIT, message: "the asker on host-a finished" },
      );
      assert.match(asked, /^joined$/m, "a pod on host-a reached the pod on the joined host");
    }));
});
