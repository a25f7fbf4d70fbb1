// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { BridgeNetwork } from "./bridge-network.js";
import { cleanupNode, parseLinkNames, parseNetnsList } from "./cleanup.js";
import { claimTestCidrs, leftovers, testPod } from "./test-pods.js";
import { NAMES } from "./types.js";

describe("clean-up", () => {
  it("parses ip's link and netns listings", () => {
    assert.deepEqual(parseLinkNames('[{"ifindex":5,"ifname":"cv0123456789","flags":[]},{"ifindex":6,"ifname":"cb-12345678"}]'), [
      "cv0123456789",
      "cb-12345678",
    ]);
    assert.deepEqual(parseLinkNames(""), []);
    assert.deepEqual(parseNetnsList("choreo-abc (id: 3)\nother\n\n"), ["choreo-abc", "other"]);
  });

  it("removes what a node's agent left: veths, bridge, chains and jumps", async () => {
    const node = `cl${process.pid}`;
    const net = new BridgeNetwork({ node, podCidr: claimTestCidrs().cidrs[0], log: silentLogger() });
    const pod = await testPod(`${node}-p`);
    try {
      await net.init();
      const veth = NAMES.veth(pod.uid);
      await net.attach(pod.uid, pod.netnsPath);
      // The agent "crashed": nothing detached, nothing destroyed.
      assert.notDeepEqual(await leftovers([veth, NAMES.chainPrefix(node)]), []);
      await cleanupNode(node);
      await cleanupNode(node); // nothing left to do: fine
      assert.deepEqual(await leftovers([veth, NAMES.bridge(node), NAMES.chainPrefix(node)]), []);
    } finally {
      await pod.remove();
      await cleanupNode(node);
    }
    assert.deepEqual(await leftovers([NAMES.bridge(node), NAMES.chainPrefix(node), node]), []);
  });
});
