// The DaemonSet controller: one key per DaemonSet. Every eligible node runs
// exactly one of its pods (spec.nodeName set directly, so the scheduler
// leaves them alone); a template change rolls node by node within
// maxUnavailable (RollingUpdate) or waits for users to delete pods (OnDelete).
import { isConflict, isNotFound, keyOf } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, requeueAfter, type Result } from "@choreo/kit/controller";
import type { EventRecorder } from "@choreo/kit/events";
import type { DaemonSet } from "@choreo/kit/gen/choreo/apps/v1/apps";
import type { Node, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { BY_OWNER, ownerUidsOf, type Cache } from "@choreo/kit/informer";
import { Expectations } from "../expectations.js";
import { PodControl, ownedPodHandlers } from "../pod-control.js";
import { isControlledBy, podFromTemplate } from "../pod-template.js";
import { REVISION_LABEL, daemonTemplate, planDaemonSet, templateHash } from "./plan.js";

/** Options of {@link DaemonSetController}. */
export interface DaemonSetControllerOptions {
  client: Pick<ApiClient, "create" | "delete" | "updateStatus">;
  daemonsets: Cache<DaemonSet>;
  pods: Cache<Pod>;
  nodes: Cache<Node>;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

const DS = { kind: "DaemonSet", apiVersion: "apps/v1" } as const;

export class DaemonSetController implements Runnable {
  readonly name = "daemonset-controller";
  readonly controller: Controller;
  readonly expectations = new Expectations();
  private readonly podControl: PodControl;
  private readonly log: Logger;

  constructor(private readonly opts: DaemonSetControllerOptions) {
    this.log = opts.log.child({ controller: "daemonset" });
    this.podControl = new PodControl({ client: opts.client, expectations: this.expectations, recorder: opts.recorder });
    this.controller = new Controller({
      name: "daemonset",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 2,
      log: opts.log,
      registry: opts.registry,
    });
    opts.pods.addIndexer(BY_OWNER, ownerUidsOf);
    const enqueue = (d: DaemonSet): void => {
      if (d.metadata) this.controller.enqueue(keyOf(d.metadata));
    };
    opts.daemonsets.addEventHandler({
      onAdd: enqueue,
      onUpdate: (_o, n) => enqueue(n),
      onDelete: (d) => d.metadata && this.expectations.forget(keyOf(d.metadata)),
    });
    const all = (): void => {
      for (const d of opts.daemonsets.list()) enqueue(d);
    };
    opts.nodes.addEventHandler({ onAdd: all, onUpdate: (o, n) => placementChanged(o, n) && all(), onDelete: all });
    opts.pods.addEventHandler(ownedPodHandlers(DS.kind, this.expectations, (k) => this.controller.enqueue(k)));
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.daemonsets.waitForSync(signal), this.opts.pods.waitForSync(signal), this.opts.nodes.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  async reconcile(key: string): Promise<Result> {
    const ds = this.opts.daemonsets.get(key);
    const m = ds?.metadata;
    if (!ds || !m) {
      this.expectations.forget(key);
      return done();
    }
    const pods = this.opts.pods.byIndex(BY_OWNER, m.uid).filter((p) => isControlledBy(p.metadata, m.uid) && !p.metadata?.deletionTimestamp);
    const nowMs = Date.now();
    const plan = planDaemonSet(ds, this.opts.nodes.list(), pods, nowMs);

    if (!m.deletionTimestamp && this.expectations.satisfied(key)) {
      const hash = templateHash(ds.spec?.template);
      const template = daemonTemplate(ds);
      const owner = { ...DS, metadata: m };
      const [created, deleteError] = await Promise.all([
        this.podControl.create(key, owner, plan.create.length, (i) =>
          podFromTemplate(template, owner, { nodeName: plan.create[i], labels: { [REVISION_LABEL]: hash } }),
        ),
        this.podControl.delete(key, owner, plan.remove),
      ]);
      if (plan.create.length + plan.remove.length > 0)
        this.log.info({ daemonset: key, created: created.ok, deleted: plan.remove.length }, "daemon pods synced");
      const error = created.error ?? deleteError;
      if (error !== undefined) throw error instanceof Error ? error : new Error(String(error));
    }

    if (JSON.stringify(plan.status) !== JSON.stringify(ds.status)) {
      try {
        await this.opts.client.updateStatus({ kind: { $case: "daemonSet", value: { ...ds, status: plan.status } } });
      } catch (err) {
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
    // minReadySeconds: look again when a ready pod turns available.
    const minReady = ds.spec?.minReadySeconds ?? 0;
    return minReady > 0 && plan.status.numberAvailable < plan.status.numberReady ? requeueAfter(Math.min(minReady * 1000, 1_000)) : done();
  }
}

/** Whether a node change can change where daemon pods belong (labels, taints, readiness for the record). */
function placementChanged(o: Node, n: Node): boolean {
  return (
    JSON.stringify([o.metadata?.labels, o.spec?.taints, o.metadata?.deletionTimestamp]) !==
    JSON.stringify([n.metadata?.labels, n.spec?.taints, n.metadata?.deletionTimestamp])
  );
}
