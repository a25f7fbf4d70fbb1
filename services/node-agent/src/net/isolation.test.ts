// test-tier: servers
// What pods must not reach: the host's loopback (CVE-2020-8558, with
// route_localnet on) and Docker's bridges (a compose bring-up's NATS and
// Redis) — and what they still reach: pods of another node and the outside.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import Docker from "dockerode";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { ClusterDns } from "../dns/cluster-dns.js";
import { run, succeeds } from "../exec.js";
import { LOCAL_IMAGES } from "../images/types.js";
import { engineAnswers } from "../runtime/docker/engine.js";
import { BridgeNetwork } from "./bridge-network.js";
import { cleanupNode } from "./cleanup.js";
import { guardLocalnet, localnetChain, localnetRule, ROUTE_LOCALNET } from "./localnet.js";
import { claimTestCidrs, leftovers, testPod, wget, type TestPod } from "./test-pods.js";
import { NAMES } from "./types.js";

const skip = process.getuid?.() !== 0 ? "needs root (namespaces, iptables)" : false;
const hasDocker = skip ? false : await engineAnswers(new Docker());
const tag = `iso${process.pid}`;
const nodes = [`${tag}-a`, `${tag}-b`];
// A cluster range of its own, so no other test's pods count as ours.
const { cidrs: podCidrs, span: clusterCidr } = skip ? { cidrs: ["", ""], span: "" } : claimTestCidrs();
const outside = { net: `198.18.${process.pid % 250}`, veth: `vo${process.pid % 1_000_000}` };
const docker = { net: `choreo-${tag}`, containers: [`choreo-${tag}-br`, `choreo-${tag}-d0`] };

/** Connects from inside `netns` with busybox nc; resolves with what the server sent ("" on failure). */
async function ncFrom(netns: string, host: string, port: number): Promise<string> {
  return run("ip", ["netns", "exec", netns, "timeout", "3", "busybox", "nc", host, String(port)], { input: "" }).catch(() => "");
}

describe("pod isolation", { skip }, () => {
  const nets = nodes.map((node, i) => new BridgeNetwork({ node, podCidr: podCidrs[i]!, clusterCidr, log: silentLogger() }));
  const pods: TestPod[] = [];
  const needles = [...nodes.map(NAMES.bridge), ...nodes.map((n) => NAMES.chainPrefix(n)), tag, outside.veth];
  let attacker: TestPod;
  let peerIp = "";
  let secret: net.Server;
  let secretPort = 0;

  before(async () => {
    for (const n of nets) await n.init();
    // What the service proxy does before it turns route_localnet on.
    await guardLocalnet(NAMES.chainPrefix(nodes[0]!));
    attacker = await testPod(`${tag}-attacker`);
    pods.push(attacker);
    await nets[0]!.attach(attacker.uid, attacker.netnsPath);
    const peer = await testPod(`${tag}-peer`);
    pods.push(peer);
    peerIp = await nets[1]!.attach(peer.uid, peer.netnsPath);
    await peer.serve("peer", 8080);
    // "The outside": a namespace behind a veth of the host's, outside the cluster range.
    const out = await testPod(`${tag}-outside`);
    pods.push(out);
    await run("ip", ["-batch", "-"], {
      input: [
        `link add ${outside.veth} type veth peer name eth0 netns ${out.netns}`,
        `addr add ${outside.net}.1/30 dev ${outside.veth}`,
        `link set ${outside.veth} up`,
        "",
      ].join("\n"),
    });
    await run("ip", ["-n", out.netns, "-batch", "-"], { input: `addr add ${outside.net}.2/30 dev eth0\nlink set eth0 up\nlink set lo up\n` });
    await out.serve("outside", 8080);
    // A host service on loopback only (as redis, nats and the api are in `npm start`).
    secret = net.createServer((c) => c.end("SECRET\n"));
    await new Promise<void>((r) => secret.listen(0, "127.0.0.1", () => r()));
    secretPort = (secret.address() as net.AddressInfo).port;
  });

  after(async () => {
    secret?.close();
    if (hasDocker) await run("docker", ["rm", "-f", ...docker.containers]).catch(() => undefined);
    if (hasDocker) await run("docker", ["network", "rm", docker.net]).catch(() => undefined);
    for (const p of pods) await p.remove().catch(() => undefined);
    await run("ip", ["link", "del", outside.veth]).catch(() => undefined);
    for (const n of nets) await n.destroy().catch(() => undefined);
    for (const n of nodes) await cleanupNode(n);
    assert.deepEqual(await leftovers(needles), []);
  });

  it("guards loopback: a pod routing to 127.0.0.1 through the host is dropped; the host still connects", async () => {
    const saved = await run("iptables-save", ["-t", "filter"]);
    const chain = localnetChain(NAMES.chainPrefix(nodes[0]!));
    assert.ok(saved.includes(localnetRule(NAMES.chainPrefix(nodes[0]!))), "the drop rule");
    for (const c of ["INPUT", "OUTPUT"]) assert.ok(saved.split("\n").includes(`-A ${c} -j ${chain}`), `jumped from ${c}`);
    assert.equal((await readFile(ROUTE_LOCALNET, "utf8")).trim(), "1");
    // The attack: root in the pod's netns (NET_ADMIN, NET_RAW) takes loopback
    // off lo, routes 127.0.0.0/8 to the gateway, and accepts 127.x sources back.
    await run("ip", ["-n", attacker.netns, "addr", "flush", "dev", "lo"]);
    await run("ip", ["-n", attacker.netns, "route", "add", "127.0.0.0/8", "via", nets[0]!.gateway, "dev", "eth0"]);
    await run("ip", ["netns", "exec", attacker.netns, "sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"]);
    assert.match(await run("ip", ["-n", attacker.netns, "route", "get", "127.0.0.1"]), new RegExp(`via ${nets[0]!.gateway.replaceAll(".", "\\.")} dev eth0`));
    assert.equal(await ncFrom(attacker.netns, "127.0.0.1", secretPort), "", "the pod must not reach the host's 127.0.0.1");
    const fromHost = await new Promise<string>((resolve, reject) => {
      const c = net.connect(secretPort, "127.0.0.1");
      let data = "";
      c.on("data", (d) => (data += String(d)));
      c.on("end", () => resolve(data));
      c.on("error", reject);
    });
    assert.equal(fromHost, "SECRET\n", "the host still reaches its own loopback");
  });

  it("forwards pod traffic to pods of another node and to the outside, from DOCKER-USER when Docker is there", async () => {
    assert.equal(await waitFor(() => wget(`http://${peerIp}:8080/`, attacker.netns).catch(() => undefined), { message: "pod to pod across nodes" }), "peer");
    assert.equal(await wget(`http://${outside.net}.2:8080/`, attacker.netns), "outside", "pod to the outside (masqueraded)");
    const saved = (await run("iptables-save", ["-t", "filter"])).split("\n");
    const chain = `${NAMES.chainPrefix(nodes[0]!)}FORWARD`;
    const jumps = saved.filter((l) => l.startsWith("-A ") && l.endsWith(`-j ${chain}`));
    assert.deepEqual(jumps, [`-A ${hasDocker ? "DOCKER-USER" : "FORWARD"} -j ${chain}`]);
  });

  it("the node's DNS responder answers its pods and ignores a source outside the pod ranges", async () => {
    const empty = { get: () => undefined, list: () => [], hasSynced: () => true };
    const dns = new ClusterDns({
      stores: { services: empty, endpoints: empty },
      log: silentLogger(),
      upstream: [],
      listen: { address: nets[0]!.gateway, port: 0 },
      clients: [podCidrs[0]!, clusterCidr],
    });
    const ac = new AbortController();
    const done = dns.start(ac.signal);
    try {
      const { port } = await dns.listening;
      // One UDP query from inside a namespace (a minimal header + question for x.cluster.local A); prints the reply's rcode.
      const script = [
        "const s = require('dgram').createSocket('udp4');",
        "const q = Buffer.from('00070100000100000000000001780763 6c7573746572056c6f63616c0000010001'.replace(/ /g, ''), 'hex');",
        "s.on('message', (m) => { console.log('rcode ' + (m[3] & 15)); process.exit(0); });",
        "setTimeout(() => { console.log('no reply'); process.exit(0); }, 1500);",
        `s.send(q, ${port}, '${nets[0]!.gateway}');`,
      ].join("\n");
      const ask = (netns: string): Promise<string> => run("ip", ["netns", "exec", netns, process.execPath, "-e", script]).then((o) => o.trim());
      // The pod's query is answered (NXDOMAIN: no such name).
      assert.equal(await ask(attacker.netns), "rcode 3");
      // "The outside" routes to the gateway through the host, from 198.18.x.2: no answer.
      const out = pods.find((p) => p.uid === `${tag}-outside`)!;
      await run("ip", ["-n", out.netns, "route", "replace", "default", "via", `${outside.net}.1`]);
      assert.equal(await ask(out.netns), "no reply");
    } finally {
      ac.abort();
      await done;
    }
  });

  it("drops pod connections into Docker's bridges, published ports included", { skip: hasDocker ? false : "no Docker engine" }, async () => {
    await run("docker", ["network", "create", docker.net]);
    const script = "mkdir -p /www && echo docker > /www/index.html && exec httpd -f -p 8080 -h /www";
    await run("docker", [
      "run",
      "-d",
      "--name",
      docker.containers[0]!,
      "--network",
      docker.net,
      "-p",
      "127.0.0.1::8080",
      LOCAL_IMAGES.busybox,
      "sh",
      "-c",
      script,
    ]);
    await run("docker", ["run", "-d", "--name", docker.containers[1]!, LOCAL_IMAGES.busybox, "sh", "-c", script]);
    const ipOf = async (c: string): Promise<string> =>
      (await run("docker", ["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", c])).trim();
    const [onBridge, onDocker0] = [await ipOf(docker.containers[0]!), await ipOf(docker.containers[1]!)];
    const published = Number((await run("docker", ["port", docker.containers[0]!, "8080/tcp"])).trim().split(":").pop());
    // The containers serve: the host reaches them.
    for (const ip of [onBridge, onDocker0])
      assert.equal(await waitFor(() => wget(`http://${ip}:8080/`).catch(() => undefined), { message: `host to ${ip}` }), "docker\n");
    assert.equal(await wget(`http://127.0.0.1:${published}/`), "docker\n");
    // The pod does not: not by the container's address, nor by the published
    // port on 127.0.0.1 (DNATed by Docker, so past the loopback guard).
    for (const url of [`http://${onBridge}:8080/`, `http://${onDocker0}:8080/`]) {
      assert.equal(await wget(url, attacker.netns).catch(() => "unreachable"), "unreachable", url);
    }
    if (!(await succeeds("ip", ["-n", attacker.netns, "route", "get", "127.0.0.1"]))) assert.fail("the attacker's loopback route is gone");
    assert.equal(await wget(`http://127.0.0.1:${published}/`, attacker.netns).catch(() => "unreachable"), "unreachable", "published port via 127.0.0.1");
    // Still: pods reach each other after the docker rules changed.
    assert.equal(await wget(`http://${peerIp}:8080/`, attacker.netns), "peer");
  });
});
