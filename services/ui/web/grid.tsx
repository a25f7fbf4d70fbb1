// Nodes × pods at a glance: a row per node (name, readiness, pod count) with
// a cell per pod coloured by phase and lettered; unscheduled pods first.
// Live over watches of every node and every pod.
import { useState } from "preact/hooks";
import { useCollection } from "./live.js";
import { LETTER, nodeReadiness, PHASES, phaseOf, type Phase } from "./phase.js";
import type { Node, Pod } from "./types.js";
import { VirtualList } from "./virtual.js";

const CELL = 22;
const HEADER = 30;
const PAD = 10;

/** The pseudo-node of pods not bound yet. */
const UNSCHEDULED = "";

export function NodesGrid() {
  const nodes = useCollection<Node>("/api/v1/nodes");
  const pods = useCollection<Pod>("/api/v1/pods");
  const [filter, setFilter] = useState("");
  const [width, setWidth] = useState(900);

  const byNode = new Map<string, Pod[]>();
  const counts = new Map<Phase, number>();
  for (const p of pods.items.values()) {
    const n = p.spec?.nodeName ?? UNSCHEDULED;
    let list = byNode.get(n);
    if (!list) byNode.set(n, (list = []));
    list.push(p);
    const ph = phaseOf(p);
    counts.set(ph, (counts.get(ph) ?? 0) + 1);
  }
  const names = [...nodes.items.keys()].filter((n) => n.includes(filter)).sort();
  if (byNode.has(UNSCHEDULED) && !filter) names.unshift(UNSCHEDULED);
  const ready = [...nodes.items.values()].filter((n) => nodeReadiness(n) === "Ready").length;
  const perLine = Math.max(1, Math.floor((width - 24) / CELL));
  const height = (i: number) => HEADER + PAD + Math.max(1, Math.ceil((byNode.get(names[i]!)?.length ?? 0) / perLine)) * CELL;

  return (
    <main aria-labelledby="grid-title">
      <h1 id="grid-title">Nodes and pods</h1>
      <p class="summary" data-testid="summary">
        {nodes.synced && pods.synced ? (
          <>
            {plural(nodes.items.size, "node")} ({ready} Ready) · {plural(pods.items.size, "pod")}
            {PHASES.filter((ph) => counts.get(ph)).map((ph) => `, ${counts.get(ph)} ${ph}`)}
          </>
        ) : (
          "Loading…"
        )}
      </p>
      {nodes.error || pods.error ? (
        <p role="alert" class="error">
          Could not load: {nodes.error ?? pods.error} — retrying
        </p>
      ) : null}
      <div class="toolbar">
        <label>
          Filter nodes <input type="search" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
        </label>
        <Legend />
      </div>
      <VirtualList
        count={names.length}
        height={height}
        label="Nodes"
        onWidth={setWidth}
        row={(i) => <NodeRow name={names[i]!} node={nodes.items.get(names[i]!)} pods={byNode.get(names[i]!) ?? []} />}
      />
    </main>
  );
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function Legend() {
  return (
    <ul class="legend" aria-label="Legend">
      {PHASES.map((ph) => (
        <li key={ph}>
          <span class={`cell phase-${ph}`} aria-hidden="true">
            {LETTER[ph]}
          </span>{" "}
          {ph}
        </li>
      ))}
    </ul>
  );
}

function NodeRow(p: { name: string; node: Node | undefined; pods: Pod[] }) {
  const readiness = p.node ? nodeReadiness(p.node) : undefined;
  const title = p.name === UNSCHEDULED ? "Unscheduled" : p.name;
  const sorted = [...p.pods].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  return (
    <section class="node" aria-label={`Node ${title}`}>
      <h2 class="node-title">
        <span class="node-name">{p.node ? <a href={`#/node/${encodeURIComponent(p.name)}`}>{title}</a> : title}</span>
        {readiness ? <span class={`ready ready-${readiness}`}>{readiness}</span> : null}
        {p.node?.spec?.unschedulable ? <span class="ready">SchedulingDisabled</span> : null}
        <span class="count">{plural(p.pods.length, "pod")}</span>
      </h2>
      <ul class="cells">
        {sorted.map((pod) => {
          const ph = phaseOf(pod);
          const ns = pod.metadata.namespace ?? "default";
          const label = `Pod ${ns}/${pod.metadata.name}: ${ph}`;
          return (
            <li key={pod.metadata.uid ?? pod.metadata.name}>
              <a class={`cell phase-${ph}`} href={`#/pod/${encodeURIComponent(ns)}/${encodeURIComponent(pod.metadata.name)}`} aria-label={label} title={label}>
                {LETTER[ph]}
              </a>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
