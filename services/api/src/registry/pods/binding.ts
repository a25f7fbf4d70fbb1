import { ApiError, BindingRefusal, bindingRefused, conflict, invalid } from "@choreo/kit";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { BindRequest, Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import { PodStatus, type Node, type Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { topLevelCopyOf, type Current, type GenericStore } from "../generic/store.js";
import type { ObjectStorage } from "../../storage/object-storage.js";
import { misfit, podShare, PodShares } from "./node-capacity.js";

/** The pod shares seen by binds, one set per storage (revisions are those of one revision line). */
const sharesByStorage = new WeakMap<ObjectStorage, PodShares>();

function sharesOf(storage: ObjectStorage): PodShares {
  let s = sharesByStorage.get(storage);
  if (!s) sharesByStorage.set(storage, (s = new PodShares()));
  return s;
}

/**
 * The binding subresource: sets an unbound pod's node, under the storage's
 * per-node lock so that binds to one node from any api replica check its
 * capacity one at a time (several schedulers may pick the same last free
 * space). A refusal carries its cause (kit's bindingRefused).
 */
export async function bindPod(store: GenericStore, req: BindRequest): Promise<ApiObject> {
  const info = store.resolve("pods");
  const node = req.binding?.target?.name ?? "";
  if (!node) throw invalid("Binding", req.name, [{ field: "target.name", reason: "FieldValueRequired", message: "Required value" }]);
  const cur = await store.read(info, req.namespace, req.name);
  // bindTo assigns spec.nodeName, status and status.conditions only: the version read stays whole for the write's change record.
  const pod = topLevelCopyOf(cur.value) as Pod;
  const uid = req.binding?.metadata?.uid;
  if (uid && uid !== pod.metadata?.uid) throw conflict("pods", req.name, "the UID in the binding does not match the pod");
  if (pod.spec?.nodeName) throw conflict("pods/binding", req.name, `pod ${req.name} is already assigned to node "${pod.spec.nodeName}"`);
  if (pod.metadata?.deletionTimestamp) throw conflict("pods/binding", req.name, "pod is being deleted, cannot be assigned to a host");
  if (!pod.spec) throw invalid("Pod", req.name, [{ field: "spec", reason: "FieldValueRequired", message: "Required value" }]);
  const bound = await store.storage.withNodeLock(node, async () => {
    // Never past the node's capacity, whichever scheduler asks (Omega).
    const nodeObj = await store.read(store.resolve("nodes"), "", node).catch((err: unknown) => {
      if (err instanceof ApiError && err.reason === "NotFound") return undefined;
      throw err;
    });
    if (nodeObj) {
      // The pods on the node as stored; each version is decoded and parsed once (PodShares).
      const page = await store.storage.list(info.resource, { namespace: "", index: { index: "node", value: node }, limit: 0 });
      const shares = sharesOf(store.storage);
      const others = page.items.map((s) => shares.of(s, (x) => store.decode(info, x) as Pod));
      const why = misfit(nodeObj.value as Node, others, podShare(pod));
      if (why) throw bindingRefused(req.name, node, BindingRefusal.nodeCannotTakePod, why);
    }
    return bindTo(store, pod, node, cur);
  });
  if (!bound) throw bindingRefused(req.name, node, BindingRefusal.nodeBusy);
  return bound.value;
}

async function bindTo(store: GenericStore, pod: Pod, node: string, cur: Current): Promise<ApiObject> {
  if (!pod.spec) throw new Error("pod without spec");
  const info = store.resolve("pods");
  pod.spec.nodeName = node;
  // An absent status: the one a create writes, every field at its default.
  const status = (pod.status ??= PodStatus.fromPartial({ phase: "Pending" }));
  status.conditions = [
    ...status.conditions.filter((c) => c.type !== "PodScheduled"),
    { type: "PodScheduled", status: "True", lastProbeTime: "", lastTransitionTime: nowRfc3339(), reason: "", message: "" },
  ];
  return store.wrapValue(info, await store.write("update", info, pod, cur));
}
