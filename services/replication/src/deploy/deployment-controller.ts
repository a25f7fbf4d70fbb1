// The Deployment reconciler: one key per Deployment. It claims the
// ReplicaSets its selector matches (adopting orphans, releasing sets whose
// labels stopped matching), asks planDeployment what this sync does, and
// makes those writes in order — each ReplicaSet patch on the resourceVersion
// the plan was made on, so a stale cache costs a conflict and a retry, never
// a double step — then the Deployment's revision annotation and status.
import { isAlreadyExists, isConflict, isNotFound, keyOf } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import { DeploymentStatus, type Deployment, type ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { BY_NAMESPACE, BY_OWNER, namespaceOf, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { Counter } from "prom-client";
import { canonical, controllerOf, controllerRef } from "../pod-template.js";
import { claimPods } from "../rc/claim.js";
import { setSelector } from "../rs/replicaset-controller.js";
import { DEPLOYMENT, planDeployment, type DeploymentPlan } from "./plan.js";
import { equalIgnoreHash } from "./util.js";

/** Options of {@link DeploymentController}. */
export interface DeploymentControllerOptions {
  client: Pick<ApiClient, "create" | "delete" | "patch" | "get" | "updateStatus">;
  deployments: Cache<Deployment>;
  replicasets: Cache<ReplicaSet>;
  pods: Cache<Pod>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

const MERGE = "application/merge-patch+json";

/** Rolls every Deployment's ReplicaSets toward its template. A Runnable: starts once the caches synced. */
export class DeploymentController implements Runnable {
  readonly name = "deployment-controller";
  readonly controller: Controller;
  private readonly log: Logger;
  private readonly scaled: Counter | undefined;

  constructor(private readonly opts: DeploymentControllerOptions) {
    this.log = opts.log.child({ controller: "deployment" });
    this.controller = new Controller({
      name: "deployment",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      log: opts.log,
      registry: opts.registry,
    });
    this.scaled = opts.registry
      ? new Counter({
          name: "choreo_deployment_replicaset_scalings_total",
          help: "ReplicaSet size changes made by the Deployment controller, by direction.",
          labelNames: ["direction"],
          registers: [opts.registry],
        })
      : undefined;
    opts.deployments.addIndexer(BY_NAMESPACE, namespaceOf);
    opts.replicasets.addIndexer(BY_NAMESPACE, namespaceOf);
    opts.pods.addIndexer(BY_OWNER, ownerUidsOf);
    const enqueue = (d: Deployment): void => {
      if (d.metadata) this.controller.enqueue(keyOf(d.metadata));
    };
    opts.deployments.addEventHandler({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n), onDelete: enqueue });
    opts.replicasets.addEventHandler({
      onAdd: (rs) => this.rsChanged(rs),
      onUpdate: (o, n) => {
        this.rsChanged(n);
        if (controllerOf(o.metadata)?.uid !== controllerOf(n.metadata)?.uid) this.rsChanged(o);
      },
      onDelete: (rs) => this.rsChanged(rs),
    });
    // Recreate waits for the old pods to be gone: a pod's deletion is news for its ReplicaSet's Deployment.
    opts.pods.addEventHandler({
      onDelete: (p) => {
        const ref = controllerOf(p.metadata);
        if (ref?.kind !== "ReplicaSet" || !p.metadata) return;
        const rs = opts.replicasets.get(keyOf({ namespace: p.metadata.namespace, name: ref.name }));
        if (rs) this.rsChanged(rs);
      },
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.deployments.waitForSync(signal), this.opts.replicasets.waitForSync(signal), this.opts.pods.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  /** A ReplicaSet changed: its Deployment, or (an orphan) every Deployment that may adopt it. */
  private rsChanged(rs: ReplicaSet): void {
    const m = rs.metadata;
    if (!m) return;
    const ref = controllerOf(m);
    if (ref) {
      if (ref.kind === DEPLOYMENT.kind) this.controller.enqueue(keyOf({ namespace: m.namespace, name: ref.name }));
      return;
    }
    for (const d of this.opts.deployments.byIndex(BY_NAMESPACE, m.namespace)) {
      if (d.metadata && setSelector(d.spec?.selector)?.matches(m.labels)) this.controller.enqueue(keyOf(d.metadata));
    }
  }

  async reconcile(key: string): Promise<Result> {
    const d = this.opts.deployments.get(key);
    if (!d?.metadata) return done();
    const m = d.metadata;
    const selector = setSelector(d.spec?.selector);
    if (!selector) {
      // Kubernetes refuses to act on a selector that selects everything (or nothing): it only records the generation.
      if ((d.status?.observedGeneration ?? 0) < m.generation) await this.writeStatus(d, { ...this.emptyStatus(d), observedGeneration: m.generation }, "");
      return done();
    }
    const claim = claimPods(this.opts.replicasets.byIndex(BY_NAMESPACE, m.namespace), m.uid, selector, Boolean(m.deletionTimestamp));
    const owned = [...claim.owned];
    if (claim.adopt.length > 0 && (await this.canAdopt(d))) for (const rs of claim.adopt) if (await this.setOwner(rs, d, true)) owned.push(rs);
    for (const rs of claim.release) await this.setOwner(rs, d, false);
    const pods = owned.flatMap((rs) => this.opts.pods.byIndex(BY_OWNER, rs.metadata?.uid ?? ""));

    const plan = planDeployment(d, owned, pods, Date.now());
    await this.apply(d, plan);
    return plan.recheckInMs === undefined ? done() : requeueAfter(plan.recheckInMs);
  }

  private async apply(d: Deployment, plan: DeploymentPlan): Promise<void> {
    const m = d.metadata!;
    const dkey = keyOf(m);
    const ref = objectRef(DEPLOYMENT.kind, DEPLOYMENT.apiVersion, d);
    const emit = (msg: string): void => {
      this.opts.recorder?.emit(ref, "Normal", "ScalingReplicaSet", msg);
      this.scaled?.inc({ direction: msg.startsWith("Scaled up") ? "up" : "down" });
    };
    if (plan.create) {
      if (!(await this.createReplicaSet(d, plan.create))) return;
      if (plan.createEvent) emit(plan.createEvent);
    }
    for (const p of plan.patches) {
      const rm = p.rs.metadata!;
      try {
        await this.opts.client.patch("replicasets", rm.namespace, rm.name, MERGE, {
          metadata: { resourceVersion: rm.resourceVersion, uid: rm.uid, annotations: p.annotations },
          ...(p.replicas !== undefined || p.minReadySeconds !== undefined
            ? {
                spec: {
                  ...(p.replicas !== undefined ? { replicas: p.replicas } : {}),
                  ...(p.minReadySeconds !== undefined ? { minReadySeconds: p.minReadySeconds } : {}),
                },
              }
            : {}),
        });
      } catch (err) {
        if (isConflict(err) || isNotFound(err)) throw new Error(`replica set ${keyOf(rm)} changed; deployment ${dkey} syncs again`, { cause: err });
        throw err;
      }
      for (const e of p.events) emit(e);
      if (p.replicas !== undefined) this.log.info({ deployment: dkey, replicaset: rm.name, replicas: p.replicas }, "replica set scaled");
    }
    for (const rs of plan.deletes) {
      const rm = rs.metadata!;
      try {
        await this.opts.client.delete("replicasets", rm.namespace, rm.name, { preconditions: { uid: rm.uid, resourceVersion: "" } });
        this.log.info({ deployment: dkey, replicaset: rm.name }, "old replica set deleted");
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
    let rv = m.resourceVersion;
    if (Object.keys(plan.annotations).length > 0) {
      const updated = await this.opts.client.patch("deployments", m.namespace, m.name, MERGE, {
        metadata: { resourceVersion: m.resourceVersion, annotations: plan.annotations },
      });
      rv = updated.kind?.value.metadata?.resourceVersion ?? "";
    }
    if (canonical(plan.status) !== canonical(d.status ?? null)) await this.writeStatus(d, plan.status, rv);
  }

  /** Creates the new ReplicaSet. Already there: ours with this template is fine; anything else is a hash collision (collisionCount + 1). */
  private async createReplicaSet(d: Deployment, rs: ReplicaSet): Promise<boolean> {
    const rm = rs.metadata!;
    try {
      await this.opts.client.create({ kind: { $case: "replicaSet", value: rs } });
      this.log.info({ deployment: keyOf(d.metadata!), replicaset: rm.name, replicas: rs.spec?.replicas }, "new replica set created");
      return true;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const got = await this.opts.client.get("replicasets", rm.namespace, rm.name);
    const existing = got.kind?.$case === "replicaSet" ? got.kind.value : undefined;
    if (existing && controllerOf(existing.metadata)?.uid === d.metadata?.uid && equalIgnoreHash(existing.spec?.template, d.spec?.template)) {
      // Ours: the cache has not shown it yet; its event syncs again.
      return false;
    }
    const collisionCount = (d.status?.collisionCount ?? 0) + 1;
    this.log.warn({ deployment: keyOf(d.metadata!), replicaset: rm.name, collisionCount }, "pod template hash collision");
    await this.writeStatus(d, { ...(d.status ?? this.emptyStatus(d)), collisionCount }, d.metadata?.resourceVersion ?? "");
    throw new Error(`replica set ${keyOf(rm)} exists with another template: collisionCount ${collisionCount}`);
  }

  private async writeStatus(d: Deployment, status: NonNullable<Deployment["status"]>, rv: string): Promise<void> {
    try {
      await this.opts.client.updateStatus({ kind: { $case: "deployment", value: { ...d, metadata: { ...d.metadata!, resourceVersion: rv }, status } } });
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
      // A newer Deployment is on its way through the informer; its event syncs again.
    }
  }

  /** A status with every count 0 (the collision count kept). */
  private emptyStatus(d: Deployment): DeploymentStatus {
    return DeploymentStatus.fromPartial({ collisionCount: d.status?.collisionCount });
  }

  /** The Deployment must still exist with this uid and not be deleting (Kubernetes re-reads it before adopting). */
  private async canAdopt(d: Deployment): Promise<boolean> {
    const m = d.metadata!;
    try {
      const fresh = await this.opts.client.get("deployments", m.namespace, m.name);
      const fm = fresh.kind?.value.metadata;
      return fm?.uid === m.uid && !fm.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Adopts or releases a ReplicaSet on the version the cache holds. Whether it happened. */
  private async setOwner(rs: ReplicaSet, d: Deployment, own: boolean): Promise<boolean> {
    const rm = rs.metadata;
    if (!rm) return false;
    const refs = rm.ownerReferences.filter((r) => r.uid !== d.metadata?.uid);
    if (own) refs.push(controllerRef({ ...DEPLOYMENT, metadata: d.metadata }));
    try {
      await this.opts.client.patch("replicasets", rm.namespace, rm.name, MERGE, {
        metadata: { ownerReferences: refs, resourceVersion: rm.resourceVersion, uid: rm.uid },
      });
    } catch (err) {
      if (isNotFound(err)) return false;
      if (isConflict(err)) throw new Error(`replica set ${keyOf(rm)} changed while ${own ? "adopting" : "releasing"} it`, { cause: err });
      throw err;
    }
    this.log.info({ deployment: keyOf(d.metadata!), replicaset: rm.name }, own ? "replica set adopted" : "replica set released");
    return true;
  }
}
