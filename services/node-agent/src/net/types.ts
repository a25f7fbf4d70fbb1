import { createHash } from "node:crypto";

/**
 * The node's pod network, as the runtimes see it (a CNI bridge plugin):
 * one Linux bridge per node in the host's network namespace, holding the
 * first address of the node's pod CIDR (the pods' gateway and DNS server);
 * each pod a network namespace joined to it by a veth pair, with one IP
 * from the pod CIDR. Routes between node bridges on one machine come with
 * the bridges; across machines, one route per node pod CIDR (host-gw, or
 * VXLAN to a node off this one's L2 segment: routes.ts, vxlan.ts).
 */
export interface PodNetwork {
  /** The bridge's address: every pod's default gateway and its DNS server. */
  readonly gateway: string;
  /** The node's pod CIDR. */
  readonly podCidr: string;
  /** Creates the bridge, forwarding rules and masquerading (idempotent; finds what an earlier agent left). */
  init(): Promise<void>;
  /**
   * Joins the network namespace at `netnsPath` (`/run/netns/NAME` or
   * `/proc/PID/ns/net`) to the bridge: a veth named from `uid`, `eth0` in
   * the pod with `ip` (adoption) or a fresh address, lo up, the default
   * route through the gateway. Returns the pod's IP. Idempotent.
   */
  attach(uid: string, netnsPath: string, ip?: string): Promise<string>;
  /** Removes the pod's veth and releases its IP; unknown uids are fine. */
  detach(uid: string, ip: string): Promise<void>;
  /** Marks an IP as used (a pod adopted after an agent restart); false when taken or outside the CIDR. */
  reserve(ip: string): boolean;
  /** Removes the bridge and the node's rules (choreo down); pods must be gone first. */
  destroy(): Promise<void>;
}

/** A short stable hex tag of a name (interface and chain names are length-limited). */
export function shortHash(name: string, hexChars = 8): string {
  return createHash("sha1").update(name).digest("hex").slice(0, hexChars);
}

/** Names derived from the node and pod, shared by the runtimes, the network and the clean-up. */
export const NAMES = {
  /** The node's bridge: `cb-<8 hex>` (IFNAMSIZ is 16). */
  bridge: (node: string): string => `cb-${shortHash(node)}`,
  /** The host end of a pod's veth: `cv<10 hex of the uid>`. */
  veth: (uid: string): string => `cv${shortHash(uid, 10)}`,
  /** The named network namespace of a process-runtime pod (`/run/netns/choreo-<uid>`). */
  netns: (uid: string): string => `choreo-${uid}`,
  /** Every iptables chain of a node starts with this: `CHO-<6 hex>-`. */
  chainPrefix: (node: string): string => `CHO-${shortHash(node, 6)}-`,
} as const;

/** Labels on every docker object choreo creates, so an agent finds its own after a restart. */
export const LABELS = {
  managed: "dev.choreo.managed",
  node: "dev.choreo.node",
  podUid: "dev.choreo.pod.uid",
  podNamespace: "dev.choreo.pod.namespace",
  podName: "dev.choreo.pod.name",
  /** The container's name in the pod spec; `POD` for the sandbox. */
  container: "dev.choreo.container",
  restartCount: "dev.choreo.restart-count",
  podIp: "dev.choreo.pod.ip",
} as const;
