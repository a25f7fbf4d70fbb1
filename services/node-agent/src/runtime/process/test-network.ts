import path from "node:path";
import { TestPodNetwork } from "../../net/testing.js";
import { run } from "../../exec.js";

/**
 * A PodNetwork test double without a bridge: IPs from an IpPool, the
 * namespace's loopback up and the pod IP on it (so a pod reaches itself on
 * localhost and on its IP; other pods cannot reach it). Tests only.
 */
export class LoopbackNetwork extends TestPodNetwork {
  constructor(podCidr = "10.231.0.0/24") {
    super(podCidr, async (netnsPath, addr) => {
      const ns = path.basename(netnsPath);
      await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
      await run("ip", ["-n", ns, "addr", "replace", `${addr}/32`, "dev", "lo"]);
    });
  }
}
