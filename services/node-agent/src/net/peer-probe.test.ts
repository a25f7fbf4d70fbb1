import assert from "node:assert/strict";
import net from "node:net";
import { describe, it } from "node:test";
import { Registry } from "prom-client";
import { silentLogger } from "@choreo/kit/log";
import { PeerProbe, leftOutPeers, observe, tcpAnswers, type PeerState } from "./peer-probe.js";

describe("peer probe", () => {
  it("three misses in a row make a peer unreachable, two answers in a row reachable again", () => {
    let s: PeerState | undefined;
    for (const answered of [false, false, true, false, false]) s = observe(s, answered);
    assert.equal(s!.unreachable, false, "an answer in between starts the count again");
    s = observe(s, false);
    assert.deepEqual(s, { unreachable: true, misses: 3, answers: 0 });
    s = observe(s, true);
    assert.equal(s.unreachable, true, "one answer is not enough");
    s = observe(s, false);
    s = observe(s, true);
    assert.equal(s.unreachable, true, "the answers must come in a row");
    s = observe(s, true);
    assert.deepEqual(s, { unreachable: false, misses: 0, answers: 2 });
  });

  it("leaves out the unreachable peers, none when more than half of two or more are (this node is the one cut off)", () => {
    const up: PeerState = { unreachable: false, misses: 0, answers: 5 };
    const down: PeerState = { unreachable: true, misses: 3, answers: 0 };
    assert.deepEqual(
      leftOutPeers(
        new Map([
          ["b", up],
          ["c", down],
        ]),
      ),
      { nodes: new Set(["c"]), selfCut: false },
    );
    assert.deepEqual(leftOutPeers(new Map([["c", down]])), { nodes: new Set(["c"]), selfCut: false }, "one peer: it is the one");
    assert.deepEqual(
      leftOutPeers(
        new Map([
          ["b", down],
          ["c", down],
        ]),
      ),
      { nodes: new Set(), selfCut: true },
    );
    assert.deepEqual(
      leftOutPeers(
        new Map([
          ["a", up],
          ["b", down],
          ["c", down],
        ]),
      ),
      { nodes: new Set(), selfCut: true },
    );
    assert.deepEqual(
      leftOutPeers(
        new Map([
          ["a", up],
          ["b", up],
          ["c", down],
          ["d", down],
        ]),
      ).nodes,
      new Set(["c", "d"]),
      "half is not more than half",
    );
  });

  it("rounds: tells its listeners when the set changes, forgets peers no longer targeted, exports metrics", async () => {
    const answering = new Map([
      ["10.0.0.2", true],
      ["10.0.0.3", true],
    ]);
    const registry = new Registry();
    const probe = new PeerProbe({ node: "a", log: silentLogger(), registry, targets: () => [], probe: async (ip) => answering.get(ip) ?? false });
    let changes = 0;
    probe.onChange(() => changes++);
    const targets = [
      { node: "b", ip: "10.0.0.2" },
      { node: "c", ip: "10.0.0.3" },
    ];
    await probe.round(targets);
    answering.set("10.0.0.3", false);
    await probe.round(targets);
    await probe.round(targets);
    assert.deepEqual([...probe.unreachable()], [], "two misses: still reachable");
    await probe.round(targets);
    assert.deepEqual([...probe.unreachable()], ["c"]);
    assert.equal(changes, 1);
    const text = await registry.metrics();
    assert.match(text, /choreo_node_peers_unreachable\{node="a"\} 1/);
    assert.match(text, /choreo_node_peer_probes_total\{node="a",outcome="missed"\} 3/);
    // Both silent: this node's side — nothing left out.
    answering.set("10.0.0.2", false);
    for (let i = 0; i < 3; i++) await probe.round(targets);
    assert.deepEqual([...probe.unreachable()], []);
    assert.equal(changes, 2);
    // Back: two answers from b make only c left out again; c no longer targeted is forgotten.
    answering.set("10.0.0.2", true);
    await probe.round(targets);
    await probe.round(targets);
    assert.deepEqual([...probe.unreachable()], ["c"]);
    await probe.round(targets.slice(0, 1));
    assert.deepEqual([...probe.unreachable()], []);
    assert.equal(changes, 4);
  });

  it("a TCP connect answered or refused counts as an answer", async () => {
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    assert.equal(await tcpAnswers("127.0.0.1", port, 1_000), true, "listening");
    await new Promise((r) => server.close(r));
    assert.equal(await tcpAnswers("127.0.0.1", port, 1_000), true, "refused (RST): the kernel answered");
  });
});
