// A replicated set's pods, counted as their events arrive: what a sync needs
// (active replicas, fully labeled, ready, available; pods to release; the
// next pod to become available) without walking the set's pods again. The
// counts are those of status.ts's computeStatus over the pods the informer
// holds for the set — active pods it controls whose labels match its
// selector — kept per pod so an update takes back exactly what the pod's
// previous version added. A tally holds one view of the set (selector,
// template labels, minReadySeconds); when the set's view changes the manager
// builds a new tally from the informer's index of the set's pods.
import { selectorFromSet, type LabelSelector } from "@choreo/kit/apimachinery";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { isActive, isReady } from "../pod-template.js";
import type { Replicated } from "./status.js";

/** What a tally counts by: the parts of a set its pods are judged against. */
export interface TallyView {
  /** undefined: the set selects nothing, so every pod it controls counts (and none is released). */
  selector: LabelSelector | undefined;
  templateLabels: LabelSelector;
  minReadySeconds: number;
  /** Equal signatures, equal views. */
  signature: string;
}

/** The view of `set` with `selector` (the adapter's). */
export function tallyView(set: Replicated, selector: LabelSelector | undefined): TallyView {
  const templateLabels = selectorFromSet(set.spec?.template?.metadata?.labels ?? {});
  const minReadySeconds = set.spec?.minReadySeconds ?? 0;
  return {
    selector,
    templateLabels,
    minReadySeconds,
    signature: `${selector === undefined ? "\u0000none" : selector.toString()}\u0000${templateLabels.toString()}\u0000${minReadySeconds}`,
  };
}

/** One pod's part in the counts. */
interface Part {
  /** Active and selected: counts toward replicas (and the other counts only then). */
  counted: boolean;
  fullyLabeled: boolean;
  ready: boolean;
  /** When it becomes available (ms); NaN: never (not ready, or no readable transition time). */
  availableAt: number;
  /** Counted in `available` (it was available at a sync). */
  available: boolean;
}

/** The counts of {@link SetTally.counts}. */
export interface TallyCounts {
  replicas: number;
  fullyLabeledReplicas: number;
  readyReplicas: number;
  availableReplicas: number;
}

/** The pods one set controls (in its namespace), counted. Keys are pod keys (namespace/name). */
export class SetTally {
  private replicas = 0;
  private fullyLabeled = 0;
  private ready = 0;
  private available = 0;
  private readonly parts = new Map<string, Part>();
  /** Counted and ready but not yet available (minReadySeconds): key → when it will be. */
  private readonly pending = new Map<string, number>();
  /** Controlled pods whose labels stopped matching and that are not being deleted: to release. */
  private readonly toRelease = new Set<string>();

  constructor(
    readonly uid: string,
    readonly namespace: string,
    readonly view: TallyView,
  ) {}

  /** Whether the pod `key` is one of the set's (controlled by it, in the cache). */
  has(key: string): boolean {
    return this.parts.has(key);
  }

  /** How many pods the tally holds (controlled by the set, whatever their labels or phase). */
  get size(): number {
    return this.parts.size;
  }

  /** The pod at `key` is now `p` (controlled by the set). */
  put(key: string, p: Pod): void {
    this.remove(key);
    const part = this.partOf(p, this.view);
    this.parts.set(key, part);
    if (this.view.selector && !this.view.selector.matches(p.metadata?.labels) && !p.metadata?.deletionTimestamp) this.toRelease.add(key);
    if (!part.counted) return;
    this.replicas++;
    if (part.fullyLabeled) this.fullyLabeled++;
    if (part.ready) this.ready++;
    if (part.available) this.available++;
    else if (Number.isFinite(part.availableAt)) this.pending.set(key, part.availableAt);
  }

  /** The pod at `key` is no longer the set's (gone, or controlled by another). */
  remove(key: string): void {
    const part = this.parts.get(key);
    if (!part) return;
    this.parts.delete(key);
    this.toRelease.delete(key);
    this.pending.delete(key);
    if (!part.counted) return;
    this.replicas--;
    if (part.fullyLabeled) this.fullyLabeled--;
    if (part.ready) this.ready--;
    if (part.available) this.available--;
  }

  /** The counts at `nowMs`: pods whose minReadySeconds passed become available. */
  counts(nowMs: number): TallyCounts {
    for (const [key, at] of this.pending) {
      if (at > nowMs) continue;
      const part = this.parts.get(key);
      if (part) part.available = true;
      this.available++;
      this.pending.delete(key);
    }
    return { replicas: this.replicas, fullyLabeledReplicas: this.fullyLabeled, readyReplicas: this.ready, availableReplicas: this.available };
  }

  /** What `p` would add to the counts (a pod adopted in this sync, not yet seen controlled). */
  countsOf(p: Pod, nowMs: number): TallyCounts {
    const part = this.partOf(p, this.view);
    const c = part.counted ? 1 : 0;
    return {
      replicas: c,
      fullyLabeledReplicas: c && (part.fullyLabeled ? 1 : 0),
      readyReplicas: c && (part.ready ? 1 : 0),
      availableReplicas: c && (part.available || part.availableAt <= nowMs ? 1 : 0),
    };
  }

  /** Keys of the pods that count toward replicas (for choosing whom to delete). */
  *countedKeys(): Iterable<string> {
    for (const [key, part] of this.parts) if (part.counted) yield key;
  }

  /** Keys of the pods to release. */
  releaseKeys(): string[] {
    return [...this.toRelease];
  }

  /** Milliseconds until the next counted pod becomes available (at least 50); undefined: none waits. */
  nextAvailableInMs(nowMs: number): number | undefined {
    let next: number | undefined;
    for (const at of this.pending.values()) {
      if (at <= nowMs) continue;
      const wait = Math.max(at - nowMs, 50);
      next = next === undefined ? wait : Math.min(next, wait);
    }
    return next;
  }

  private partOf(p: Pod, v: TallyView): Part {
    const counted = isActive(p) && (v.selector?.matches(p.metadata?.labels) ?? true);
    const readyCond = p.status?.conditions.find((x) => x.type === "Ready" && x.status === "True");
    const ready = counted && isReady(p);
    let availableAt = NaN;
    if (ready && readyCond) availableAt = v.minReadySeconds <= 0 ? -Infinity : Date.parse(readyCond.lastTransitionTime) + v.minReadySeconds * 1000;
    return {
      counted,
      fullyLabeled: counted && v.templateLabels.matches(p.metadata?.labels),
      ready,
      availableAt,
      available: availableAt === -Infinity,
    };
  }
}
