// What a Deployment's sync does (pure): Kubernetes' syncDeployment, in
// order — the new ReplicaSet found or made (revision, annotations),
// paused/scaling checks, then RollingUpdate or Recreate, history cleanup and
// the rollout status — on working copies, recorded as the writes the
// reconciler sends: one ReplicaSet to create, patches (replicas, annotations,
// minReadySeconds) with the resourceVersion the plan was made on, deletions,
// ScalingReplicaSet Events, the Deployment's revision annotation and status.
import { emptyMeta } from "@choreo/kit";
import { DeploymentStatus, type Deployment, type ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { controllerRef } from "../pod-template.js";
import { PROGRESSING, Reason, calculateStatus, condition, getCondition, isComplete, progressDeadline, rolloutStatus, setCondition } from "./progress.js";
import {
  DESIRED_REPLICAS,
  HASH_LABEL,
  MAX_REPLICAS,
  MAX_REVISION_HISTORY_CHARS,
  REVISION,
  REVISION_HISTORY,
  active,
  actualReplicas,
  availableForScaleDown,
  byCreation,
  byRevision,
  bySize,
  copiedAnnotations,
  equalIgnoreHash,
  intAnnotation,
  isRollingUpdate,
  maxRevision,
  maxSurge,
  maxUnavailable,
  podTemplateHash,
  replicasOf,
  revisionOf,
  specReplicas,
} from "./util.js";

/** A change to one existing ReplicaSet, made on the version `rs` (its resourceVersion guards the write). */
export interface RsPatch {
  rs: ReplicaSet;
  replicas?: number;
  minReadySeconds?: number;
  annotations: Record<string, string>;
  /** ScalingReplicaSet messages for the Deployment, once the patch is made. */
  events: string[];
}

/** The writes of one sync. */
export interface DeploymentPlan {
  /** The new ReplicaSet to create. */
  create?: ReplicaSet;
  /** The ScalingReplicaSet message once it is created (when it starts with pods). */
  createEvent?: string;
  patches: RsPatch[];
  /** Old ReplicaSets past revisionHistoryLimit. */
  deletes: ReplicaSet[];
  /** Annotations to set on the Deployment (its revision). */
  annotations: Record<string, string>;
  /** The status to write (when it differs from the stored one). */
  status: DeploymentStatus;
  /** Sync again after this long (a progress deadline may pass). */
  recheckInMs?: number;
}

export const DEPLOYMENT = { kind: "Deployment", apiVersion: "apps/v1" } as const;

/**
 * The plan for `d` given the ReplicaSets it controls and their pods (for
 * Recreate: the new ReplicaSet waits until no old pod is left).
 */
export function planDeployment(d: Deployment, rss: readonly ReplicaSet[], pods: readonly Pod[], nowMs: number): DeploymentPlan {
  return new Planner(d, rss, pods, nowMs).run();
}

class Planner {
  private readonly d: Deployment;
  private readonly rss: ReplicaSet[];
  private readonly patches = new Map<string, RsPatch>();
  private readonly plan: DeploymentPlan;

  constructor(
    d: Deployment,
    rss: readonly ReplicaSet[],
    private readonly pods: readonly Pod[],
    private readonly now: number,
  ) {
    this.d = structuredClone(d);
    this.d.status ??= DeploymentStatus.fromPartial({});
    this.rss = rss.map((rs) => structuredClone(rs));
    this.plan = { patches: [], deletes: [], annotations: {}, status: this.d.status };
  }

  run(): DeploymentPlan {
    const d = this.d;
    if (d.metadata?.deletionTimestamp) this.statusOnly();
    else {
      this.checkPaused();
      if (d.spec?.paused || this.isScalingEvent()) this.sync();
      else if (isRollingUpdate(d)) this.rolling();
      else this.recreate();
    }
    this.plan.patches = [...this.patches.values()];
    return this.plan;
  }

  // ---- the new ReplicaSet and revisions (getAllReplicaSetsAndSyncRevision) ----

  private getAll(create: boolean): { newRS: ReplicaSet | undefined; old: ReplicaSet[] } {
    const d = this.d;
    const newRS = [...this.rss].sort(byCreation).find((rs) => equalIgnoreHash(rs.spec?.template, d.spec?.template));
    const old = this.rss.filter((rs) => rs !== newRS);
    const newRevision = String(maxRevision(old) + 1);
    if (newRS) {
      let changed = this.setNewRsAnnotations(newRS, newRevision, true);
      const minReady = d.spec?.minReadySeconds ?? 0;
      if (newRS.spec && newRS.spec.minReadySeconds !== minReady) {
        newRS.spec.minReadySeconds = minReady;
        changed = true;
      }
      if (changed) this.record(newRS, { minReadySeconds: minReady, annotations: { ...newRS.metadata?.annotations } }, []);
      this.setDeploymentRevision(newRS.metadata?.annotations[REVISION] ?? newRevision);
      if (progressDeadline(d) !== undefined && !getCondition(d.status, PROGRESSING))
        setCondition(this.status, condition(PROGRESSING, "True", Reason.FoundNewReplicaSet, `Found new replica set "${newRS.metadata?.name ?? ""}"`, this.now));
      return { newRS, old };
    }
    if (!create) return { newRS: undefined, old };
    const rs = this.newReplicaSet();
    rs.spec!.replicas = this.newRsReplicas([...old, rs], rs);
    this.setNewRsAnnotations(rs, newRevision, false);
    this.plan.create = structuredClone(rs);
    rs.metadata!.creationTimestamp = new Date(this.now).toISOString();
    this.rss.push(rs);
    if (replicasOf(rs) > 0) this.plan.createEvent = `Scaled up replica set ${rs.metadata?.name ?? ""} from 0 to ${replicasOf(rs)}`;
    this.setDeploymentRevision(newRevision);
    if (progressDeadline(d) !== undefined)
      setCondition(this.status, condition(PROGRESSING, "True", Reason.NewReplicaSetCreated, `Created new replica set "${rs.metadata?.name ?? ""}"`, this.now));
    return { newRS: rs, old };
  }

  /** `<deployment>-<hash>`: the template with pod-template-hash in its labels and selector, owned by the Deployment. */
  private newReplicaSet(): ReplicaSet {
    const d = this.d;
    const hash = podTemplateHash(d.spec?.template, d.status?.collisionCount);
    const template = structuredClone(d.spec?.template) ?? { metadata: undefined, spec: undefined };
    template.metadata ??= emptyMeta();
    template.metadata.labels = { ...template.metadata.labels, [HASH_LABEL]: hash };
    const sel = d.spec?.selector;
    return {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: emptyMeta({
        name: `${d.metadata?.name ?? ""}-${hash}`,
        namespace: d.metadata?.namespace ?? "",
        labels: { ...template.metadata.labels },
        ownerReferences: [controllerRef({ ...DEPLOYMENT, metadata: d.metadata })],
      }),
      spec: {
        replicas: 0,
        minReadySeconds: d.spec?.minReadySeconds ?? 0,
        selector: { matchLabels: { ...(sel?.matchLabels ?? {}), [HASH_LABEL]: hash }, matchExpressions: structuredClone(sel?.matchExpressions ?? []) },
        template,
      },
      status: undefined,
    };
  }

  /** Kubernetes' SetNewReplicaSetAnnotations: the Deployment's annotations, the new revision (the old one into revision-history), the replicas annotations for a new set. */
  private setNewRsAnnotations(rs: ReplicaSet, newRevision: string, exists: boolean): boolean {
    const m = rs.metadata!;
    let changed = false;
    for (const [k, v] of Object.entries(copiedAnnotations(this.d))) {
      if (m.annotations[k] === v) continue;
      m.annotations[k] = v;
      changed = true;
    }
    const oldRevision = m.annotations[REVISION] ?? "";
    if (revisionOf(rs) < Number(newRevision)) {
      m.annotations[REVISION] = newRevision;
      changed = true;
      if (oldRevision !== "") {
        let history = [...(m.annotations[REVISION_HISTORY] ?? "").split(",").filter(Boolean), oldRevision];
        while (history.join(",").length > MAX_REVISION_HISTORY_CHARS && history.length > 1) history = history.slice(1);
        m.annotations[REVISION_HISTORY] = history.join(",");
      }
    }
    if (!exists) changed = this.setReplicasAnnotations(rs) || changed;
    return changed;
  }

  private setReplicasAnnotations(rs: ReplicaSet): boolean {
    const want = { [DESIRED_REPLICAS]: String(replicasOf(this.d)), [MAX_REPLICAS]: String(replicasOf(this.d) + maxSurge(this.d)) };
    const m = rs.metadata!;
    if (Object.entries(want).every(([k, v]) => m.annotations[k] === v)) return false;
    Object.assign(m.annotations, want);
    return true;
  }

  private setDeploymentRevision(revision: string): void {
    const m = this.d.metadata;
    if (!m || m.annotations[REVISION] === revision) return;
    m.annotations[REVISION] = revision;
    this.plan.annotations[REVISION] = revision;
  }

  /** Merges a change to `rs` into its patch (the new ReplicaSet's changes go into its create). */
  private record(rs: ReplicaSet, change: Omit<RsPatch, "rs" | "events">, events: string[]): void {
    const name = rs.metadata?.name ?? "";
    if (this.plan.create?.metadata?.name === name) {
      this.plan.create = structuredClone({ ...rs, metadata: { ...rs.metadata!, creationTimestamp: "" } });
      return;
    }
    const prev = this.patches.get(name);
    this.patches.set(name, {
      ...prev,
      ...change,
      rs: prev?.rs ?? rs,
      annotations: { ...prev?.annotations, ...change.annotations },
      events: [...(prev?.events ?? []), ...events],
    });
  }

  // ---- scaling ----

  /** NewRSNewReplicas: Recreate wants all at once; RollingUpdate the room under replicas + maxSurge. */
  private newRsReplicas(all: readonly ReplicaSet[], newRS: ReplicaSet): number {
    const d = this.d;
    if (!isRollingUpdate(d)) return replicasOf(d);
    const maxTotal = replicasOf(d) + maxSurge(d);
    const current = specReplicas(all);
    if (current >= maxTotal) return replicasOf(newRS);
    return replicasOf(newRS) + Math.min(maxTotal - current, replicasOf(d) - replicasOf(newRS));
  }

  /** Sets spec.replicas (and the replicas annotations); an Event when the size changes. Whether it scaled. */
  private scale(rs: ReplicaSet, to: number): boolean {
    const from = replicasOf(rs);
    const annotations = this.setReplicasAnnotations(rs);
    if (from === to && !annotations) return false;
    rs.spec!.replicas = to;
    const m = rs.metadata!;
    this.record(
      rs,
      {
        ...(from !== to ? { replicas: to } : {}),
        annotations: { [DESIRED_REPLICAS]: m.annotations[DESIRED_REPLICAS]!, [MAX_REPLICAS]: m.annotations[MAX_REPLICAS]! },
      },
      from !== to ? [`Scaled ${to > from ? "up" : "down"} replica set ${m.name} from ${from} to ${to}`] : [],
    );
    return from !== to;
  }

  /** scaleReplicaSetAndRecordEvent: nothing when the size is already right. */
  private scaleTo(rs: ReplicaSet, to: number): boolean {
    return replicasOf(rs) === to ? false : this.scale(rs, to);
  }

  // ---- the strategies ----

  private rolling(): void {
    const { newRS, old } = this.getAll(true);
    const all = [...old, ...(newRS ? [newRS] : [])];
    if (newRS && this.reconcileNew(all, newRS)) return this.rolloutStatus(all, newRS);
    if (newRS && this.reconcileOld(all, old, newRS)) return this.rolloutStatus(all, newRS);
    if (isComplete(this.d, this.d.status!)) this.cleanup(old);
    this.rolloutStatus(all, newRS);
  }

  private reconcileNew(all: readonly ReplicaSet[], newRS: ReplicaSet): boolean {
    const want = replicasOf(this.d);
    if (replicasOf(newRS) === want) return false;
    if (replicasOf(newRS) > want) return this.scaleTo(newRS, want);
    return this.scaleTo(newRS, this.newRsReplicas(all, newRS));
  }

  /** Scales old ReplicaSets down as far as minAvailable allows: their unhealthy pods first, then the oldest sets. */
  private reconcileOld(all: readonly ReplicaSet[], old: readonly ReplicaSet[], newRS: ReplicaSet): boolean {
    if (specReplicas(old) === 0) return false;
    const minAvailable = replicasOf(this.d) - maxUnavailable(this.d);
    const newUnavailable = replicasOf(newRS) - (newRS.status?.availableReplicas ?? 0);
    const maxScaledDown = specReplicas(all) - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return false;
    const cleaned = this.cleanupUnhealthy(old, maxScaledDown);
    const scaledDown = this.scaleDownOld(all, old, minAvailable);
    return cleaned + scaledDown > 0;
  }

  /** Old sets lose their unavailable pods first (they serve nothing): at most `max` in all. */
  private cleanupUnhealthy(old: readonly ReplicaSet[], max: number): number {
    let total = 0;
    for (const rs of [...old].sort(byCreation)) {
      if (total >= max) break;
      const want = replicasOf(rs);
      const available = rs.status?.availableReplicas ?? 0;
      if (want === 0 || available >= want) continue;
      const n = Math.min(max - total, want - available);
      this.scaleTo(rs, want - n);
      total += n;
    }
    return total;
  }

  /** Old sets, oldest first, lose what availability above minAvailable allows. */
  private scaleDownOld(all: readonly ReplicaSet[], old: readonly ReplicaSet[], minAvailable: number): number {
    const available = availableForScaleDown(all);
    if (available <= minAvailable) return 0;
    const budget = available - minAvailable;
    let total = 0;
    for (const rs of [...old].sort(byCreation)) {
      if (total >= budget) break;
      const want = replicasOf(rs);
      if (want === 0) continue;
      const n = Math.min(want, budget - total);
      this.scaleTo(rs, want - n);
      total += n;
    }
    return total;
  }

  private recreate(): void {
    let { newRS, old } = this.getAll(false);
    let all = [...old, ...(newRS ? [newRS] : [])];
    let scaledDown = false;
    for (const rs of active(old)) scaledDown = this.scaleTo(rs, 0) || scaledDown;
    if (scaledDown || this.oldPodsRunning(newRS, old)) return this.rolloutStatus(all, newRS);
    if (!newRS) {
      ({ newRS, old } = this.getAll(true));
      all = [...old, ...(newRS ? [newRS] : [])];
    }
    if (newRS) this.scaleTo(newRS, replicasOf(this.d));
    if (isComplete(this.d, this.d.status!)) this.cleanup(old);
    this.rolloutStatus(all, newRS);
  }

  /** Recreate waits while an old set still has pods, or any pod of an old set is not finished. */
  private oldPodsRunning(newRS: ReplicaSet | undefined, old: readonly ReplicaSet[]): boolean {
    if (actualReplicas(old) > 0) return true;
    const oldUids = new Set(old.map((rs) => rs.metadata?.uid ?? ""));
    return this.pods.some((p) => {
      const owner = p.metadata?.ownerReferences.find((r) => r.controller === true)?.uid ?? "";
      const phase = p.status?.phase ?? "";
      return owner !== newRS?.metadata?.uid && oldUids.has(owner) && phase !== "Failed" && phase !== "Succeeded";
    });
  }

  // ---- scaling events, pause, history ----

  /** A ReplicaSet annotated with another desired size: spec.replicas changed (isScalingEvent). */
  private isScalingEvent(): boolean {
    const { newRS, old } = this.getAll(false);
    return active([...old, newRS]).some((rs) => {
      const desired = intAnnotation(rs, DESIRED_REPLICAS);
      return desired !== undefined && desired !== replicasOf(this.d);
    });
  }

  /** Scaling only (paused, or replicas changed): sizes, history, status — no rollout. */
  private sync(): void {
    const { newRS, old } = this.getAll(false);
    this.proportionalScale(newRS, old);
    if (this.d.spec?.paused) this.cleanup(old);
    this.plan.status = calculateStatus(this.d, [...old, newRS], newRS, this.now);
  }

  private statusOnly(): void {
    const { newRS, old } = this.getAll(false);
    this.plan.status = calculateStatus(this.d, [...old, newRS], newRS, this.now);
  }

  /**
   * Kubernetes' scale: one active set takes the whole size; a saturated new
   * set means the old go to 0; otherwise, mid-rollout, the change is spread
   * over the active sets in proportion to their size (max-replicas
   * annotation), leftovers to the largest.
   */
  private proportionalScale(newRS: ReplicaSet | undefined, old: ReplicaSet[]): void {
    const d = this.d;
    const want = replicasOf(d);
    const latest = this.activeOrLatest(newRS, old);
    if (latest) {
      this.scaleTo(latest, want);
      return;
    }
    if (newRS && replicasOf(newRS) === want && intAnnotation(newRS, DESIRED_REPLICAS) === want && (newRS.status?.availableReplicas ?? 0) === want) {
      for (const rs of active(old)) this.scaleTo(rs, 0);
      return;
    }
    if (!isRollingUpdate(d)) return;
    const sets = active([...old, newRS]);
    const allowed = want > 0 ? want + maxSurge(d) : 0;
    const toAdd = allowed - specReplicas(sets);
    if (toAdd === 0) return;
    sets.sort(bySize(toAdd < 0));
    let added = 0;
    const size = new Map<ReplicaSet, number>();
    for (const rs of sets) {
      const p = this.proportion(rs, toAdd, added);
      size.set(rs, replicasOf(rs) + p);
      added += p;
    }
    sets.forEach((rs, i) => {
      let n = size.get(rs) ?? 0;
      if (i === 0) n = Math.max(0, n + toAdd - added);
      this.scale(rs, n);
    });
  }

  private activeOrLatest(newRS: ReplicaSet | undefined, old: readonly ReplicaSet[]): ReplicaSet | undefined {
    if (!newRS && old.length === 0) return undefined;
    const newestFirst = [...old].sort((a, b) => byCreation(b, a));
    const sets = active([...newestFirst, newRS]);
    if (sets.length === 0) return newRS ?? newestFirst[0];
    return sets.length === 1 ? sets[0] : undefined;
  }

  /** GetProportion: this set's share of `toAdd`, bounded by what is left to add. */
  private proportion(rs: ReplicaSet, toAdd: number, added: number): number {
    if (replicasOf(rs) === 0 || toAdd === 0 || toAdd === added) return 0;
    const d = this.d;
    let fraction: number;
    if (replicasOf(d) === 0) fraction = -replicasOf(rs);
    else {
      const annotated = intAnnotation(rs, MAX_REPLICAS) ?? d.status?.replicas ?? 0;
      fraction = annotated > 0 ? Math.round((replicasOf(rs) * (replicasOf(d) + maxSurge(d))) / annotated) - replicasOf(rs) : 0;
    }
    const allowed = toAdd - added;
    return toAdd > 0 ? Math.min(fraction, allowed) : Math.max(fraction, allowed);
  }

  /** Progressing Unknown with DeploymentPaused / DeploymentResumed when spec.paused flips. */
  private checkPaused(): void {
    if (progressDeadline(this.d) === undefined) return;
    const c = getCondition(this.status, PROGRESSING);
    const pausedCond = c?.reason === Reason.DeploymentPaused;
    if (this.d.spec?.paused && !pausedCond)
      setCondition(this.status, condition(PROGRESSING, "Unknown", Reason.DeploymentPaused, "Deployment is paused", this.now));
    else if (!this.d.spec?.paused && pausedCond)
      setCondition(this.status, condition(PROGRESSING, "Unknown", Reason.DeploymentResumed, "Deployment is resumed", this.now));
  }

  /** Old sets beyond revisionHistoryLimit, lowest revision first, once they have no pods left. */
  private cleanup(old: readonly ReplicaSet[]): void {
    const limit = this.d.spec?.revisionHistoryLimit ?? 10;
    if (limit >= 2_147_483_647) return;
    const cleanable = old.filter((rs) => !rs.metadata?.deletionTimestamp);
    const excess = cleanable.length - limit;
    if (excess <= 0) return;
    for (const rs of [...cleanable].sort(byRevision).slice(0, excess)) {
      if ((rs.status?.replicas ?? 0) !== 0 || replicasOf(rs) !== 0 || (rs.metadata?.generation ?? 0) > (rs.status?.observedGeneration ?? 0)) continue;
      this.plan.deletes.push(rs);
    }
  }

  private rolloutStatus(all: readonly ReplicaSet[], newRS: ReplicaSet | undefined): void {
    const { status, recheckInMs } = rolloutStatus(this.d, all, newRS, this.now);
    this.plan.status = status;
    if (recheckInMs !== undefined) this.plan.recheckInMs = recheckInMs;
  }

  /** The working status (conditions changed before the rollout's). */
  private get status(): DeploymentStatus {
    return this.d.status!;
  }
}
