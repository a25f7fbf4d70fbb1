// A node, describe-like: readiness, addresses, taints, capacity and
// allocatable, system info, conditions, the pods bound to it and its events
// — live over watches of that node, its pods (spec.nodeName) and its events.
import { Events } from "./pod.js";
import { Conditions, Details, pairs, PodsTable } from "./describe.js";
import { useCollection } from "./live.js";
import { nodeReadiness } from "./phase.js";
import type { KEvent, Node, Pod } from "./types.js";

export function NodeDetail(p: { name: string }) {
  const sel = (s: string) => encodeURIComponent(s);
  const nodes = useCollection<Node>(`/api/v1/nodes?fieldSelector=${sel(`metadata.name=${p.name}`)}`);
  const pods = useCollection<Pod>(`/api/v1/pods?fieldSelector=${sel(`spec.nodeName=${p.name}`)}`);
  const events = useCollection<KEvent>(`/api/v1/events?fieldSelector=${sel(`involvedObject.kind=Node,involvedObject.name=${p.name}`)}`);
  const node = nodes.items.get(p.name);
  const err = nodes.error ?? pods.error;
  return (
    <main aria-labelledby="node-title">
      <p>
        <a href="#/">← Nodes and pods</a>
      </p>
      <h1 id="node-title">Node {p.name}</h1>
      {err ? (
        <p role="alert" class="error">
          Could not load: {err}
        </p>
      ) : null}
      {!nodes.synced ? <p>Loading…</p> : !node ? <p role="status">This node does not exist (any more).</p> : <Describe node={node} pods={pods.items.size} />}
      <section aria-labelledby="node-pods-title">
        <h2 id="node-pods-title">Pods</h2>
        {pods.synced ? <PodsTable pods={[...pods.items.values()]} label={`Pods on ${p.name}`} /> : <p>Loading…</p>}
      </section>
      <section aria-labelledby="node-events-title">
        <h2 id="node-events-title">Events</h2>
        {events.error ? <p class="error">Could not load events: {events.error}</p> : <Events events={[...events.items.values()]} />}
      </section>
    </main>
  );
}

function Describe({ node, pods }: { node: Node; pods: number }) {
  const st = node.status ?? {};
  const info = st.nodeInfo ?? {};
  const resources = (m: Record<string, string> | undefined) =>
    Object.entries(m ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join(", ") || "—";
  const rows: [string, string][] = [
    ["Ready", nodeReadiness(node)],
    ["Schedulable", node.spec?.unschedulable ? "No (cordoned)" : "Yes"],
    ["Pods", String(pods)],
    ["Addresses", (st.addresses ?? []).map((a) => `${a.type}: ${a.address}`).join(", ") || "—"],
    ["Pod CIDR", node.spec?.podCIDR ?? "—"],
    ["Taints", (node.spec?.taints ?? []).map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(", ") || "—"],
    ["Capacity", resources(st.capacity)],
    ["Allocatable", resources(st.allocatable)],
    ["System", [info.osImage, info.operatingSystem, info.architecture, info.kernelVersion].filter(Boolean).join(", ") || "—"],
    ["Kubelet", [info.kubeletVersion, info.containerRuntimeVersion].filter(Boolean).join(", ") || "—"],
    ["Created", node.metadata.creationTimestamp ?? "—"],
    ["Labels", pairs(node.metadata.labels)],
  ];
  return (
    <>
      <Details label="Node details" rows={rows} />
      <h2>Conditions</h2>
      <Conditions conditions={st.conditions} label="Node conditions" />
    </>
  );
}
