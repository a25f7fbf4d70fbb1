// test-tier: servers
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BridgeNetwork } from "./bridge-network.js";
import { run } from "../exec.js";
import { claimTestCidrs, leftovers, testPod, wget, type TestPod } from "./test-pods.js";
import { NAMES } from "./types.js";

const { cidrs, span } = claimTestCidrs();
const tag = `bn${process.pid}`;
const nodes = [`${tag}-a`, `${tag}-b`];

describe("bridge network", () => {
  const nets = nodes.map((node, i) => new BridgeNetwork({ node, podCidr: cidrs[i]!, clusterCidr: span, log: silentLogger() }));
  const pods: TestPod[] = [];
  const needles = [...nodes.map(NAMES.bridge), ...nodes.map((n) => NAMES.chainPrefix(n)), tag];

  after(async () => {
    for (const p of pods) await p.remove().catch(() => undefined);
    for (const n of nets) await n.destroy().catch(() => undefined);
    assert.deepEqual(await leftovers(needles), []);
  });

  it("joins pods on two nodes so they reach each other, and removes everything", async () => {
    for (const n of nets) await n.init();
    await nets[0]!.init(); // a restarted agent finds its bridge and chains
    const saved = await run("iptables-save", []);
    const chain = `${NAMES.chainPrefix(nodes[0]!)}FORWARD`;
    assert.equal(saved.split("\n").filter((l) => l.startsWith("-A ") && l.endsWith(` -j ${chain}`)).length, 1, "one jump after two inits");

    const server = await testPod(`${tag}-server`);
    pods.push(server);
    const client = await testPod(`${tag}-client`);
    pods.push(client);
    const serverIp = await nets[0]!.attach(server.uid, server.netnsPath);
    const clientIp = await nets[1]!.attach(client.uid, client.netnsPath);
    assert.equal(serverIp, cidrs[0].replace(/0\/24$/, "2"));
    assert.equal(clientIp, cidrs[1].replace(/0\/24$/, "2"));
    assert.equal(await nets[0]!.attach(server.uid, server.netnsPath), serverIp, "attach is idempotent");
    assert.equal(nets[0]!.reserve(serverIp), false, "the attached address is taken");
    assert.match(await run("ip", ["-d", "link", "show", NAMES.veth(server.uid)]), /hairpin on/);

    await server.serve("hello from a", 8080);
    const body = await waitFor(() => wget(`http://${serverIp}:8080/`, client.netns), { message: "cross-node wget" });
    assert.equal(body, "hello from a");
    assert.equal(await wget(`http://${serverIp}:8080/`), "hello from a", "the host reaches pods too");

    // An agent restarted: a new instance adopts the pod with its address.
    const restarted = new BridgeNetwork({ node: nodes[0]!, podCidr: cidrs[0], clusterCidr: span, log: silentLogger() });
    await restarted.init();
    assert.equal(await restarted.attach(server.uid, server.netnsPath, serverIp), serverIp);
    assert.equal(restarted.reserve(serverIp), false);
    assert.equal(await wget(`http://${serverIp}:8080/`, client.netns), "hello from a");

    await nets[0]!.detach(server.uid, serverIp);
    await nets[1]!.detach(client.uid, clientIp);
    await nets[1]!.detach(client.uid, clientIp); // unknown by now: fine
    assert.equal(nets[0]!.reserve(serverIp), true, "detach released the address");
    for (const p of pods.splice(0)) await p.remove();
    for (const n of nets) await n.destroy();
    assert.deepEqual(await leftovers(needles), []);
  });
});
