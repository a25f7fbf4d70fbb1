// The eviction subresource (pods/NAME/eviction), as Kubernetes'
// pkg/registry/core/pod/storage/eviction.go: a pod is deleted unless the
// PodDisruptionBudget that selects it has no disruption left (429). The
// budget's status is decremented and the pod recorded in disruptedPods
// before the delete, so two evictions never spend the same disruption. The
// pod is marked first with the DisruptionTarget condition (reason
// EvictionByEvictionAPI), so whoever sees it terminating knows why.
import { ApiError, conflict, DISRUPTION_TARGET, failure, internal, isConflict, kindByCase, withPodCondition } from "@choreo/kit";
import { nowRfc3339, selectorFromLabelSelector, SelectorParseError } from "@choreo/kit/apimachinery";
import type { EvictRequest, Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { PodDisruptionBudget } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { isDryRun } from "../generic/dry-run.js";
import type { Current, GenericStore } from "../generic/store.js";

/** Kubernetes' MaxDisruptedPodSize: more unconfirmed evictions than this are refused. */
const MAX_DISRUPTED_PODS = 2000;
/** Conflicting writes of a budget's status retried before giving up (client-go's DefaultRetry has 5 steps). */
const STATUS_ATTEMPTS = 5;

const VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget.";

/** The condition an evicted pod carries before its deletion (Kubernetes' eviction.go, word for word). */
export const EVICTION_CONDITION = { type: DISRUPTION_TARGET, status: "True", reason: "EvictionByEvictionAPI", message: "Eviction API: evicting" };
/** Conflicting writes of the pod's condition retried on the newer pod before giving up. */
const CONDITION_ATTEMPTS = 5;

function tooManyRequests(why: string): ApiError {
  return new ApiError(failure(429, "TooManyRequests", VIOLATION, { causes: [{ reason: "DisruptionBudget", message: why, field: "" }] }));
}

function isReady(pod: Pod): boolean {
  return pod.status?.conditions.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** A terminal, pending or terminating pod: its eviction disrupts nothing (Kubernetes' canIgnorePDB). */
function ignoresBudget(pod: Pod): boolean {
  const phase = pod.status?.phase ?? "";
  return phase === "Succeeded" || phase === "Failed" || phase === "Pending" || phase === "" || !!pod.metadata?.deletionTimestamp;
}

/** The budgets whose selector matches the pod; a nil or empty selector matches none here, as Kubernetes' eviction. */
async function budgetsOf(store: GenericStore, pod: Pod): Promise<PodDisruptionBudget[]> {
  const info = kindByCase("podDisruptionBudget");
  const page = await store.page(info, { namespace: pod.metadata?.namespace ?? "", limit: 0 });
  const labels = pod.metadata?.labels ?? {};
  return (page.items as PodDisruptionBudget[]).filter((pdb) => {
    const sel = pdb.spec?.selector;
    if (!sel) return false;
    try {
      const s = selectorFromLabelSelector(sel);
      return !s.isEverything() && s.matches(labels);
    } catch (err) {
      if (err instanceof SelectorParseError) return false;
      throw err;
    }
  });
}

/**
 * Spends one disruption of the budget for the pod (Kubernetes'
 * checkAndDecrement), on the version read, or refuses with 429.
 */
export function decrementBudget(pdb: PodDisruptionBudget, podName: string, now: string): PodDisruptionBudget {
  const name = pdb.metadata?.name ?? "";
  const status = pdb.status;
  if (!status || status.observedGeneration < (pdb.metadata?.generation ?? 0))
    throw tooManyRequests(`The disruption budget ${name} is still being processed by the server.`);
  if (status.disruptionsAllowed < 0)
    throw new ApiError(failure(403, "Forbidden", `poddisruptionbudgets.policy "${name}" is forbidden: pdb disruptions allowed is negative`));
  if (Object.keys(status.disruptedPods).length > MAX_DISRUPTED_PODS)
    throw new ApiError(
      failure(
        403,
        "Forbidden",
        `poddisruptionbudgets.policy "${name}" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller`,
      ),
    );
  if (status.disruptionsAllowed === 0)
    throw tooManyRequests(`The disruption budget ${name} needs ${status.desiredHealthy} healthy pods and has ${status.currentHealthy} currently`);
  const next = structuredClone(pdb);
  const s = next.status!;
  s.disruptionsAllowed--;
  if (s.disruptionsAllowed === 0) {
    const old = s.conditions.find((c) => c.type === "DisruptionAllowed");
    const cond = {
      type: "DisruptionAllowed",
      status: "False",
      observedGeneration: s.observedGeneration,
      lastTransitionTime: old?.status === "False" ? old.lastTransitionTime : now,
      reason: "InsufficientPods",
      message: "",
    };
    s.conditions = [...s.conditions.filter((c) => c.type !== "DisruptionAllowed"), cond];
  }
  s.disruptedPods[podName] = now;
  return next;
}

/** Decrements the budget's status, re-reading it after a conflicting write. */
async function spend(store: GenericStore, pdb: PodDisruptionBudget, podName: string): Promise<void> {
  const info = kindByCase("podDisruptionBudget");
  const meta = pdb.metadata!;
  let cur: Current | undefined;
  for (let attempt = 1; ; attempt++) {
    const budget = (cur?.value as PodDisruptionBudget | undefined) ?? pdb;
    const next = decrementBudget(budget, podName, nowRfc3339());
    try {
      await store.replace(info, next, true, cur);
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= STATUS_ATTEMPTS) throw err;
      cur = await store.read(info, meta.namespace, meta.name);
    }
  }
}

/**
 * Marks the pod with the DisruptionTarget condition, then deletes it
 * (Kubernetes' addConditionAndDeletePod). The condition is written on the
 * latest pod — re-read after a conflicting write (the node agent's status) —
 * which must still meet the preconditions (409 otherwise); a resourceVersion
 * precondition then moves to the version written, the eviction's own. A dry
 * run writes no condition.
 */
async function markAndDelete(store: GenericStore, namespace: string, name: string, options: DeleteOptions): Promise<ApiObject> {
  const podInfo = kindByCase("pod");
  const pre = options.preconditions;
  for (let attempt = 1; !isDryRun(store); attempt++) {
    const cur = await store.read(podInfo, namespace, name);
    const pod = cur.value as Pod;
    const uid = pod.metadata?.uid ?? "";
    if (pre?.uid && pre.uid !== uid)
      throw conflict(
        "pods",
        name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${uid}). The object might have been deleted and then recreated`,
      );
    if (pre?.resourceVersion && pre.resourceVersion !== String(cur.revision))
      throw conflict(
        "pods",
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${cur.revision}). The object might have been modified`,
      );
    const status = withPodCondition(pod.status, EVICTION_CONDITION, nowRfc3339());
    if (!status) break;
    try {
      const written = await store.replace(podInfo, { ...pod, status }, true, cur);
      if (pre?.resourceVersion) pre.resourceVersion = written.metadata?.resourceVersion ?? "";
      break;
    } catch (err) {
      if (!isConflict(err) || attempt >= CONDITION_ATTEMPTS) throw err;
    }
  }
  return store.delete({ resource: "pods", namespace, name, options });
}

/**
 * Evicts a pod: checks its disruption budget, then deletes it with the
 * eviction's deleteOptions (its UID as a precondition, so a pod recreated
 * under the same name meanwhile is not the one deleted), marked first as a
 * DisruptionTarget.
 */
export async function evictPod(store: GenericStore, req: EvictRequest): Promise<ApiObject> {
  const podInfo = kindByCase("pod");
  const cur = await store.read(podInfo, req.namespace, req.name);
  const pod = cur.value as Pod;
  const options = structuredClone(req.eviction?.deleteOptions) ?? DeleteOptions.fromPartial({});
  const given = options.preconditions;
  if (given?.uid && given.uid !== pod.metadata?.uid)
    throw conflict("pods", req.name, `Precondition failed: UID in precondition: ${given.uid}, UID in object meta: ${pod.metadata?.uid ?? ""}`);
  options.preconditions = { uid: pod.metadata?.uid ?? "", resourceVersion: given?.resourceVersion ?? "" };
  if (!ignoresBudget(pod)) {
    const budgets = await budgetsOf(store, pod);
    if (budgets.length > 1) throw internal("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.");
    const pdb = budgets[0];
    if (pdb) {
      const s = pdb.status;
      const unhealthy = !isReady(pod);
      const alwaysAllow = pdb.spec?.unhealthyPodEvictionPolicy === "AlwaysAllow";
      // A not-ready pod is no healthy pod the budget counts: it goes without spending a disruption when
      // the policy allows it or the budget is met, provided it is still the version read (not ready yet).
      if (unhealthy && (alwaysAllow || (s && s.desiredHealthy > 0 && s.currentHealthy >= s.desiredHealthy))) {
        if (!options.preconditions.resourceVersion) {
          // The pod changed since it was read (ready again, perhaps): the client is told to retry, as Kubernetes does.
          options.preconditions.resourceVersion = String(cur.revision);
          return markAndDelete(store, req.namespace, req.name, options).catch((err: unknown) => {
            throw isConflict(err) ? tooManyRequests(`The disruption budget ${pdb.metadata?.name ?? ""} is still being processed by the server.`) : err;
          });
        }
      } else {
        await spend(store, pdb, req.name);
      }
    }
  }
  return markAndDelete(store, req.namespace, req.name, options);
}
