// Creating and deleting a controller's pods, the same way for every
// workload controller: expectations first, slow start for creations, a uid
// precondition for deletions, an Event for each, and the pod event handlers
// that settle the expectations.
import { isNotFound, keyOf } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { objectRef, type EventRecorder } from "@choreo/kit/events";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import type { EventHandler } from "@choreo/kit/informer";
import type { Expectations } from "./expectations.js";
import { slowStartBatch } from "./expectations.js";
import { controllerOf, type Owner } from "./pod-template.js";

/** Options of {@link PodControl}. */
export interface PodControlOptions {
  client: Pick<ApiClient, "create" | "delete">;
  expectations: Expectations;
  recorder?: Pick<EventRecorder, "emit"> | undefined;
}

export class PodControl {
  constructor(private readonly o: PodControlOptions) {}

  /** Creates `n` pods (`make(i)`) for the controller `key` by slow start; stops at the first failing batch. How many were made, and the error. */
  async create(key: string, owner: Owner, n: number, make: (i: number) => Pod, burst = 500): Promise<{ ok: number; error?: unknown }> {
    if (n <= 0) return { ok: 0 };
    const ref = objectRef(owner.kind, owner.apiVersion, owner);
    this.o.expectations.expectCreations(key, n);
    const result = await slowStartBatch(n, burst, async (i) => {
      const created = await this.o.client.create({ kind: { $case: "pod", value: make(i) } });
      this.o.recorder?.emit(
        ref,
        "Normal",
        "SuccessfulCreate",
        `Created pod: ${created.kind?.$case === "pod" ? (created.kind.value.metadata?.name ?? "") : ""}`,
      );
    });
    // Failed creations and batches that never ran will not be observed (Kubernetes' skippedPods).
    for (let i = result.ok; i < n; i++) this.o.expectations.creationObserved(key);
    if (result.error !== undefined)
      this.o.recorder?.emit(ref, "Warning", "FailedCreate", `Error creating: ${result.error instanceof Error ? result.error.message : String(result.error)}`);
    return result;
  }

  /** Deletes `pods` of the controller `key` (uid precondition; already gone is fine). The first error, if any. */
  async delete(key: string, owner: Owner, pods: readonly Pod[]): Promise<unknown> {
    if (pods.length === 0) return undefined;
    const ref = objectRef(owner.kind, owner.apiVersion, owner);
    this.o.expectations.expectDeletions(
      key,
      pods.map((p) => p.metadata?.uid ?? ""),
    );
    const results = await Promise.allSettled(
      pods.map(async (p) => {
        const m = p.metadata;
        if (!m) return;
        try {
          await this.o.client.delete("pods", m.namespace, m.name, { preconditions: { uid: m.uid, resourceVersion: "" } });
          this.o.recorder?.emit(ref, "Normal", "SuccessfulDelete", `Deleted pod: ${m.name}`);
        } catch (err) {
          this.o.expectations.deletionObserved(key, m.uid);
          if (!isNotFound(err)) throw err;
        }
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (!failed) return undefined;
    this.o.recorder?.emit(ref, "Warning", "FailedDelete", `Error deleting: ${failed.reason instanceof Error ? failed.reason.message : String(failed.reason)}`);
    return failed.reason;
  }
}

/**
 * Pod handlers for a controller of `kind`: a pod it controls settles its
 * expectations (created; deleted, or marked for deletion) and enqueues it.
 */
export function ownedPodHandlers(kind: string, expectations: Expectations, enqueue: (key: string) => void): EventHandler<Pod> {
  const ownerKey = (p: Pod): string | undefined => {
    const ref = controllerOf(p.metadata);
    return ref?.kind === kind && p.metadata ? keyOf({ namespace: p.metadata.namespace, name: ref.name }) : undefined;
  };
  return {
    onAdd: (p) => {
      const k = ownerKey(p);
      if (!k) return;
      expectations.creationObserved(k);
      enqueue(k);
    },
    onUpdate: (o, n) => {
      const k = ownerKey(n) ?? ownerKey(o);
      if (!k) return;
      if (n.metadata?.deletionTimestamp && !o.metadata?.deletionTimestamp) expectations.deletionObserved(k, n.metadata.uid);
      enqueue(k);
    },
    onDelete: (p) => {
      const k = ownerKey(p);
      if (!k) return;
      expectations.deletionObserved(k, p.metadata?.uid ?? "");
      enqueue(k);
    },
  };
}
