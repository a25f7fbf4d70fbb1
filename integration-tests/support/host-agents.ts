// What the multi-host scenarios share: a node agent started inside a test
// host's network namespace (process runtime, no --pod-cidr: node IPAM gives
// its block), and kubectl that must succeed, with `apply` of a manifest text.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import type { ManagedProcess } from "@choreo/kit/testing";
import type { TestCluster } from "./cluster.js";
import { run } from "./kubectl.js";
import type { TestHosts } from "./test-hosts.js";

/** Starts (or restarts) node `node`'s agent on test host `i`; it stops its pods on exit, renews its lease every second. */
export function startHostAgent(c: TestCluster, hosts: TestHosts, i: number, node: string): Promise<ManagedProcess> {
  const host = hosts.hosts[i]!;
  return c.startActor(
    "node-agent",
    { CHOREO_RESTART_BACKOFF_MS: "1000", CHOREO_LEASE_RENEW_MS: "1000", CHOREO_STOP_PODS_ON_EXIT: "1" },
    [
      "--node-name",
      node,
      "--runtime",
      "process",
      "--node-ip",
      host.address,
      "--state-dir",
      path.join(c.dir, "nodes"),
      "--images-dir",
      "/var/lib/choreo/images",
    ],
    node,
    { netns: host.netns, address: host.address },
  );
}

/** kubectl with `kubeconfig()` that must exit 0 (its trimmed stdout), and `apply` of a manifest written into the cluster's dir. */
export function kubectlOf(c: () => TestCluster, kubeconfig: () => string) {
  const kubectl = async (...args: string[]): Promise<string> => {
    const r = await run("kubectl", args, kubeconfig());
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const apply = async (name: string, yaml: string): Promise<void> => {
    const file = path.join(c().dir, name);
    writeFileSync(file, yaml);
    await kubectl("apply", "-f", file);
  };
  return { kubectl, apply };
}
