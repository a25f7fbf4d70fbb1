// The scheduling pipeline, top to bottom: filter nodes (stopping once a
// sample is feasible), score the feasible ones, take the best. Adding a rule
// is adding a file under plugins/ and a line here.
import type { Filter, NodeInfo, PodInfo, Scorer, Snapshot } from "./framework.js";
import { fitResources } from "./plugins/fit-resources.js";
import { hostPorts } from "./plugins/host-ports.js";
import { leastAllocated } from "./plugins/least-allocated.js";
import { nodeReady } from "./plugins/node-ready.js";
import { nodeSelector } from "./plugins/node-selector.js";
import { spread } from "./plugins/spread.js";
import { taintToleration } from "./plugins/taint-toleration.js";

export const FILTERS: readonly Filter[] = [nodeReady, nodeSelector, taintToleration, hostPorts, fitResources];
export const SCORERS: readonly Scorer[] = [leastAllocated, spread];

/** A decision: the chosen node, or how many nodes failed for each reason. */
export type Decision = { node: string } | { reasons: Record<string, number>; nodes: number };

export interface ScheduleOptions {
  /** Where the filter scan starts (rotated by the caller so sampling is fair). */
  start?: number;
  filters?: readonly Filter[];
  scorers?: readonly Scorer[];
}

/** How many feasible nodes to find before scoring: all under 100, else max(100, 10%). */
export function sampleSize(nodes: number): number {
  return nodes <= 100 ? nodes : Math.max(100, Math.ceil(nodes / 10));
}

/** Schedules one pod on a snapshot (pure: reads, never writes). */
export function schedule(pod: PodInfo, snapshot: Snapshot, opts: ScheduleOptions = {}): Decision {
  const { nodes } = snapshot;
  const filters = opts.filters ?? FILTERS;
  const want = sampleSize(nodes.length);
  const feasible: NodeInfo[] = [];
  const reasons: Record<string, number> = {};
  const start = nodes.length ? (opts.start ?? 0) % nodes.length : 0;
  for (let i = 0; i < nodes.length && feasible.length < want; i++) {
    const n = nodes[(start + i) % nodes.length]!;
    const why = firstFailure(filters, pod, n);
    if (why.length === 0) feasible.push(n);
    else for (const r of why) reasons[r] = (reasons[r] ?? 0) + 1;
  }
  if (feasible.length === 0) return { reasons, nodes: nodes.length };
  return { node: best(pod, feasible, opts.scorers ?? SCORERS).name };
}

function firstFailure(filters: readonly Filter[], pod: PodInfo, n: NodeInfo): string[] {
  for (const f of filters) {
    const why = f.filter(pod, n);
    if (why.length) return why;
  }
  return [];
}

function best(pod: PodInfo, feasible: NodeInfo[], scorers: readonly Scorer[]): NodeInfo {
  if (feasible.length === 1) return feasible[0]!;
  const total = new Array<number>(feasible.length).fill(0);
  for (const s of scorers) {
    const scores = feasible.map((n) => s.score(pod, n));
    s.normalize?.(scores);
    for (let i = 0; i < scores.length; i++) total[i]! += s.weight * scores[i]!;
  }
  let bi = 0;
  for (let i = 1; i < total.length; i++) if (total[i]! > total[bi]!) bi = i;
  return feasible[bi]!;
}

/** Kubernetes' wording: `0/5 nodes are available: 3 Insufficient cpu, 2 node(s) didn't match ….` */
export function failureMessage(d: { reasons: Record<string, number>; nodes: number }): string {
  const parts = Object.entries(d.reasons)
    .map(([r, n]) => `${n} ${r}`)
    .sort();
  return `0/${d.nodes} nodes are available${parts.length ? ": " + parts.join(", ") : ""}.`;
}
