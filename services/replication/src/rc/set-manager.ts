// The replicated-set reconciler, shared by ReplicationController and
// ReplicaSet (each a thin adapter: its kind, selector, replicas and status
// writer). One key per set. It claims the pods its selector matches (adopting
// orphans, releasing pods whose labels stopped matching — quarantine),
// creates or deletes pods until the active count is spec.replicas, and writes
// status. Controller expectations keep it from acting twice on a cache that
// has not yet seen its own writes.
//
// A sync looks only at the set's own pods and the orphans of its namespace,
// never at pods other controllers own: the informer indexes pods by owner uid
// and orphans by namespace. And it does not walk its own pods either: each
// set's tally (tally.ts) counts them as their events arrive — what status
// and the replica diff need — and names the pods to release; the pods
// themselves are read only to choose which to delete when scaling down.
import { isAlreadyExists, isConflict, isNotFound, keyOf, type ApiObject } from "@choreo/kit";
import type { LabelSelector } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import type { EventRecorder } from "@choreo/kit/events";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_NAMESPACE, BY_OWNER, namespaceOf, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import { Expectations } from "../expectations.js";
import { PodControl } from "../pod-control.js";
import { controllerOf, controllerRef, isActive, podFromTemplate } from "../pod-template.js";
import { podsToDelete } from "./ranking.js";
import { sameStatus, statusFromCounts, type ReplicaCounts, type Replicated } from "./status.js";
import { SetTally, tallyView } from "./tally.js";

/** Kubernetes' BurstReplicas: at most this many creations or deletions per sync. */
export const BURST_REPLICAS = 500;

/** Index name: pods without a controller ownerReference (orphans), by namespace — who a set may adopt. */
export const BY_ORPHAN_NAMESPACE = "orphan-namespace";
/** Indexer for {@link BY_ORPHAN_NAMESPACE}. */
export const orphanNamespaceOf = (p: Pod): string[] => (p.metadata && !controllerOf(p.metadata) ? [p.metadata.namespace] : []);

/** What makes a kind a replicated set: the adapter RC and RS give the manager. */
export interface ReplicatedKind<T extends Replicated> {
  kind: string;
  apiVersion: string;
  /** The api resource (plural). */
  resource: string;
  /** The controller's name (queue metrics, logs). */
  name: string;
  /** Which pods it selects; undefined selects none. */
  selector(v: T): LabelSelector | undefined;
  /** spec.replicas, defaulted. */
  replicas(v: T): number;
  /** The object to send to the api (the oneof case). */
  wrap(v: T): ApiObject;
}

/** Options of {@link ReplicatedSetManager}. */
export interface ReplicatedSetOptions<T extends Replicated> {
  kind: ReplicatedKind<T>;
  client: Pick<ApiClient, "create" | "delete" | "patch" | "get" | "updateStatus">;
  sets: Cache<T>;
  pods: Cache<Pod>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  workers?: number;
  burst?: number;
  registry?: Registry;
  expectations?: Expectations;
}

/** Keeps every set's active pods at spec.replicas. A Runnable: starts once the caches synced. */
export class ReplicatedSetManager<T extends Replicated> implements Runnable {
  readonly name: string;
  readonly controller: Controller;
  readonly expectations: Expectations;
  private readonly log: Logger;
  private readonly burst: number;
  private readonly podControl: PodControl;
  private readonly k: ReplicatedKind<T>;
  /** Each synced set's tally, by the set's uid. */
  private readonly tallies = new Map<string, SetTally>();

  constructor(private readonly opts: ReplicatedSetOptions<T>) {
    this.k = opts.kind;
    this.name = `${opts.kind.name}-manager`;
    this.log = opts.log.child({ controller: opts.kind.name });
    this.burst = opts.burst ?? BURST_REPLICAS;
    this.expectations = opts.expectations ?? new Expectations();
    this.podControl = new PodControl({ client: opts.client, expectations: this.expectations, recorder: opts.recorder });
    this.controller = new Controller({
      name: opts.kind.name,
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      log: opts.log,
      registry: opts.registry,
    });
    opts.pods.addIndexer(BY_OWNER, ownerUidsOf);
    opts.pods.addIndexer(BY_ORPHAN_NAMESPACE, orphanNamespaceOf);
    opts.sets.addIndexer(BY_NAMESPACE, namespaceOf);
    const enqueueSet = (v: T): void => {
      if (v.metadata) this.controller.enqueue(keyOf(v.metadata));
    };
    opts.sets.addEventHandler({
      onAdd: enqueueSet,
      onUpdate: (o, n) => {
        // The same name with another uid (deleted and created again while the informer relisted): a new set.
        if (o.metadata && o.metadata.uid !== n.metadata?.uid) this.tallies.delete(o.metadata.uid);
        enqueueSet(n);
      },
      onDelete: (v) => {
        if (!v.metadata) return;
        this.expectations.forget(keyOf(v.metadata));
        this.tallies.delete(v.metadata.uid);
        enqueueSet(v);
      },
    });
    opts.pods.addEventHandler({
      onAdd: (p) => {
        this.track(undefined, p);
        this.podAdded(p);
      },
      onUpdate: (o, n) => {
        this.track(o, n);
        this.podUpdated(o, n);
      },
      onDelete: (p) => {
        this.track(p, undefined);
        this.podDeleted(p);
      },
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.sets.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  /** Keeps the tallies the pod's change concerns: the old version's controller's, the new one's. */
  private track(o: Pod | undefined, n: Pod | undefined): void {
    const m = (n ?? o)?.metadata;
    if (!m) return;
    const key = keyOf(m);
    const was = o && controllerOf(o.metadata)?.uid;
    const is = n && controllerOf(n.metadata)?.uid;
    if (was && was !== is) this.tallies.get(was)?.remove(key);
    if (is && n) {
      const t = this.tallies.get(is);
      if (t?.namespace === m.namespace) t.put(key, n);
    }
  }

  /** A new tally of the set `uid` in `namespace` with `view`, from the pods the informer holds for it. */
  private buildTally(uid: string, namespace: string, view: SetTally["view"]): SetTally {
    const t = new SetTally(uid, namespace, view);
    for (const p of this.opts.pods.byIndex(BY_OWNER, uid)) {
      if (p.metadata?.namespace === namespace && controllerOf(p.metadata)?.uid === uid) t.put(keyOf(p.metadata), p);
    }
    this.tallies.set(uid, t);
    return t;
  }

  /** The key of the set controlling `p` (by name, checked against the uid), if it is in the cache. */
  private ownerKey(p: Pod): string | undefined {
    const ref = controllerOf(p.metadata);
    if (ref?.kind !== this.k.kind || !p.metadata) return undefined;
    const key = keyOf({ namespace: p.metadata.namespace, name: ref.name });
    return this.opts.sets.get(key)?.metadata?.uid === ref.uid ? key : undefined;
  }

  /** Sets in the pod's namespace whose selector matches it (orphans: who may adopt it). */
  private matchingSets(p: Pod): string[] {
    const out: string[] = [];
    for (const v of this.opts.sets.byIndex(BY_NAMESPACE, p.metadata?.namespace ?? "")) {
      if (v.metadata && this.k.selector(v)?.matches(p.metadata?.labels)) out.push(keyOf(v.metadata));
    }
    return out;
  }

  private podAdded(p: Pod): void {
    if (p.metadata?.deletionTimestamp) {
      this.podDeleted(p);
      return;
    }
    const owner = this.ownerKey(p);
    if (owner) {
      this.expectations.creationObserved(owner);
      this.controller.enqueue(owner);
    } else if (!controllerOf(p.metadata)) {
      for (const k of this.matchingSets(p)) this.controller.enqueue(k);
    }
  }

  private podUpdated(o: Pod, n: Pod): void {
    if (n.metadata?.deletionTimestamp && !o.metadata?.deletionTimestamp) {
      // A graceful delete: count it as gone now, like Kubernetes.
      const owner = this.ownerKey(n);
      if (owner) this.expectations.deletionObserved(owner, n.metadata.uid);
    }
    const keys = new Set<string>();
    for (const p of [o, n]) {
      const owner = this.ownerKey(p);
      if (owner) keys.add(owner);
      else if (!controllerOf(p.metadata)) for (const k of this.matchingSets(p)) keys.add(k);
    }
    for (const k of keys) this.controller.enqueue(k);
  }

  private podDeleted(p: Pod): void {
    const owner = this.ownerKey(p);
    if (!owner || !p.metadata) return;
    this.expectations.deletionObserved(owner, p.metadata.uid);
    this.controller.enqueue(owner);
  }

  /** Brings the set `key` to spec.replicas active pods and writes its status. */
  async reconcile(key: string): Promise<Result> {
    const { sets, pods } = this.opts;
    const set = sets.get(key);
    if (!set?.metadata) {
      this.expectations.forget(key);
      return done();
    }
    const { uid, namespace } = set.metadata;
    const deleting = Boolean(set.metadata.deletionTimestamp);
    const selector = this.k.selector(set);
    const needsSync = this.expectations.satisfied(key);
    const view = tallyView(set, selector);
    let tally = this.tallies.get(uid);
    if (tally?.view.signature !== view.signature) tally = this.buildTally(uid, namespace, view);

    // The claim (client-go's PodControllerRefManager): adopt matching orphans, release own pods that stopped matching.
    const adopt: Pod[] = [];
    if (selector && !deleting) {
      for (const p of pods.byIndex(BY_ORPHAN_NAMESPACE, namespace)) {
        if (!controllerOf(p.metadata) && !p.metadata?.deletionTimestamp && selector.matches(p.metadata?.labels)) adopt.push(p);
      }
    }
    const release: Pod[] = [];
    for (const k of tally.releaseKeys()) {
      const p = pods.get(k);
      if (p && controllerOf(p.metadata)?.uid === uid && !p.metadata?.deletionTimestamp && !selector?.matches(p.metadata?.labels)) release.push(p);
    }
    /** Adopted in this sync and not yet seen controlled by the informer (so not in the tally). */
    const adopted: Pod[] = [];
    if (adopt.length > 0 && (await this.canAdopt(set))) {
      for (const p of adopt) if (await this.setOwner(p, set, true)) adopted.push(p);
    }
    for (const p of release) await this.setOwner(p, set, false);

    // The counts of this moment (Kubernetes computes status from the pods it claimed, before it creates or deletes).
    const nowMs = Date.now();
    const counts: ReplicaCounts = tally.counts(nowMs);
    const extra = adopted.filter((p) => p.metadata && !tally.has(keyOf(p.metadata)));
    for (const p of extra) {
      const c = tally.countsOf(p, nowMs);
      counts.replicas += c.replicas;
      counts.fullyLabeledReplicas += c.fullyLabeledReplicas;
      counts.readyReplicas += c.readyReplicas;
      counts.availableReplicas += c.availableReplicas;
    }
    const wait = tally.nextAvailableInMs(nowMs);
    const activePods = (): Pod[] => {
      const out: Pod[] = [];
      for (const k of tally.countedKeys()) {
        const p = pods.get(k);
        if (p) out.push(p);
      }
      return [...out, ...extra.filter(isActive)];
    };

    let failure: { reason: string; message: string } | undefined;
    if (needsSync && !deleting) failure = await this.manageReplicas(key, set, counts.replicas, activePods);

    const status = statusFromCounts(set, counts, Date.now(), failure);
    if (!sameStatus(set.status, status)) {
      try {
        await this.opts.client.updateStatus(this.k.wrap({ ...set, status }));
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
        // A newer set is on its way through the informer; that event requeues the key.
      }
    }
    if (failure) throw new Error(`${key}: ${failure.message}`);
    return wait === undefined ? done() : requeueAfter(wait);
  }

  /** Creates or deletes pods; returns the failure to report, if any. `activePods` lists the `active` pods (read only to scale down). */
  private async manageReplicas(key: string, set: T, active: number, activePods: () => Pod[]): Promise<{ reason: string; message: string } | undefined> {
    const want = this.k.replicas(set);
    const diff = active - want;
    const owner = { kind: this.k.kind, apiVersion: this.k.apiVersion, metadata: set.metadata };
    const text = (e: unknown): string => (e instanceof Error ? e.message : String(e));
    if (diff < 0) {
      // One copy of the template per sync: the pods differ only by the name the api generates, and a create only reads its pod.
      let proto: Pod | undefined;
      const make = (): Pod => {
        proto ??= podFromTemplate(set.spec?.template, owner);
        return { ...proto, metadata: proto.metadata && { ...proto.metadata } };
      };
      const { ok, error } = await this.podControl.create(key, owner, Math.min(-diff, this.burst), make, this.burst);
      this.log.info({ key, want, had: active, created: ok }, "pods created");
      if (error !== undefined) return { reason: "FailedCreate", message: text(error) };
    } else if (diff > 0) {
      const victims = podsToDelete(activePods(), Math.min(diff, this.burst));
      const error = await this.podControl.delete(key, owner, victims);
      this.log.info({ key, want, had: active, deleted: victims.length }, "pods deleted");
      if (error !== undefined) return { reason: "FailedDelete", message: text(error) };
    }
    return undefined;
  }

  /** Kubernetes re-reads the controller before adopting: it must still exist with this uid and not be deleting. */
  private async canAdopt(set: T): Promise<boolean> {
    const m = set.metadata;
    if (!m) return false;
    try {
      const fresh = await this.opts.client.get(this.k.resource, m.namespace, m.name);
      const fm = fresh.kind?.value.metadata;
      return fm?.uid === m.uid && !fm.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Adopts (`own`) or releases the pod, on the version the cache holds (a conflict retries the set's key). Whether it happened. */
  private async setOwner(p: Pod, set: T, own: boolean): Promise<boolean> {
    const m = p.metadata;
    if (!m) return false;
    const uid = set.metadata?.uid ?? "";
    const refs = m.ownerReferences.filter((r) => r.uid !== uid);
    if (own) refs.push(controllerRef({ kind: this.k.kind, apiVersion: this.k.apiVersion, metadata: set.metadata }));
    try {
      await this.opts.client.patch("pods", m.namespace, m.name, "application/merge-patch+json", {
        metadata: { ownerReferences: refs, resourceVersion: m.resourceVersion, uid: m.uid },
      });
    } catch (err) {
      if (isNotFound(err)) return false;
      if (isConflict(err) || isAlreadyExists(err)) throw new Error(`pod ${keyOf(m)} changed while ${own ? "adopting" : "releasing"} it`, { cause: err });
      throw err;
    }
    this.log.info({ key: keyOf(set.metadata ?? m), pod: keyOf(m) }, own ? "pod adopted" : "pod released");
    return true;
  }
}
