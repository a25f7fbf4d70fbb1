// The ReplicationController reconciler: one key per RC. It claims the pods
// its selector matches (adopting orphans, releasing pods whose labels stopped
// matching — quarantine), creates or deletes pods until the active count is
// spec.replicas, and writes status. Controller expectations keep it from
// acting twice on a cache that has not yet seen its own writes.
import { isAlreadyExists, isConflict, isNotFound, keyOf } from "@choreo/kit";
import { selectorFromSet } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import type { EventRecorder } from "@choreo/kit/events";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_NAMESPACE, namespaceOf, type Cache } from "@choreo/kit/informer";
import { Expectations } from "../expectations.js";
import { PodControl } from "../pod-control.js";
import { controllerOf, controllerRef, isActive, podFromTemplate } from "../pod-template.js";
import { claimPods } from "./claim.js";
import { podsToDelete } from "./ranking.js";
import { computeStatus, nextAvailableInMs, sameStatus } from "./status.js";

/** Kubernetes' BurstReplicas: at most this many creations or deletions per sync. */
export const BURST_REPLICAS = 500;

/** Options of {@link ReplicationManager}. */
export interface ReplicationManagerOptions {
  client: Pick<ApiClient, "create" | "delete" | "patch" | "get" | "updateStatus">;
  rcs: Cache<ReplicationController>;
  pods: Cache<Pod>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  workers?: number;
  burst?: number;
  registry?: Registry;
  expectations?: Expectations;
}

const RC = { kind: "ReplicationController", apiVersion: "v1" } as const;

/** Keeps every RC's active pods at spec.replicas. A Runnable: starts once the caches synced. */
export class ReplicationManager implements Runnable {
  readonly name = "replication-manager";
  readonly controller: Controller;
  readonly expectations: Expectations;
  private readonly log: Logger;
  private readonly burst: number;
  private readonly podControl: PodControl;

  constructor(private readonly opts: ReplicationManagerOptions) {
    this.log = opts.log.child({ controller: "replicationcontroller" });
    this.burst = opts.burst ?? BURST_REPLICAS;
    this.expectations = opts.expectations ?? new Expectations();
    this.podControl = new PodControl({ client: opts.client, expectations: this.expectations, recorder: opts.recorder });
    this.controller = new Controller({
      name: "replicationcontroller",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      log: opts.log,
      registry: opts.registry,
    });
    opts.pods.addIndexer(BY_NAMESPACE, namespaceOf);
    opts.rcs.addIndexer(BY_NAMESPACE, namespaceOf);
    const enqueueRc = (rc: ReplicationController): void => {
      if (rc.metadata) this.controller.enqueue(keyOf(rc.metadata));
    };
    opts.rcs.addEventHandler({
      onAdd: enqueueRc,
      onUpdate: (_o, n) => enqueueRc(n),
      onDelete: (rc) => {
        if (!rc.metadata) return;
        this.expectations.forget(keyOf(rc.metadata));
        enqueueRc(rc);
      },
    });
    opts.pods.addEventHandler({
      onAdd: (p) => this.podAdded(p),
      onUpdate: (o, n) => this.podUpdated(o, n),
      onDelete: (p) => this.podDeleted(p),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.rcs.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  /** The key of the RC controlling `p` (by name, checked against the uid), if it is in the cache. */
  private ownerKey(p: Pod): string | undefined {
    const ref = controllerOf(p.metadata);
    if (ref?.kind !== RC.kind || !p.metadata) return undefined;
    const key = keyOf({ namespace: p.metadata.namespace, name: ref.name });
    return this.opts.rcs.get(key)?.metadata?.uid === ref.uid ? key : undefined;
  }

  /** RCs in the pod's namespace whose selector matches it (orphans: who may adopt it). */
  private matchingRcs(p: Pod): string[] {
    const out: string[] = [];
    for (const rc of this.opts.rcs.byIndex(BY_NAMESPACE, p.metadata?.namespace ?? "")) {
      const sel = rc.spec?.selector ?? {};
      if (rc.metadata && Object.keys(sel).length > 0 && selectorFromSet(sel).matches(p.metadata?.labels)) out.push(keyOf(rc.metadata));
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
      for (const k of this.matchingRcs(p)) this.controller.enqueue(k);
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
      else if (!controllerOf(p.metadata)) for (const k of this.matchingRcs(p)) keys.add(k);
    }
    for (const k of keys) this.controller.enqueue(k);
  }

  private podDeleted(p: Pod): void {
    const owner = this.ownerKey(p);
    if (!owner || !p.metadata) return;
    this.expectations.deletionObserved(owner, p.metadata.uid);
    this.controller.enqueue(owner);
  }

  /** Brings the RC `key` to spec.replicas active pods and writes its status. */
  async reconcile(key: string): Promise<Result> {
    const { rcs, pods } = this.opts;
    const rc = rcs.get(key);
    if (!rc?.metadata) {
      this.expectations.forget(key);
      return done();
    }
    const uid = rc.metadata.uid;
    const deleting = Boolean(rc.metadata.deletionTimestamp);
    const selector = selectorFromSet(rc.spec?.selector ?? {});
    const needsSync = this.expectations.satisfied(key);
    const claim = claimPods(pods.byIndex(BY_NAMESPACE, rc.metadata.namespace), uid, selector, deleting);

    const owned = [...claim.owned];
    if (claim.adopt.length > 0 && (await this.canAdopt(rc))) {
      for (const p of claim.adopt) if (await this.setOwner(p, rc, true)) owned.push(p);
    }
    for (const p of claim.release) await this.setOwner(p, rc, false);

    const active = owned.filter(isActive);
    let failure: { reason: string; message: string } | undefined;
    if (needsSync && !deleting) failure = await this.manageReplicas(key, rc, active);

    const nowMs = Date.now();
    const status = computeStatus(rc, active, nowMs, failure);
    if (!sameStatus(rc.status, status)) {
      try {
        await this.opts.client.updateStatus({ kind: { $case: "replicationController", value: { ...rc, status } } });
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
        // A newer RC is on its way through the informer; that event requeues the key.
      }
    }
    if (failure) throw new Error(`${key}: ${failure.message}`);
    const wait = nextAvailableInMs(rc, active, nowMs);
    return wait === undefined ? done() : requeueAfter(wait);
  }

  /** Creates or deletes pods; returns the failure to report, if any. */
  private async manageReplicas(key: string, rc: ReplicationController, active: Pod[]): Promise<{ reason: string; message: string } | undefined> {
    const want = rc.spec?.replicas ?? 1;
    const diff = active.length - want;
    const owner = { ...RC, metadata: rc.metadata };
    const text = (e: unknown): string => (e instanceof Error ? e.message : String(e));
    if (diff < 0) {
      const { ok, error } = await this.podControl.create(key, owner, Math.min(-diff, this.burst), () => podFromTemplate(rc.spec?.template, owner), this.burst);
      this.log.info({ rc: key, want, had: active.length, created: ok }, "pods created");
      if (error !== undefined) return { reason: "FailedCreate", message: text(error) };
    } else if (diff > 0) {
      const victims = podsToDelete(active, Math.min(diff, this.burst));
      const error = await this.podControl.delete(key, owner, victims);
      this.log.info({ rc: key, want, had: active.length, deleted: victims.length }, "pods deleted");
      if (error !== undefined) return { reason: "FailedDelete", message: text(error) };
    }
    return undefined;
  }

  /** Kubernetes re-reads the controller before adopting: it must still exist with this uid and not be deleting. */
  private async canAdopt(rc: ReplicationController): Promise<boolean> {
    const m = rc.metadata;
    if (!m) return false;
    try {
      const fresh = await this.opts.client.get("replicationcontrollers", m.namespace, m.name);
      const fm = fresh.kind?.$case === "replicationController" ? fresh.kind.value.metadata : undefined;
      return fm?.uid === m.uid && !fm.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Adopts (`own`) or releases the pod, on the version the cache holds (a conflict retries the RC's key). Whether it happened. */
  private async setOwner(p: Pod, rc: ReplicationController, own: boolean): Promise<boolean> {
    const m = p.metadata;
    if (!m) return false;
    const uid = rc.metadata?.uid ?? "";
    const refs = m.ownerReferences.filter((r) => r.uid !== uid);
    if (own) refs.push(controllerRef({ ...RC, metadata: rc.metadata }));
    try {
      await this.opts.client.patch("pods", m.namespace, m.name, "application/merge-patch+json", {
        metadata: { ownerReferences: refs, resourceVersion: m.resourceVersion, uid: m.uid },
      });
    } catch (err) {
      if (isNotFound(err)) return false;
      if (isConflict(err) || isAlreadyExists(err)) throw new Error(`pod ${keyOf(m)} changed while ${own ? "adopting" : "releasing"} it`, { cause: err });
      throw err;
    }
    this.log.info({ rc: keyOf(rc.metadata ?? m), pod: keyOf(m) }, own ? "pod adopted" : "pod released");
    return true;
  }
}
