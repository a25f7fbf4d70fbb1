import { isAlreadyExists, isConflict, isNotFound, unwrap } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { retryOnConflict } from "@choreo/kit/client";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Node, NodeCondition, NodeStatus } from "@choreo/kit/gen/choreo/core/v1/core";
import { emptyMeta } from "@choreo/kit";

/** What a node agent says about its machine. */
export interface NodeConfig {
  name: string;
  /** spec.podCIDR, where the runtime takes pod IPs from. */
  podCidr: string;
  /** The InternalIP address (also the hostIP of its pods). */
  internalIp: string;
  /** Allocatable cpu and memory (what pods may use). */
  cpu: string;
  memory: string;
  pods: string;
  /** The machine's cpu and memory when more than allocatable (a real node's reserve); capacity = allocatable when absent. */
  capacity?: { cpu: string; memory: string };
  /** Extra labels (the hostname and os labels are always set). */
  labels?: Record<string, string>;
  /** nodeInfo.containerRuntimeVersion, e.g. `hollow://1`. */
  runtimeVersion: string;
}

export const KUBELET_VERSION = "v1.32.0-choreo";

/** The labels every node gets. */
export function nodeLabels(cfg: NodeConfig): Record<string, string> {
  return { ...cfg.labels, "kubernetes.io/hostname": cfg.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64" };
}

/** A Ready=True condition beating now; the transition time is kept when it was already True. */
export function readyCondition(now: string, prev: NodeCondition | undefined): NodeCondition {
  const keep = prev?.status === "True" && prev.lastTransitionTime;
  return {
    type: "Ready",
    status: "True",
    lastHeartbeatTime: now,
    lastTransitionTime: keep ? prev.lastTransitionTime : now,
    reason: "KubeletReady",
    message: "kubelet is posting ready status",
  };
}

/** The node's status as its agent reports it (pure). */
export function nodeStatus(cfg: NodeConfig, now: string, prev?: NodeStatus): NodeStatus {
  const resources = { cpu: cfg.cpu, memory: cfg.memory, pods: cfg.pods };
  const others = prev?.conditions.filter((c) => c.type !== "Ready") ?? [];
  return {
    capacity: { ...resources, ...cfg.capacity },
    allocatable: { ...resources },
    conditions: [
      readyCondition(
        now,
        prev?.conditions.find((c) => c.type === "Ready"),
      ),
      ...others,
    ],
    addresses: [
      { type: "InternalIP", address: cfg.internalIp },
      { type: "Hostname", address: cfg.name },
    ],
    nodeInfo: {
      machineId: cfg.name,
      kernelVersion: "",
      osImage: "choreo",
      containerRuntimeVersion: cfg.runtimeVersion,
      kubeletVersion: KUBELET_VERSION,
      operatingSystem: "linux",
      architecture: "amd64",
      systemUuid: "",
      bootId: "",
      kubeProxyVersion: "",
    },
    daemonEndpoints: undefined,
    phase: "",
    images: [],
    volumesInUse: [],
    volumesAttached: [],
    runtimeHandlers: [],
  };
}

/** A new Node object for `cfg` (pure). */
export function buildNode(cfg: NodeConfig, now: string): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: emptyMeta({ name: cfg.name, labels: nodeLabels(cfg) }),
    spec: {
      podCidr: cfg.podCidr,
      podCidrs: cfg.podCidr ? [cfg.podCidr] : [],
      unschedulable: false,
      taints: [],
      providerId: `${cfg.runtimeVersion.split(":")[0]}://${cfg.name}`,
      externalId: "",
    },
    status: nodeStatus(cfg, now),
  };
}

/**
 * Registers the node: creates it, or (it exists: an agent restart) sets our
 * labels and pod CIDR on it, keeping taints, unschedulable and other
 * labels, then reports a fresh status.
 */
export async function registerNode(client: ApiClient, cfg: NodeConfig): Promise<Node> {
  const nodes = client.typed("node");
  try {
    return await nodes.create(buildNode(cfg, nowRfc3339()));
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  return retryOnConflict(async () => {
    let node = await nodes.get("", cfg.name);
    const labels = { ...node.metadata?.labels, ...nodeLabels(cfg) };
    const spec = node.spec;
    if (JSON.stringify(labels) !== JSON.stringify(node.metadata?.labels) || (cfg.podCidr && spec?.podCidr !== cfg.podCidr)) {
      const next = structuredClone(node);
      next.metadata = { ...(next.metadata ?? emptyMeta()), labels };
      const podCidr = cfg.podCidr || (spec?.podCidr ?? "");
      next.spec = {
        podCidr,
        podCidrs: podCidr ? [podCidr] : [],
        unschedulable: spec?.unschedulable ?? false,
        taints: spec?.taints ?? [],
        providerId: spec?.providerId ?? "",
        externalId: "",
      };
      node = await nodes.update(next);
    }
    return nodes.updateStatus({ ...node, status: nodeStatus(cfg, nowRfc3339(), node.status) });
  });
}

/**
 * Keeps the node's status fresh: re-registers a node someone deleted, and
 * posts Ready=True when it is not (the node lifecycle marked it Unknown) or
 * the last heartbeat is older than `reportMs`.
 */
export async function refreshNodeStatus(client: ApiClient, cfg: NodeConfig, reportMs: number): Promise<void> {
  // As kubelet's tryUpdateNodeStatus: the first read with resourceVersion "0" (the api's object cache, no store read);
  // the status write is a compare-and-set on the version read, and after a conflict the next try reads the store.
  for (let attempt = 0; ; attempt++) {
    let node: Node;
    try {
      node = unwrap(await client.get("nodes", "", cfg.name, attempt === 0 ? { resourceVersion: "0" } : {})) as Node;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await registerNode(client, cfg);
      return;
    }
    const ready = node.status?.conditions.find((c) => c.type === "Ready");
    const beat = Date.parse(ready?.lastHeartbeatTime ?? "");
    if (ready?.status === "True" && !Number.isNaN(beat) && Date.now() - beat < reportMs) return;
    try {
      await client.typed("node").updateStatus({ ...node, status: nodeStatus(cfg, nowRfc3339(), node.status) });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 4) throw err;
    }
  }
}

/**
 * The pod CIDR of a node whose agent was given none: the api's node IPAM
 * allocates one when the Node is created. Reads the Node, creating it bare
 * (labels only, no status: not Ready) when it does not exist yet, and
 * returns its spec.podCIDR; registerNode fills in the rest. Retries until
 * `signal` (the api away, a Node without a block yet).
 */
export async function allocatedPodCidr(
  client: ApiClient,
  cfg: Pick<NodeConfig, "name" | "labels">,
  signal: AbortSignal,
  onRetry: (err: unknown) => void,
): Promise<string> {
  const nodes = client.typed("node");
  for (let delay = 200; ; delay = Math.min(delay * 2, 5_000)) {
    signal.throwIfAborted();
    try {
      let node: Node;
      try {
        node = await nodes.get("", cfg.name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        const bare: Node = {
          apiVersion: "v1",
          kind: "Node",
          metadata: emptyMeta({
            name: cfg.name,
            labels: nodeLabels({ ...cfg, podCidr: "", internalIp: "", cpu: "", memory: "", pods: "", runtimeVersion: "" }),
          }),
          spec: { podCidr: "", podCidrs: [], unschedulable: false, taints: [], providerId: "", externalId: "" },
          status: undefined,
        };
        node = await nodes.create(bare).catch(async (e: unknown) => {
          if (isAlreadyExists(e)) return nodes.get("", cfg.name);
          throw e;
        });
      }
      if (node.spec?.podCidr) return node.spec.podCidr;
      onRetry(new Error(`node ${cfg.name} has no spec.podCIDR yet (the api allocates one on create; an older Node needs --pod-cidr)`));
    } catch (err) {
      onRetry(err);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
