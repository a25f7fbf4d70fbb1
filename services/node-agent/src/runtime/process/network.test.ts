// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import { BridgeNetwork } from "../../net/bridge-network.js";
import { claimTestCidrs, leftovers, wget } from "../../net/test-pods.js";
import { NAMES } from "../../net/types.js";
import { BUSYBOX, logText, rig, trackPids } from "./test-helpers.js";

describe("ProcessRuntime on the bridge network", () => {
  it("gives each pod its own IP on the node's bridge: pods and the host reach each other", async () => {
    const node = `pn${process.pid}`;
    const { cidrs, span } = claimTestCidrs();
    const network = new BridgeNetwork({ node, podCidr: cidrs[0], clusterCidr: span, log: silentLogger() });
    const r = await rig({ node, network, dnsServer: network.gateway });
    try {
      const server = r.pod("server", {
        containers: [{ name: "web", image: BUSYBOX, command: ["sh", "-c", "mkdir -p /srv && hostname > /srv/index.html && exec httpd -f -p 8080 -h /srv"] }],
      });
      const serverIp = (await r.rt.startPod(server)).podIp;
      assert.equal(serverIp, cidrs[0].replace(/0\/24$/, "2"));
      await trackPids(r, server.metadata!.uid, "web");
      const client = r.pod("client", {
        containers: [
          {
            name: "c",
            image: BUSYBOX,
            command: ["sh", "-c", `until wget -q -O - http://${serverIp}:8080/; do sleep 0.1; done; cat /etc/resolv.conf; exec sleep 300`],
          },
        ],
      });
      await r.rt.startPod(client);
      await trackPids(r, client.metadata!.uid, "c");
      const log = await waitFor(
        async () => {
          const t = await logText(r, client.metadata!.uid, { container: "c" });
          return t.includes("nameserver") ? t : undefined;
        },
        { message: "the client reached the server" },
      );
      assert.match(log, /^server\n/);
      assert.match(log, new RegExp(`nameserver ${network.gateway.replace(/\./g, "\\.")}`));
      assert.equal(await wget(`http://${serverIp}:8080/`), "server\n", "the host reaches the pod");
    } finally {
      await r.cleanup();
      await network.destroy();
    }
    assert.deepEqual(await leftovers([NAMES.bridge(node), NAMES.chainPrefix(node)]), []);
  });
});
