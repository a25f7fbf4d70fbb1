// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { silentLogger } from "@choreo/kit/log";
import { BridgeNetwork } from "../../net/bridge-network.js";
import { cleanupNode } from "../../net/cleanup.js";
import { claimTestCidrs } from "../../net/test-pods.js";
import { cleanup, dockerUnavailable, makePod, newRuntime, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();

describe("DockerRuntime on the bridge network", { skip }, () => {
  it("gives each pod its IP on eth0, and pods reach each other by pod IP", async () => {
    const node = testNode("bridge");
    const podCidr = claimTestCidrs().cidrs[0];
    const network = new BridgeNetwork({ node, podCidr, clusterCidr: podCidr, log: silentLogger() });
    const { rt, stateDir } = await newRuntime(node, { network });
    try {
      const web = makePod("web", { containers: [sh("app", "mkdir -p /www; echo hi-from-web > /www/index.html; exec httpd -f -p 8080 -h /www")] }, node);
      const ws = await rt.startPod(web);
      assert.ok(ws.podIp.startsWith(podCidr.replace(/0\/24$/, "")));
      const eth0 = await rt.exec(web.metadata!.uid, "app", ["ip", "-4", "addr", "show", "eth0"], 5000);
      assert.match(eth0.output, new RegExp(`inet ${ws.podIp.replace(/\./g, "\\.")}/24`));
      const client = makePod("client", { containers: [sh("app", "exec sleep 1000")] }, node);
      await rt.startPod(client);
      const got = await waitFor(
        async () => {
          const r = await rt.exec(client.metadata!.uid, "app", ["wget", "-q", "-O", "-", `http://${ws.podIp}:8080/`], 5000);
          return r.exitCode === 0 ? r.output : undefined;
        },
        { message: "client reaches web on its pod IP" },
      );
      assert.equal(got, "hi-from-web\n");
      for (const p of rt.listPods()) await rt.stopPod(p, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
      await network.destroy().catch(() => undefined);
      await cleanupNode(node);
    }
  });
});
