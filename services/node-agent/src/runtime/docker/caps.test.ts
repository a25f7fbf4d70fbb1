// test-tier: servers
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { BridgeNetwork } from "../../net/bridge-network.js";
import { cleanupNode } from "../../net/cleanup.js";
import { claimTestCidrs } from "../../net/test-pods.js";
import { run } from "../../exec.js";
import { LABELS } from "../../net/types.js";
import { SANDBOX } from "./names.js";
import { sandboxOptions } from "./sandbox.js";
import { cleanup, docker, dockerUnavailable, makePod, newRuntime, nodeContainers, sh, testNode } from "./test-support.js";

const skip = await dockerUnavailable();
/** CAP_NET_RAW is bit 13 of the capability sets. */
const NET_RAW = 1n << 13n;

describe("the sandbox's create options", () => {
  it("drop NET_RAW and allow ICMP datagram sockets, except with the host's network", () => {
    const own = sandboxOptions({ name: "s", hostname: "h", hostNetwork: false, labels: {} }).HostConfig!;
    assert.deepEqual(own.CapDrop, ["NET_RAW"]);
    assert.deepEqual(own.Sysctls, { "net.ipv4.ping_group_range": "0 2147483647" });
    const host = sandboxOptions({ name: "s", hostname: "h", hostNetwork: true, labels: {} }).HostConfig!;
    assert.deepEqual(host.CapDrop, ["NET_RAW"]);
    assert.equal(host.Sysctls, undefined, "docker refuses network sysctls with --network host");
  });
});

describe("DockerRuntime pods without NET_RAW", { skip }, () => {
  it("drops NET_RAW from app containers; ping still works through ICMP datagram sockets", async () => {
    const node = testNode("caps");
    const podCidr = claimTestCidrs().cidrs[0];
    const network = new BridgeNetwork({ node, podCidr, clusterCidr: podCidr, log: silentLogger() });
    const { rt, stateDir } = await newRuntime(node, { network });
    try {
      const pod = makePod("noraw", { containers: [sh("app", "exec sleep 1000")] }, node);
      await rt.startPod(pod);
      const uid = pod.metadata!.uid;
      const exec = (cmd: string[]) => rt.exec(uid, "app", cmd, 10_000);
      for (const pid of ["1", "self"]) {
        const status = await exec(["grep", "-E", "^Cap(Bnd|Eff):", `/proc/${pid}/status`]);
        const sets = [...status.output.matchAll(/^Cap(?:Bnd|Eff):\s+([0-9a-f]+)$/gm)].map((m) => BigInt(`0x${m[1]}`));
        assert.equal(sets.length, 2, status.output);
        for (const set of sets) assert.equal(set & NET_RAW, 0n, `NET_RAW in ${status.output}`);
      }
      // A raw (packet) socket is refused.
      const arping = await exec(["arping", "-c", "1", "-w", "1", "-I", "eth0", network.gateway]);
      assert.notEqual(arping.exitCode, 0);
      assert.match(arping.output, /permitted|denied/i, arping.output);
      // The sandbox's sysctl allows ICMP echo over datagram sockets (what
      // iputils ping uses without NET_RAW; Debian's busybox ping does not
      // fall back to them): a process in the pod's netns without NET_RAW pings the gateway.
      assert.match((await exec(["cat", "/proc/sys/net/ipv4/ping_group_range"])).output, /^0\s+2147483647$/m);
      const sandbox = (await nodeContainers(node)).find((c) => c.Labels[LABELS.container] === SANDBOX)!;
      const pid = (await docker.getContainer(sandbox.Id).inspect()).State.Pid;
      const echo = [
        "import socket",
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)",
        "s.settimeout(3)",
        `s.sendto(bytes([8, 0, 0, 0, 0, 0, 0, 1]) + b"choreo", ("${network.gateway}", 0))`,
        "data, _ = s.recvfrom(64)",
        "print('reply', data[0])",
      ].join("\n");
      const noRaw = ["--drop=cap_net_raw", "--", "-c", 'exec python3 -c "$1"', "sh", echo];
      assert.match(await run("nsenter", [`--net=/proc/${pid}/ns/net`, "capsh", ...noRaw]), /^reply 0$/m, "an echo reply (type 0)");
      for (const p of rt.listPods()) await rt.stopPod(p, 0);
    } finally {
      await rt.close();
      await cleanup(node, stateDir);
      await network.destroy().catch(() => undefined);
      await cleanupNode(node);
    }
  });
});
