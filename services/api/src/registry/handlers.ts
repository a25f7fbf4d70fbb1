import {
  ApiError, badRequest, conflict, emptyMeta, expired, forbidden, invalid, kindOf, notFound, statusOf, unwrap,
  type AnyObject, type KindInfo,
} from "@choreo/kit";
import { consumeEvents, resourceFilter } from "@choreo/kit/bus";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, kubeStrategicSchema, nowRfc3339, selectorFromSet, type JsonValue } from "@choreo/kit/apimachinery";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type {
  BindRequest, CreateRequest, DeleteCollectionRequest, DeleteRequest, GetRequest, GetScaleRequest, ListRequest, Object as ApiObject, ObjectList,
  PatchRequest, UpdateRequest, UpdateScaleRequest, WatchEvent, WatchRequest,
} from "@choreo/kit/gen/choreo/api/v1/api";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { Node, Pod, ReplicationController } from "@choreo/kit/gen/choreo/core/v1/core";
import { misfit, withNodeLock } from "./node-capacity.js";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import type { WatchCache } from "../storage/watch-cache.js";
import { ObjectStore, SYSTEM_NAMESPACES, type Current } from "./registry.js";
import { changeOf, parseSelection, selectChange, selectsObject, type Selection } from "./selection.js";
import { BindingRefusal, bindingRefused, KINDS } from "@choreo/kit";

/** Kinds whose dependents the garbage collector follows: deleting one with Orphan or Foreground adds its finalizer. */
const GC_OWNER_RESOURCES = new Set(["replicationcontrollers", "daemonsets", "jobs"]);

/** Options of the registry's watch path. */
export interface WatchSource {
  cache: WatchCache;
  nc: NatsConnection;
  jsm: JetStreamManager;
}

const PATCH_TYPES = ["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"];

function encodeContinue(member: string): string {
  return Buffer.from(JSON.stringify({ a: member })).toString("base64url");
}

function decodeContinue(token: string): string {
  try {
    const v = JSON.parse(Buffer.from(token, "base64url").toString()) as { a?: unknown };
    if (typeof v.a === "string") return v.a;
  } catch {
    // fall through
  }
  throw badRequest("continue key is not valid: illegal base64 data or bad JSON");
}

/** The api's verbs over the object store: the one implementation of ApiHandlers. */
export class Registry extends ObjectStore implements ApiHandlers {
  private source?: WatchSource;

  /** Connects the watch path (after the watch cache is running). */
  attachWatch(source: WatchSource): void {
    this.source = source;
  }

  private info(o: ApiObject | undefined): KindInfo {
    if (!o?.kind) throw badRequest("the request has no object");
    return kindOf(o);
  }

  async get(req: GetRequest): Promise<ApiObject> {
    const info = this.resolve(req.resource);
    return this.wrapValue(info, (await this.read(info, req.namespace, req.name)).value);
  }

  async list(req: ListRequest): Promise<ObjectList> {
    const info = this.resolve(req.resource);
    const sel = parseSelection(info, req.namespace, req.labelSelector, req.fieldSelector);
    const nodeReq = info.resource === "pods" ? sel.fields.requirements.find((r) => r.field === "spec.nodeName" && r.operator === "=") : undefined;
    const limit = req.limit > 0 ? Number(req.limit) : 0;
    const page = await this.page(info, {
      namespace: sel.namespace,
      index: nodeReq && nodeReq.value ? { name: "node", value: nodeReq.value } : undefined,
      limit,
      after: req.continue ? decodeContinue(req.continue) : undefined,
    });
    const items = page.items.map((v) => this.wrapValue(info, v)).filter((o) => selectsObject(sel, o));
    return { metadata: { resourceVersion: String(page.revision), continue: page.next ? encodeContinue(page.next) : "" }, items };
  }

  async create(req: CreateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    const v = structuredClone(unwrap(req.object as ApiObject));
    return this.wrapValue(info, await this.createObject(info, v));
  }

  async update(req: UpdateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    return this.wrapValue(info, await this.replace(info, structuredClone(unwrap(req.object as ApiObject)), false));
  }

  async updateStatus(req: UpdateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    return this.wrapValue(info, await this.replace(info, structuredClone(unwrap(req.object as ApiObject)), true));
  }

  /** Update (spec and metadata) or status update, with the checks of both. */
  private async replace(info: KindInfo, v: AnyObject, statusOnly: boolean, current?: Current): Promise<AnyObject> {
    const meta = (v.metadata ??= emptyMeta());
    if (!info.namespaced) meta.namespace = "";
    if (statusOnly && !info.hasStatus) throw notFound(`${info.resource}/status`, meta.name);
    const cur = current ?? (await this.read(info, meta.namespace, meta.name));
    this.checkVersion(info, meta.name, meta.resourceVersion, cur);
    const old = cur.value;
    let next: AnyObject;
    if (statusOnly) {
      next = structuredClone(old);
      (next as { status?: unknown }).status = (v as { status?: unknown }).status;
    } else {
      if (info.hasStatus && !ObjectStore.same((v as { status?: unknown }).status, (old as { status?: unknown }).status) && (v as { status?: unknown }).status !== undefined) {
        throw invalid(info.kind, meta.name, [{ field: "status", reason: "FieldValueForbidden", message: "Forbidden: status may only be changed through the status subresource" }], info.group);
      }
      next = v;
      (next as { status?: unknown }).status = (old as { status?: unknown }).status;
      const om = old.metadata ?? emptyMeta();
      Object.assign(meta, {
        uid: om.uid, creationTimestamp: om.creationTimestamp, deletionTimestamp: om.deletionTimestamp,
        deletionGracePeriodSeconds: om.deletionGracePeriodSeconds, generation: om.generation, generateName: om.generateName,
      });
      this.strategy(info)?.prepareUpdate?.(next, old);
      const spec = (o: AnyObject): unknown => (o as { spec?: unknown }).spec ?? (o as { subsets?: unknown }).subsets;
      if (!ObjectStore.same(spec(next), spec(old))) meta.generation = om.generation + 1;
      this.validate(info, next, old);
    }
    // The last finalizer gone from an object being deleted: it goes.
    const nm = next.metadata ?? emptyMeta();
    if (nm.deletionTimestamp && nm.finalizers.length === 0 && !this.waitsForNode(info, next)) {
      await this.write("update", info, next, cur);
      return this.remove(info, await this.read(info, nm.namespace, nm.name));
    }
    return this.write("update", info, next, cur);
  }

  async patch(req: PatchRequest): Promise<ApiObject> {
    const info = this.resolve(req.resource);
    if (!PATCH_TYPES.includes(req.patchType)) throw new ApiError({ ...badRequest("").status, code: 415, reason: "UnsupportedMediaType", message: `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(", ")}` });
    let patch: JsonValue;
    try {
      patch = JSON.parse(req.patch) as JsonValue;
    } catch (err) {
      throw badRequest(`error decoding patch: ${(err as Error).message}`);
    }
    const statusOnly = req.subresource === "status";
    for (let attempt = 0; ; attempt++) {
      const cur = await this.read(info, req.namespace, req.name);
      const base = toKubeJson(this.wrapValue(info, cur.value));
      (base["metadata"] as Record<string, unknown>)["resourceVersion"] = "";
      let patched: JsonValue;
      try {
        if (req.patchType === "application/json-patch+json") patched = applyJsonPatch(base as JsonValue, patch);
        else if (req.patchType === "application/merge-patch+json") patched = applyMergePatch(base as JsonValue, patch);
        else patched = applyStrategicMergePatch(base as JsonValue, patch, kubeStrategicSchema);
      } catch (err) {
        if (err instanceof ApiError) throw err;
        throw new ApiError({ ...invalid(info.kind, req.name, []).status, code: 422, message: `the server rejected our request due to an error in our request: ${(err as Error).message}`, reason: "Invalid" });
      }
      const obj = fromKubeJson(patched);
      if (obj.kind?.$case !== info.case) throw badRequest("the patch may not change the kind of the object");
      const v = unwrap(obj);
      const meta = (v.metadata ??= emptyMeta());
      if ((meta.name && meta.name !== req.name) || (info.namespaced && meta.namespace && meta.namespace !== req.namespace)) {
        throw badRequest("the name or namespace of the object may not be changed by a patch");
      }
      meta.name = req.name;
      meta.namespace = info.namespaced ? req.namespace : "";
      // A patch that does not touch status keeps it exactly (the JSON round trip is not bit-exact for every optional field).
      if (!statusOnly && info.hasStatus && !patchTouchesStatus(req.patchType, patch)) (v as { status?: unknown }).status = (cur.value as { status?: unknown }).status;
      const userVersion = meta.resourceVersion;
      try {
        return this.wrapValue(info, await this.replace(info, v, statusOnly, cur));
      } catch (err) {
        // Without a resourceVersion in the patch, a concurrent write just means "patch again".
        if (userVersion || attempt >= 8 || !(err instanceof ApiError && err.reason === "Conflict")) throw err;
      }
    }
  }

  private waitsForNode(info: KindInfo, v: AnyObject): boolean {
    if (info.resource !== "pods") return false;
    const pod = v as Pod;
    const phase = pod.status?.phase;
    return Boolean(pod.spec?.nodeName) && phase !== "Succeeded" && phase !== "Failed" && (pod.metadata?.deletionGracePeriodSeconds ?? 1) > 0;
  }

  async delete(req: DeleteRequest): Promise<ApiObject> {
    const info = this.resolve(req.resource);
    const cur = await this.read(info, req.namespace, req.name);
    const v = structuredClone(cur.value);
    const meta = v.metadata ?? emptyMeta();
    const opts = req.options;
    if (opts?.preconditions?.uid && opts.preconditions.uid !== meta.uid) {
      throw conflict(info.resource, req.name, `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${meta.uid}`, info.group);
    }
    if (opts?.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== String(cur.revision)) {
      throw conflict(info.resource, req.name, `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${cur.revision}`, info.group);
    }
    if (opts?.propagationPolicy && !["Orphan", "Background", "Foreground"].includes(opts.propagationPolicy)) {
      throw invalid("DeleteOptions", "", [{ field: "propagationPolicy", reason: "FieldValueNotSupported", message: `Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"` }]);
    }
    if (info.resource === "namespaces") return this.wrapValue(info, await this.deleteNamespace(info, cur));
    // Orphan and Foreground are carried out by the garbage collector (the replication actor) through finalizers.
    const gcFinalizer = opts?.propagationPolicy === "Orphan" ? "orphan" : opts?.propagationPolicy === "Foreground" ? "foregroundDeletion" : "";
    if (gcFinalizer && GC_OWNER_RESOURCES.has(info.resource) && !meta.deletionTimestamp && !meta.finalizers.includes(gcFinalizer)) meta.finalizers.push(gcFinalizer);
    const grace = this.gracePeriod(info, v, opts?.gracePeriodSeconds);
    if (meta.finalizers.length > 0 || grace > 0) {
      if (meta.deletionTimestamp && (grace > 0 || meta.finalizers.length > 0) && (meta.deletionGracePeriodSeconds ?? 0) <= grace) return this.wrapValue(info, cur.value);
      meta.deletionTimestamp = meta.deletionTimestamp || new Date(Date.now() + grace * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
      meta.deletionGracePeriodSeconds = grace;
      if (grace === 0 && meta.finalizers.length === 0) return this.wrapValue(info, await this.remove(info, cur));
      return this.wrapValue(info, await this.write("update", info, v, cur));
    }
    return this.wrapValue(info, await this.remove(info, cur));
  }

  /** Seconds a deletion waits: bound, running pods wait for their node agent. */
  private gracePeriod(info: KindInfo, v: AnyObject, asked: number | undefined): number {
    if (info.resource !== "pods") return 0;
    const pod = v as Pod;
    const phase = pod.status?.phase;
    if (!pod.spec?.nodeName || phase === "Succeeded" || phase === "Failed") return 0;
    return Math.max(0, asked ?? pod.spec.terminationGracePeriodSeconds ?? 30);
  }

  private async deleteNamespace(info: KindInfo, cur: Current): Promise<AnyObject> {
    const name = cur.value.metadata?.name ?? "";
    if (SYSTEM_NAMESPACES.includes(name)) throw forbidden(`namespaces "${name}" is forbidden: this namespace may not be deleted`);
    let v = cur.value;
    if (!v.metadata?.deletionTimestamp) {
      const next = structuredClone(v);
      const meta = next.metadata ?? emptyMeta();
      meta.deletionTimestamp = nowRfc3339();
      (next as { status?: { phase: string } }).status = { phase: "Terminating" };
      v = await this.write("update", info, next, cur);
    }
    void this.purgeNamespace(name).catch((err: unknown) => this.log.error({ err, namespace: name }, "namespace purge failed"));
    return v;
  }

  /** Deletes everything in a terminating namespace, then the namespace. */
  async purgeNamespace(name: string): Promise<void> {
    for (const info of KINDS) {
      if (!info.namespaced) continue;
      for (;;) {
        const page = await this.page(info, { namespace: name, limit: 500 });
        for (const v of page.items) {
          const m = v.metadata ?? emptyMeta();
          await this.remove(info, { value: v, revision: Number(m.resourceVersion) }).catch((err: unknown) => {
            if (!(err instanceof ApiError)) throw err;
          });
        }
        if (!page.next) break;
      }
    }
    const nsInfo = this.resolve("namespaces");
    const cur = await this.read(nsInfo, "", name).catch(() => undefined);
    if (cur) await this.remove(nsInfo, cur).catch((err: unknown) => this.log.warn({ err }, "namespace removal failed"));
    this.log.info({ namespace: name }, "namespace purged");
  }

  async deleteCollection(req: DeleteCollectionRequest): Promise<ObjectList> {
    const list = await this.list({ resource: req.resource, namespace: req.namespace, labelSelector: req.labelSelector, fieldSelector: req.fieldSelector, limit: 0, continue: "" });
    const items: ApiObject[] = [];
    for (const o of list.items) {
      const m = unwrap(o).metadata ?? emptyMeta();
      try {
        items.push(await this.delete({ resource: req.resource, namespace: m.namespace, name: m.name, options: req.options }));
      } catch (err) {
        if (statusOf(err).code !== 404) throw err;
      }
    }
    return { metadata: list.metadata, items };
  }

  async bind(req: BindRequest): Promise<ApiObject> {
    const info = this.resolve("pods");
    const node = req.binding?.target?.name ?? "";
    if (!node) throw invalid("Binding", req.name, [{ field: "target.name", reason: "FieldValueRequired", message: "Required value" }]);
    const cur = await this.read(info, req.namespace, req.name);
    const pod = structuredClone(cur.value) as Pod;
    const uid = req.binding?.metadata?.uid;
    if (uid && uid !== pod.metadata?.uid) throw conflict("pods", req.name, "the UID in the binding does not match the pod");
    if (pod.spec?.nodeName) throw conflict("pods/binding", req.name, `pod ${req.name} is already assigned to node "${pod.spec.nodeName}"`);
    if (pod.metadata?.deletionTimestamp) throw conflict("pods/binding", req.name, "pod is being deleted, cannot be assigned to a host");
    if (!pod.spec) throw invalid("Pod", req.name, [{ field: "spec", reason: "FieldValueRequired", message: "Required value" }]);
    const bound = await withNodeLock(this.store.redis, node, async () => {
      // Never past the node's capacity, whichever scheduler asks (Omega).
      const nodeObj = await this.read(this.resolve("nodes"), "", node).catch((err: unknown) => {
        if (err instanceof ApiError && err.reason === "NotFound") return undefined;
        throw err;
      });
      if (nodeObj) {
        const page = await this.page(info, { namespace: "", index: { name: "node", value: node }, limit: 0 });
        const why = misfit(nodeObj.value as Node, page.items as Pod[], pod);
        if (why) throw bindingRefused(req.name, node, BindingRefusal.nodeCannotTakePod, why);
      }
      return this.bindTo(info, pod, node, cur);
    });
    if (!bound) throw bindingRefused(req.name, node, BindingRefusal.nodeBusy);
    return bound.value;
  }

  private async bindTo(info: KindInfo, pod: Pod, node: string, cur: Current): Promise<ApiObject> {
    if (!pod.spec) throw new Error("pod without spec");
    pod.spec.nodeName = node;
    const status = (pod.status ??= { phase: "Pending", conditions: [], message: "", reason: "", nominatedNodeName: "", hostIp: "", podIp: "", podIps: [], startTime: "", initContainerStatuses: [], containerStatuses: [], qosClass: "" });
    status.conditions = [...status.conditions.filter((c) => c.type !== "PodScheduled"), { type: "PodScheduled", status: "True", lastProbeTime: "", lastTransitionTime: nowRfc3339(), reason: "", message: "" }];
    return this.wrapValue(info, await this.write("update", info, pod, cur));
  }

  private scaleInfo(resource: string): KindInfo {
    const info = this.resolve(resource);
    if (!info.hasScale) throw notFound(`${resource}/scale`, "");
    return info;
  }

  private toScale(rc: ReplicationController): Scale {
    const m = rc.metadata ?? emptyMeta();
    return {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: emptyMeta({ name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp }),
      spec: { replicas: rc.spec?.replicas ?? 0 },
      status: { replicas: rc.status?.replicas ?? 0, selector: selectorFromSet(rc.spec?.selector ?? {}).toString() },
    };
  }

  async getScale(req: GetScaleRequest): Promise<Scale> {
    const info = this.scaleInfo(req.resource);
    return this.toScale((await this.read(info, req.namespace, req.name)).value as ReplicationController);
  }

  async updateScale(req: UpdateScaleRequest): Promise<Scale> {
    const info = this.scaleInfo(req.resource);
    const replicas = req.scale?.spec?.replicas ?? 0;
    if (replicas < 0) throw invalid("Scale", req.name, [{ field: "spec.replicas", reason: "FieldValueInvalid", message: `Invalid value: ${replicas}: must be greater than or equal to 0` }], "autoscaling");
    for (let attempt = 0; ; attempt++) {
      const cur = await this.read(info, req.namespace, req.name);
      const given = req.scale?.metadata?.resourceVersion ?? "";
      this.checkVersion(info, req.name, given, cur);
      const rc = structuredClone(cur.value) as ReplicationController;
      if (!rc.spec) throw invalid(info.kind, req.name, [{ field: "spec", reason: "FieldValueRequired", message: "Required value" }]);
      if (rc.spec.replicas === replicas) return this.toScale(cur.value as ReplicationController);
      rc.spec.replicas = replicas;
      if (rc.metadata) rc.metadata.generation += 1;
      try {
        return this.toScale((await this.write("update", info, rc, cur)) as ReplicationController);
      } catch (err) {
        if (given || attempt >= 8 || !(err instanceof ApiError && err.reason === "Conflict")) throw err;
      }
    }
  }

  /** See ApiHandlers.watch. */
  async *watch(req: WatchRequest, signal: AbortSignal): AsyncGenerator<WatchEvent> {
    const info = this.resolve(req.resource);
    const sel = parseSelection(info, req.namespace, req.labelSelector, req.fieldSelector);
    const source = this.source;
    if (!source) throw new Error("watch is not attached");
    const rv = req.resourceVersion;
    if (rv && !/^\d+$/.test(rv)) throw badRequest(`invalid resource version "${rv}"`);
    const timeout = req.timeoutSeconds > 0 ? AbortSignal.timeout(Number(req.timeoutSeconds) * 1000) : undefined;
    const stop = timeout ? AbortSignal.any([signal, timeout]) : signal;
    let from: number;
    if (!rv || rv === "0") {
      const list = await this.list({ resource: req.resource, namespace: req.namespace, labelSelector: req.labelSelector, fieldSelector: req.fieldSelector, limit: 0, continue: "" });
      for (const o of list.items) yield { type: "ADDED", object: o, status: undefined, revision: Number(unwrap(o).metadata?.resourceVersion ?? 0), prevLabels: {}, prevFields: {}, hasPrev: false };
      from = Number(list.metadata?.resourceVersion ?? 0);
    } else {
      from = Number(rv);
    }
    yield* this.changesAfter(source, sel, from, stop);
  }

  private async *changesAfter(source: WatchSource, sel: Selection, from: number, stop: AbortSignal): AsyncGenerator<WatchEvent> {
    if (source.cache.canServe(from)) {
      const it = source.cache.since(from, stop);
      for (;;) {
        const r = await it.next();
        if (r.done) {
          if (r.value === "expired") yield errorEvent(expired(`too old resource version: ${from} (watcher fell behind)`));
          return;
        }
        const ev = selectChange(sel, r.value);
        if (ev) yield ev;
      }
    }
    // Older than memory holds: read the event log itself (410 if it is gone there too).
    for await (const raw of consumeEvents({ nc: source.nc, jsm: source.jsm, filter: resourceFilter(sel.info.resource, sel.namespace), fromRevision: from, signal: stop })) {
      const c = changeOf(raw);
      const ev = c && selectChange(sel, c);
      if (ev) yield ev;
    }
  }
}

function errorEvent(err: ApiError): WatchEvent {
  return { type: "ERROR", object: undefined, status: err.status, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false };
}

/** Whether a patch names the status (a JSON patch op under /status, or a status key in a merge patch). */
function patchTouchesStatus(patchType: string, patch: JsonValue): boolean {
  if (patchType === "application/json-patch+json") return Array.isArray(patch) && patch.some((op) => typeof op === "object" && op !== null && !Array.isArray(op) && typeof op["path"] === "string" && (op["path"] === "/status" || op["path"].startsWith("/status/")));
  return typeof patch === "object" && patch !== null && !Array.isArray(patch) && "status" in patch;
}
