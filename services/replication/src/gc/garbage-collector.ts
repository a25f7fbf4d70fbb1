// The garbage collector: dependents (pods; ReplicaSets of Deployments; Jobs of CronJobs) follow
// their owners (ReplicationControllers, ReplicaSets, Deployments, DaemonSets,
// Jobs).
//   Background: an owner gone → each dependent whose owners are all gone is
//     deleted (after a live read confirms the owner really is gone; only if
//     the dependent is still the version that named it).
//   Foreground: an owner with the `foregroundDeletion` finalizer → its
//     dependents are deleted; when none remain the finalizer is removed and
//     the api removes the owner.
//   Orphan: an owner with the `orphan` finalizer → its ownerReference is
//     removed from every dependent, then the finalizer.
import { isConflict, isNotFound, keyOf, splitKey } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeue, requeueAfter, type Result } from "@choreo/kit/controller";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
type Dependent = { metadata?: ObjectMeta | undefined };
import type { ObjectMeta, OwnerReference } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_OWNER, ownerUidsOf, type Cache } from "@choreo/kit/informer";

export const FINALIZER_ORPHAN = "orphan";
export const FINALIZER_FOREGROUND = "foregroundDeletion";

/** An owner kind the collector watches. */
export interface OwnerKind {
  kind: string;
  /** The api resource (plural), for reads and writes. */
  resource: string;
  cache: Cache<{ metadata?: ObjectMeta | undefined }>;
}

/** A dependent kind the collector deletes or orphans. */
export interface DependentKind {
  /** The api resource (plural). */
  resource: string;
  cache: Cache<Dependent>;
}

/** Options of {@link GarbageCollector}. */
export interface GarbageCollectorOptions {
  client: Pick<ApiClient, "get" | "delete" | "patch">;
  pods: Cache<Pod>;
  /** Dependents besides pods (ReplicaSets of Deployments, Jobs of CronJobs). */
  dependents?: DependentKind[];
  owners: OwnerKind[];
  log: Logger;
  workers?: number;
  registry?: Registry;
}

/**
 * Keys: `pod|<ns>/<name>` or `<resource>|<ns>/<name>` (is this dependent
 * garbage?) and `owner|<Kind>|<ns>/<name>` (an owner's finalizers).
 */
export class GarbageCollector implements Runnable {
  readonly name = "garbage-collector";
  readonly controller: Controller;
  private readonly log: Logger;
  private readonly kinds = new Map<string, OwnerKind>();
  /** Dependent kinds by key prefix ("pod" for pods, else the resource). */
  private readonly deps = new Map<string, DependentKind>();

  constructor(private readonly opts: GarbageCollectorOptions) {
    this.log = opts.log.child({ controller: "garbage-collector" });
    this.controller = new Controller({
      name: "garbagecollector",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      log: opts.log,
      registry: opts.registry,
    });
    this.deps.set("pod", { resource: "pods", cache: opts.pods });
    for (const d of opts.dependents ?? []) this.deps.set(d.resource, d);
    for (const [prefix, d] of this.deps) {
      d.cache.addIndexer(BY_OWNER, ownerUidsOf);
      const enqueueDep = (o: Dependent): void => {
        if (o.metadata && o.metadata.ownerReferences.length > 0) this.controller.enqueue(`${prefix}|${keyOf(o.metadata)}`);
      };
      // An update is looked at only when its ownerReferences changed (or on a resync, which hands the same object):
      // nothing else of a dependent decides whether it is garbage, and an owner's change or deletion comes through the
      // owners' handlers below (Kubernetes' graph builder also acts on reference changes only). A pod's bind and status
      // writes no longer cost a reconcile each.
      d.cache.addEventHandler({
        onAdd: enqueueDep,
        onUpdate: (o, n) => {
          if (o === n || !sameOwnerReferences(o, n)) enqueueDep(n);
        },
      });
    }
    for (const k of opts.owners) {
      this.kinds.set(k.kind, k);
      const enqueueOwner = (o: { metadata?: ObjectMeta | undefined }): void => {
        if (o.metadata?.deletionTimestamp) this.controller.enqueue(`owner|${k.kind}|${keyOf(o.metadata)}`);
      };
      k.cache.addEventHandler({
        onAdd: enqueueOwner,
        onUpdate: (_o, n) => enqueueOwner(n),
        onDelete: (o) => {
          for (const [prefix, dep] of this.dependentsOf(o.metadata?.uid ?? "")) if (dep.metadata) this.controller.enqueue(`${prefix}|${keyOf(dep.metadata)}`);
        },
      });
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([...[...this.deps.values()].map((d) => d.cache.waitForSync(signal)), ...this.opts.owners.map((k) => k.cache.waitForSync(signal))]);
    await this.controller.start(signal);
  }

  async reconcile(key: string): Promise<Result> {
    const [what, ...rest] = key.split("|");
    const dep = this.deps.get(what ?? "");
    if (dep) return this.reconcileDependent(dep, rest.join("|"));
    const [kind, objKey] = rest;
    return this.reconcileOwner(kind ?? "", objKey ?? "");
  }

  /** Every dependent (of every dependent kind) with an ownerReference to `uid`, with its key prefix. */
  private dependentsOf(uid: string): [string, Dependent][] {
    return [...this.deps].flatMap(([prefix, d]) => d.cache.byIndex(BY_OWNER, uid).map((o): [string, Dependent] => [prefix, o]));
  }

  /** Deletes the dependent if every owner is gone, or an owner is being deleted in the foreground. */
  private async reconcileDependent(dep: DependentKind, key: string): Promise<Result> {
    const m = dep.cache.get(key)?.metadata;
    if (!m || m.ownerReferences.length === 0 || m.deletionTimestamp) return done();
    let alive = 0;
    let foreground = false;
    for (const ref of m.ownerReferences) {
      const state = await this.ownerState(ref, m.namespace);
      if (state === "absent") continue;
      alive++;
      if (state === "foreground" && ref.blockOwnerDeletion) foreground = true;
    }
    if (alive > 0 && !foreground) return done();
    try {
      // Only the pod as read: its ownerReferences may have changed since (an orphaning GC removed them
      // while this cache still had the old copy). A conflict is looked at again (rate-limited) on a newer
      // version: an update that keeps the owners (a status write) does not re-enqueue the dependent.
      await this.opts.client.delete(dep.resource, m.namespace, m.name, {
        preconditions: { uid: m.uid, resourceVersion: m.resourceVersion },
        propagationPolicy: "Background",
      });
      this.log.info(
        { [dep.resource === "pods" ? "pod" : dep.resource]: key, owners: m.ownerReferences.map((r) => `${r.kind}/${r.name}`), foreground },
        "dependent deleted",
      );
    } catch (err) {
      if (isConflict(err)) return requeue();
      if (!isNotFound(err)) throw err;
    }
    return done();
  }

  /** Whether the owner exists, is being deleted in the foreground, or is gone — confirmed by a live read before "absent". */
  private async ownerState(ref: OwnerReference, namespace: string): Promise<"present" | "foreground" | "absent"> {
    const kind = this.kinds.get(ref.kind);
    if (!kind) return "present"; // Not a kind we collect for: leave its dependents alone.
    const key = keyOf({ namespace, name: ref.name });
    let meta = kind.cache.get(key)?.metadata;
    if (meta?.uid !== ref.uid) {
      try {
        const o = await this.opts.client.get(kind.resource, namespace, ref.name);
        meta = (o.kind?.value as { metadata?: ObjectMeta } | undefined)?.metadata;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        meta = undefined;
      }
    }
    if (meta?.uid !== ref.uid) return "absent";
    return meta.deletionTimestamp && meta.finalizers.includes(FINALIZER_FOREGROUND) ? "foreground" : "present";
  }

  /** Works an owner's `orphan` and `foregroundDeletion` finalizers. */
  private async reconcileOwner(kindName: string, key: string): Promise<Result> {
    const kind = this.kinds.get(kindName);
    const owner = kind?.cache.get(key);
    const m = owner?.metadata;
    if (!kind || !m?.deletionTimestamp) return done();
    const dependents = this.dependentsOf(m.uid);
    if (m.finalizers.includes(FINALIZER_ORPHAN)) {
      for (const [prefix, p] of dependents) {
        const pm = p.metadata;
        if (!pm) continue;
        const refs = pm.ownerReferences.filter((r) => r.uid !== m.uid);
        try {
          await this.opts.client.patch(this.deps.get(prefix)?.resource ?? "pods", pm.namespace, pm.name, "application/merge-patch+json", {
            metadata: { ownerReferences: refs, resourceVersion: pm.resourceVersion },
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      this.log.info({ owner: `${kindName}/${key}`, orphaned: dependents.length }, "dependents orphaned");
      await this.removeFinalizer(kind, key, m, FINALIZER_ORPHAN);
      return done();
    }
    if (m.finalizers.includes(FINALIZER_FOREGROUND)) {
      if (dependents.length > 0) {
        for (const [prefix, p] of dependents) if (p.metadata) this.controller.enqueue(`${prefix}|${keyOf(p.metadata)}`);
        return requeueAfter(500);
      }
      await this.removeFinalizer(kind, key, m, FINALIZER_FOREGROUND);
    }
    return done();
  }

  private async removeFinalizer(kind: OwnerKind, key: string, m: ObjectMeta, finalizer: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    try {
      await this.opts.client.patch(kind.resource, namespace, name, "application/merge-patch+json", {
        metadata: { finalizers: m.finalizers.filter((f) => f !== finalizer), resourceVersion: m.resourceVersion },
      });
      this.log.info({ owner: `${kind.kind}/${key}`, finalizer }, "finalizer removed");
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

/** Whether two versions of a dependent name the same owners the same way (what the collector reads of a dependent). */
export function sameOwnerReferences(a: Dependent, b: Dependent): boolean {
  const x = a.metadata?.ownerReferences ?? [];
  const y = b.metadata?.ownerReferences ?? [];
  if (x === y) return true;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (
      p.uid !== q.uid ||
      p.name !== q.name ||
      p.kind !== q.kind ||
      p.apiVersion !== q.apiVersion ||
      p.controller !== q.controller ||
      p.blockOwnerDeletion !== q.blockOwnerDeletion
    ) {
      return false;
    }
  }
  return true;
}
