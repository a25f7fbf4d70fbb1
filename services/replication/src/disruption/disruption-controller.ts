// The disruption controller: one key per PodDisruptionBudget. Computes its
// status (status.ts) from the pods its selector matches and their
// controllers' scale, and writes it when it changed; the eviction
// subresource in the api spends what it allows. After Kubernetes'
// pkg/controller/disruption.
import { isConflict, isNotFound, keyOf } from "@choreo/kit";
import { selectorFromLabelSelector, SelectorParseError } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Deployment, ReplicaSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import type { OwnerReference } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { PodDisruptionBudget, PodDisruptionBudgetStatus } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { BY_NAMESPACE, namespaceOf, type Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { canonical, controllerOf } from "../pod-template.js";
import { computeStatus, failSafeStatus, SyncError, type ScaleOf } from "./status.js";

const PDB = { kind: "PodDisruptionBudget", apiVersion: "policy/v1" } as const;

/** Options of {@link DisruptionController}. */
export interface DisruptionControllerOptions {
  client: Pick<ApiClient, "updateStatus">;
  pdbs: Cache<PodDisruptionBudget>;
  pods: Cache<Pod>;
  rcs: Cache<ReplicationController>;
  replicasets: Cache<ReplicaSet>;
  deployments: Cache<Deployment>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  /** The clock (epoch ms); tests pass a fake one. */
  now?: () => number;
  workers?: number;
  registry?: Registry;
}

/** The pods a budget's selector matches: none for an unset selector, every pod of the namespace for an empty one. */
function selects(pdb: PodDisruptionBudget, pod: Pod): boolean {
  const sel = pdb.spec?.selector;
  if (!sel) return false;
  try {
    return selectorFromLabelSelector(sel).matches(pod.metadata?.labels ?? {});
  } catch (err) {
    if (err instanceof SelectorParseError) return false;
    throw err;
  }
}

export class DisruptionController implements Runnable {
  readonly name = "disruption-controller";
  readonly controller: Controller;
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(private readonly opts: DisruptionControllerOptions) {
    this.log = opts.log.child({ controller: "disruption" });
    this.now = opts.now ?? Date.now;
    this.controller = new Controller({
      name: "disruption",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      log: opts.log,
      registry: opts.registry,
    });
    opts.pods.addIndexer(BY_NAMESPACE, namespaceOf);
    opts.pdbs.addIndexer(BY_NAMESPACE, namespaceOf);
    const enqueue = (pdb: PodDisruptionBudget): void => {
      if (pdb.metadata) this.controller.enqueue(keyOf(pdb.metadata));
    };
    opts.pdbs.addEventHandler({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n) });
    // A pod's change is its budgets' (both the old and the new labels').
    const enqueueFor = (pod: Pod): void => {
      for (const pdb of opts.pdbs.byIndex(BY_NAMESPACE, pod.metadata?.namespace ?? "")) if (selects(pdb, pod)) enqueue(pdb);
    };
    opts.pods.addEventHandler({
      onAdd: enqueueFor,
      onUpdate: (o, n) => {
        enqueueFor(o);
        enqueueFor(n);
      },
      onDelete: enqueueFor,
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const { pdbs, pods, rcs, replicasets, deployments } = this.opts;
    await Promise.all([pdbs, pods, rcs, replicasets, deployments].map((c) => c.waitForSync(signal)));
    await this.controller.start(signal);
  }

  /** getExpectedScale's finders: a ReplicationController, a ReplicaSet (or the Deployment controlling it). */
  private readonly scaleOf: ScaleOf = (namespace: string, ref: OwnerReference) => {
    const key = keyOf({ namespace, name: ref.name });
    if (ref.kind === "ReplicationController") {
      const rc = this.opts.rcs.get(key);
      return rc?.metadata?.uid === ref.uid ? { uid: ref.uid, replicas: rc.spec?.replicas ?? 1 } : undefined;
    }
    if (ref.kind === "ReplicaSet") {
      const rs = this.opts.replicasets.get(key);
      if (rs?.metadata?.uid !== ref.uid) return undefined;
      const owner = controllerOf(rs.metadata);
      if (owner?.kind === "Deployment") {
        const d = this.opts.deployments.get(keyOf({ namespace, name: owner.name }));
        return d?.metadata?.uid === owner.uid ? { uid: owner.uid, replicas: d.spec?.replicas ?? 1 } : undefined;
      }
      return { uid: ref.uid, replicas: rs.spec?.replicas ?? 1 };
    }
    return undefined;
  };

  async reconcile(key: string): Promise<Result> {
    const pdb = this.opts.pdbs.get(key);
    const m = pdb?.metadata;
    if (!pdb || !m || m.deletionTimestamp) return done();
    const pods = this.opts.pods.byIndex(BY_NAMESPACE, m.namespace).filter((p) => selects(pdb, p));
    const nowMs = this.now();
    if (pods.length === 0) this.emit(pdb, "Normal", "NoPods", "No matching pods found");
    let status: PodDisruptionBudgetStatus;
    let recheckAt: number | undefined;
    try {
      const c = computeStatus(pdb, pods, this.scaleOf, nowMs);
      status = c.status;
      recheckAt = c.recheckAt;
      if (c.unmanaged.length > 0)
        this.emit(
          pdb,
          "Normal",
          "UnmanagedPods",
          `Pods selected by this PodDisruptionBudget (selector: ${canonical(pdb.spec?.selector ?? {})}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`,
        );
      for (const pod of c.notDeleted)
        this.opts.recorder?.emit(
          objectRef("Pod", "v1", pod),
          "Warning",
          "NotDeleted",
          `Pod was expected by PDB ${m.namespace}/${m.name} to be deleted but it wasn't`,
        );
    } catch (err) {
      if (!(err instanceof SyncError)) throw err;
      this.log.info({ pdb: key, err: err.message }, "disruption budget not computed");
      this.emit(pdb, "Warning", "CalculateExpectedPodCountFailed", `Failed to calculate the number of expected pods: ${err.message}`);
      status = failSafeStatus(pdb, nowMs);
    }
    const changed = canonical(status) !== canonical(pdb.status ?? {});
    this.log.debug(
      { pdb: key, pods: pods.length, healthy: status.currentHealthy, desired: status.desiredHealthy, allowed: status.disruptionsAllowed, changed },
      "disruption budget synced",
    );
    if (changed) await this.writeStatus(pdb, status);
    return recheckAt === undefined ? done() : requeueAfter(Math.max(1, recheckAt - nowMs));
  }

  private emit(pdb: PodDisruptionBudget, type: "Normal" | "Warning", reason: string, message: string): void {
    this.opts.recorder?.emit(objectRef(PDB.kind, PDB.apiVersion, pdb), type, reason, message);
  }

  private async writeStatus(pdb: PodDisruptionBudget, status: PodDisruptionBudgetStatus): Promise<void> {
    try {
      await this.opts.client.updateStatus({ kind: { $case: "podDisruptionBudget", value: { ...pdb, status } } });
    } catch (err) {
      // A newer budget (an eviction spent a disruption) is on its way through the informer, and with it another sync.
      if (!isConflict(err) && !isNotFound(err)) throw err;
      this.log.debug(
        { pdb: keyOf(pdb.metadata ?? { namespace: "", name: "" }), resourceVersion: pdb.metadata?.resourceVersion },
        "disruption budget status written meanwhile",
      );
    }
  }
}
