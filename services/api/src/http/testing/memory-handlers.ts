// An in-memory ApiHandlers for the gateway's unit tests: a map of objects, a
// revision counter, an event log for watches. Crude on purpose (selectors by
// the kit's parsers, little validation); the real store lives elsewhere.
import { randomUUID } from "node:crypto";
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  fieldError,
  invalid,
  kindByResource,
  kindOf,
  notFound,
  selectableFields,
  unwrap,
  type ApiObject,
  type KindInfo,
  type ObjectList,
  type WatchEvent,
} from "@choreo/kit";
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  kubeStrategicSchema,
  parseFieldSelector,
  parseLabelSelector,
  FieldSelectorError,
  PatchError,
  SelectorParseError,
  type JsonValue,
} from "@choreo/kit/apimachinery";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type {
  BindRequest,
  CreateRequest,
  DeleteCollectionRequest,
  DeleteRequest,
  EvictRequest,
  GetRequest,
  GetScaleRequest,
  ListRequest,
  PatchRequest,
  UpdateRequest,
  UpdateScaleRequest,
  WatchRequest,
} from "@choreo/kit/gen/choreo/api/v1/api";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import type { ApiHandlers } from "../../handlers/api-handlers.js";

type Json = Record<string, unknown>;
type Meta = { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; generateName?: string; [k: string]: unknown };

interface Change {
  revision: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  resource: string;
  object: Json;
}

const metaOf = (o: Json): Meta => (o["metadata"] ??= {}) as Meta;

function info(resource: string): KindInfo {
  const k = kindByResource(resource);
  if (!k) throw notFound(resource, "");
  return k;
}

export class MemoryHandlers implements ApiHandlers {
  private readonly objects = new Map<string, Json>();
  private readonly log: Change[] = [];
  private readonly listeners = new Set<() => void>();
  revision = 100;
  /** Watches from a revision below this get 410 Expired. */
  oldest = 0;
  /** Watch iterators running now (the disconnect test polls it). */
  activeWatches = 0;
  /** Every request seen, by method (tests inspect them). */
  readonly calls: { method: string; req: unknown }[] = [];

  private key(resource: string, namespace: string, name: string): string {
    return `${resource}/${namespace}/${name}`;
  }

  private out(o: Json): ApiObject {
    return fromKubeJson(structuredClone(o), { strict: false });
  }

  private record(type: Change["type"], resource: string, object: Json): void {
    this.log.push({ revision: this.revision, type, resource, object: structuredClone(object) });
    for (const l of this.listeners) l();
  }

  private current(resource: string, namespace: string, name: string): Json {
    const o = this.objects.get(this.key(resource, namespace, name));
    if (!o) throw notFound(resource, name, info(resource).group);
    return o;
  }

  /** Forgets the event log up to now: older watches get 410. */
  compact(): void {
    this.oldest = this.revision;
    this.log.length = 0;
  }

  /** Matcher for namespace + selectors (400 on bad selectors, like the real api). */
  private matcher(resource: string, namespace: string, labelSelector: string, fieldSelector: string): (o: Json) => boolean {
    const k = info(resource);
    let labels, fields;
    try {
      labels = parseLabelSelector(labelSelector);
      fields = parseFieldSelector(fieldSelector);
    } catch (err) {
      if (err instanceof SelectorParseError || err instanceof FieldSelectorError) throw badRequest(err.message);
      throw err;
    }
    for (const f of fields.fields()) {
      if (f !== "metadata.name" && f !== "metadata.namespace" && !k.selectableFields.includes(f)) throw badRequest(`field label not supported: ${f}`);
    }
    return (o) => {
      const m = metaOf(o);
      if (namespace && m.namespace !== namespace) return false;
      if (!labels.matches(m.labels ?? {})) return false;
      if (fields.isEverything()) return true;
      const values = selectableFields(k, unwrap(this.out(o)));
      return fields.matches((f) => values[f]);
    };
  }

  private sorted(resource: string): Json[] {
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(`${resource}/`))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, o]) => o);
  }

  async get(req: GetRequest): Promise<ApiObject> {
    this.calls.push({ method: "get", req });
    return this.out(this.current(req.resource, req.namespace, req.name));
  }

  async list(req: ListRequest): Promise<ObjectList> {
    this.calls.push({ method: "list", req });
    const match = this.matcher(req.resource, req.namespace, req.labelSelector, req.fieldSelector);
    const all = this.sorted(req.resource).filter(match);
    const start = req.continue ? Number(req.continue) : 0;
    if (!Number.isInteger(start) || start < 0) throw badRequest(`invalid continue token "${req.continue}"`);
    const end = req.limit > 0 ? Math.min(all.length, start + req.limit) : all.length;
    return {
      metadata: { resourceVersion: String(this.revision), continue: end < all.length ? String(end) : "", remainingItemCount: undefined },
      items: all.slice(start, end).map((o) => this.out(o)),
    };
  }

  async *watch(req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> {
    this.calls.push({ method: "watch", req });
    const match = this.matcher(req.resource, req.namespace, req.labelSelector, req.fieldSelector);
    const ev = (type: string, object: Json, revision: number): WatchEvent => ({
      type,
      object: this.out(object),
      revision,
      prevLabels: {},
      prevFields: {},
      hasPrev: false,
    });
    let from: number;
    const queue: WatchEvent[] = [];
    if (req.resourceVersion === "" || req.resourceVersion === "0") {
      for (const o of this.sorted(req.resource).filter(match)) queue.push(ev("ADDED", o, Number(metaOf(o).resourceVersion)));
      from = this.revision;
    } else {
      from = Number(req.resourceVersion);
      if (!Number.isInteger(from)) throw badRequest(`invalid resourceVersion "${req.resourceVersion}"`);
      if (from < this.oldest) throw expired(`too old resource version: ${from} (${this.oldest})`);
    }
    this.activeWatches++;
    let wake: (() => void) | undefined;
    const poke = () => wake?.();
    this.listeners.add(poke);
    signal.addEventListener("abort", poke);
    const deadline = setTimeout(poke, (req.timeoutSeconds || 3600) * 1000);
    const endAt = Date.now() + (req.timeoutSeconds || 3600) * 1000;
    try {
      for (;;) {
        // Armed before scanning: a change recorded while we yield wakes the next wait.
        const changed = new Promise<void>((resolve) => (wake = resolve));
        for (const c of this.log) {
          if (c.revision <= from || c.resource !== req.resource) continue;
          from = c.revision;
          if (match(c.object)) queue.push(ev(c.type, c.object, c.revision));
        }
        while (queue.length > 0) {
          if (signal.aborted) return;
          yield queue.shift()!;
        }
        if (signal.aborted || Date.now() >= endAt) return;
        await changed;
      }
    } finally {
      clearTimeout(deadline);
      this.listeners.delete(poke);
      signal.removeEventListener("abort", poke);
      this.activeWatches--;
    }
  }

  private validate(k: KindInfo, o: Json): void {
    const m = metaOf(o);
    if (!m.name) throw invalid(k.kind, "", [fieldError("metadata.name", "FieldValueRequired", "name or generateName is required")], k.group);
    if (k.resource === "pods") {
      const containers = ((o["spec"] as Json | undefined)?.["containers"] ?? []) as Json[];
      const causes = containers.flatMap((c, i) => (c["image"] ? [] : [fieldError(`spec.containers[${i}].image`, "FieldValueRequired", "Required value")]));
      if (containers.length === 0) causes.push(fieldError("spec.containers", "FieldValueRequired", "Required value"));
      if (causes.length) throw invalid(k.kind, m.name, causes, k.group);
    }
  }

  private store(k: KindInfo, o: Json, type: Change["type"], dryRun = false): ApiObject {
    const m = metaOf(o);
    if (dryRun) return this.out(o);
    this.revision++;
    m.resourceVersion = String(this.revision);
    this.objects.set(this.key(k.resource, m.namespace ?? "", m.name ?? ""), o);
    this.record(type, k.resource, o);
    return this.out(o);
  }

  async create(req: CreateRequest): Promise<ApiObject> {
    this.calls.push({ method: "create", req });
    const k = kindOf(req.object!);
    const o = toKubeJson(req.object!);
    const m = metaOf(o);
    if (!m.name && m.generateName) m.name = `${m.generateName}${randomUUID().slice(0, 5)}`;
    this.validate(k, o);
    if (this.objects.has(this.key(k.resource, m.namespace ?? "", m.name!))) throw alreadyExists(k.resource, m.name!, k.group);
    m.uid = randomUUID();
    m.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    m.generation = 1;
    return this.store(k, o, "ADDED", req.dryRun);
  }

  private replace(req: UpdateRequest, statusOnly: boolean): ApiObject {
    const k = kindOf(req.object!);
    const o = toKubeJson(req.object!);
    const m = metaOf(o);
    const cur = this.current(k.resource, m.namespace ?? "", m.name ?? "");
    if (m.resourceVersion && m.resourceVersion !== metaOf(cur).resourceVersion) {
      throw conflict(k.resource, m.name!, "the object has been modified; please apply your changes to the latest version and try again", k.group);
    }
    const next: Json = statusOnly
      ? { ...structuredClone(cur), status: o["status"] }
      : { ...o, ...(cur["status"] ? { status: structuredClone(cur["status"]) } : {}) };
    if (!statusOnly) {
      const cm = metaOf(cur);
      Object.assign(metaOf(next), { uid: cm.uid, creationTimestamp: cm.creationTimestamp, generation: cm["generation"] });
      this.validate(k, next);
    }
    return this.store(k, next, "MODIFIED", req.dryRun);
  }

  async update(req: UpdateRequest): Promise<ApiObject> {
    this.calls.push({ method: "update", req });
    return this.replace(req, false);
  }

  async updateStatus(req: UpdateRequest): Promise<ApiObject> {
    this.calls.push({ method: "updateStatus", req });
    return this.replace(req, true);
  }

  async patch(req: PatchRequest): Promise<ApiObject> {
    this.calls.push({ method: "patch", req });
    const k = info(req.resource);
    const cur = this.current(req.resource, req.namespace, req.name);
    const patch = JSON.parse(req.patch) as JsonValue;
    let next: JsonValue;
    try {
      if (req.patchType === "application/json-patch+json") next = applyJsonPatch(cur as JsonValue, patch);
      else if (req.patchType === "application/merge-patch+json") next = applyMergePatch(cur as JsonValue, patch);
      else next = applyStrategicMergePatch(cur as JsonValue, patch, kubeStrategicSchema);
    } catch (err) {
      if (err instanceof PatchError) throw badRequest(err.message);
      throw err;
    }
    const n = next as Json;
    const rv = metaOf(n).resourceVersion;
    if (rv && rv !== metaOf(cur).resourceVersion)
      throw conflict(k.resource, req.name, "the object has been modified; please apply your changes to the latest version and try again", k.group);
    const obj = fromKubeJson(n); // strict: a patch may not add unknown fields
    const o = toKubeJson(obj);
    const merged =
      req.subresource === "status"
        ? { ...structuredClone(cur), status: o["status"] }
        : { ...o, ...(cur["status"] ? { status: structuredClone(cur["status"]) } : {}) };
    this.validate(k, merged);
    return this.store(k, merged, "MODIFIED");
  }

  async delete(req: DeleteRequest): Promise<ApiObject> {
    this.calls.push({ method: "delete", req });
    const o = this.current(req.resource, req.namespace, req.name);
    if (req.options?.dryRun.includes("All")) return this.out(o);
    this.objects.delete(this.key(req.resource, req.namespace, req.name));
    this.revision++;
    metaOf(o).resourceVersion = String(this.revision);
    this.record("DELETED", req.resource, o);
    return this.out(o);
  }

  async deleteCollection(req: DeleteCollectionRequest): Promise<ObjectList> {
    this.calls.push({ method: "deleteCollection", req });
    const match = this.matcher(req.resource, req.namespace, req.labelSelector, req.fieldSelector);
    const items: ApiObject[] = [];
    for (const o of this.sorted(req.resource).filter(match)) {
      const m = metaOf(o);
      items.push(await this.delete({ resource: req.resource, namespace: m.namespace ?? "", name: m.name ?? "", options: req.options }));
    }
    return { metadata: { resourceVersion: String(this.revision), continue: "", remainingItemCount: undefined }, items };
  }

  async bind(req: BindRequest): Promise<ApiObject> {
    this.calls.push({ method: "bind", req });
    const cur = structuredClone(this.current("pods", req.namespace, req.name));
    const spec = (cur["spec"] ??= {}) as Json;
    if (spec["nodeName"]) throw conflict("pods", req.name, `pod ${req.name} is already assigned to node "${String(spec["nodeName"])}"`);
    spec["nodeName"] = req.binding?.target?.name ?? "";
    return this.store(info("pods"), cur, "MODIFIED");
  }

  /** Deletes the pod (no disruption budgets here). */
  async evict(req: EvictRequest): Promise<ApiObject> {
    this.calls.push({ method: "evict", req });
    return this.delete({ resource: "pods", namespace: req.namespace, name: req.name, options: req.eviction?.deleteOptions });
  }

  private scaleOf(k: KindInfo, o: Json): Scale {
    const m = metaOf(o);
    const spec = (o["spec"] ?? {}) as { replicas?: number; selector?: Record<string, string> };
    const status = (o["status"] ?? {}) as { replicas?: number };
    return {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: { ...fromKubeJson({ apiVersion: k.apiVersion, kind: k.kind, metadata: m }, { strict: false }).kind!.value.metadata! },
      spec: { replicas: spec.replicas ?? 0 },
      status: {
        replicas: status.replicas ?? 0,
        selector: Object.entries(spec.selector ?? {})
          .map(([a, b]) => `${a}=${b}`)
          .join(","),
      },
    };
  }

  async getScale(req: GetScaleRequest): Promise<Scale> {
    this.calls.push({ method: "getScale", req });
    const k = info(req.resource);
    if (!k.hasScale) throw notFound(`${req.resource}/scale`, req.name);
    return this.scaleOf(k, this.current(req.resource, req.namespace, req.name));
  }

  async updateScale(req: UpdateScaleRequest): Promise<Scale> {
    this.calls.push({ method: "updateScale", req });
    const k = info(req.resource);
    const cur = structuredClone(this.current(req.resource, req.namespace, req.name));
    const rv = req.scale?.metadata?.resourceVersion;
    if (rv && rv !== metaOf(cur).resourceVersion)
      throw conflict(req.resource, req.name, "the object has been modified; please apply your changes to the latest version and try again", k.group);
    const replicas = req.scale?.spec?.replicas ?? 0;
    if (replicas < 0) throw invalid("Scale", req.name, [fieldError("spec.replicas", "FieldValueInvalid", "must be greater than or equal to 0")], "autoscaling");
    ((cur["spec"] ??= {}) as Json)["replicas"] = replicas;
    this.store(k, cur, "MODIFIED");
    return this.scaleOf(k, cur);
  }

  /** Test helper: stores a Kubernetes JSON object directly. */
  seed(json: Json): ApiObject {
    const obj = fromKubeJson(json);
    const o = toKubeJson(obj);
    const m = metaOf(o);
    m.uid ??= randomUUID();
    m.creationTimestamp ??= "2025-01-01T00:00:00Z";
    return this.store(kindOf(obj), o, "ADDED");
  }
}
