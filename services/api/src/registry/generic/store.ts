import { randomUUID } from "node:crypto";
import {
  ApiError,
  badRequest,
  expired,
  failure,
  conflict,
  emptyMeta,
  forbidden,
  invalid,
  kindByResource,
  kindOf,
  notFound,
  selectableFields,
  statusOf,
  tooLarge,
  alreadyExists,
  unwrap,
  type AnyObject,
  type KindInfo,
  type ObjectMeta,
} from "@choreo/kit";
import { eventSubject } from "@choreo/kit/bus";
import { generateName, nowRfc3339 } from "@choreo/kit/apimachinery";
import {
  Object as ObjectMsg,
  WatchEvent,
  type CreateRequest,
  type DeleteCollectionRequest,
  type DeleteRequest,
  type GetRequest,
  type ListRequest,
  type ObjectList,
  type Object as ApiObject,
  type UpdateRequest,
} from "@choreo/kit/gen/choreo/api/v1/api";
import { messageToKubeJson } from "@choreo/kit/kube-json";
import type { Logger } from "@choreo/kit/log";
import type { ObjectCache } from "../../storage/object-cache.js";
import { StoreError, type IndexEntry, type ObjectStorage, type Stored } from "../../storage/object-storage.js";
import { canonicalJson } from "../shared/canonical.js";
import { isDryRun } from "./dry-run.js";
import { encode, encodeWith } from "../shared/encode.js";
import { noteWritten } from "../shared/written.js";
import { NO_SCOPE, within, type RequestScope } from "./request-scope.js";
import { Errors, validateMeta } from "../shared/validation.js";
import { trackManagedFields } from "./managed-fields-store.js";
import { parseSelection, selects, selectsObject, type Selection } from "./selection.js";
import type { Strategies, Strategy } from "./strategy.js";

/** Objects above this size (encoded) are refused with 413, as etcd would. */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;

/** WatchEvent's `object` (field 2, length-delimited) as a protobuf tag. */
const WATCH_EVENT_OBJECT_TAG = (2 << 3) | 2;

/**
 * Per storage, each namespace's stored bytes last read by a create, and
 * whether that version is being deleted: a create decodes its namespace only
 * when the bytes differ (same bytes, same object). Dropped whole past 4,096.
 */
const namespacesSeen = new WeakMap<ObjectStorage, Map<string, { bytes: Uint8Array; terminating: boolean }>>();

/** The state of an object as read: its value and revision. */
export interface Current {
  value: AnyObject;
  revision: number;
}

/**
 * A deep copy of `v`, an object of `info`'s kind: its message's fromPartial,
 * which copies every field, ~20× cheaper than structuredClone on these plain
 * messages (a pod: 1 µs against 20). Bytes fields are shared — nothing
 * writes into one.
 */
export function copyOf<T extends AnyObject>(info: KindInfo, v: T): T {
  return unwrap(ObjectMsg.fromPartial({ kind: { $case: info.case, value: v } } as ApiObject)) as T;
}

/**
 * A copy of `v` (an object just decoded, which nobody else holds) whose top
 * level and that of its metadata, spec and status are its own; below them
 * it shares `v`'s parts. For a write that only assigns at those levels (bind:
 * spec.nodeName, status.conditions; a status update: status): `v` stays as
 * read for the change record's previous labels and fields, the indexes and
 * the managed fields' comparison — without copyOf's copy of every field.
 */
export function topLevelCopyOf<T extends AnyObject>(v: T): T {
  const o: T & { spec?: object; status?: object } = { ...v };
  if (v.metadata) o.metadata = { ...v.metadata };
  if (o.spec) o.spec = { ...o.spec };
  if (o.status) o.status = { ...o.status };
  return o;
}

/**
 * An object's status as Kubernetes JSON. Module functions, not closures made per update: tsx's keepNames wraps a
 * named closure in __name (a defineProperty) each time it is made.
 */
function statusJson(info: KindInfo, o: AnyObject): unknown {
  return messageToKubeJson(info.protoType, o)["status"];
}

/** An object's spec (an Endpoints' subsets) as Kubernetes JSON. */
function specJson(info: KindInfo, o: AnyObject): unknown {
  const json = messageToKubeJson(info.protoType, o);
  return json["spec"] ?? json["subsets"];
}

/** The object of a request, copied (the store fills and changes it) unless the request is the call's own (`ownsRequest`). */
function requestObject(info: KindInfo, o: ApiObject | undefined, scope: RequestScope): AnyObject {
  const v = unwrap(o as ApiObject);
  return scope.ownsRequest ? v : copyOf(info, v);
}

/**
 * The generic store (Kubernetes' registry/generic Store): the verbs every
 * kind shares — get, list, create, update, delete — with metadata,
 * preconditions, finalizers and optimistic concurrency, over the object
 * storage. What differs per kind comes from its strategy.
 */
export class GenericStore {
  /**
   * The api's object cache (Kubernetes' cacher), once attached: GETs and
   * lists with resourceVersion "0" or N (not older than N; Exact N while kept)
   * and continued pages of its lists are served from it.
   */
  objectCache: ObjectCache | undefined;
  /** Consistent lists (no resourceVersion) from the cache once it reached the store's revision (Kubernetes' ConsistentListFromCache). */
  consistentListFromCache = false;
  /** How long a read waits for the cache to reach a revision (Kubernetes: 3 s). */
  cacheWaitMs = 3_000;
  /**
   * The request this store serves: none on the store itself (the api's own
   * writes); a request's view of the store (`withScope`) carries its
   * admission context, dry run, field manager, subresource.
   */
  scope: RequestScope = NO_SCOPE;

  constructor(
    readonly storage: ObjectStorage,
    readonly strategies: Strategies,
    readonly log: Logger,
  ) {}

  /**
   * This store as a request with `part` in its scope (the rest of this
   * store's scope kept) sees it: everything else — storage, strategies,
   * object cache — is this store's.
   */
  withScope(part: RequestScope): GenericStore {
    const view = Object.create(this) as GenericStore;
    view.scope = within(this.scope, part);
    return view;
  }

  strategy(info: KindInfo): Strategy | undefined {
    return this.strategies[info.case];
  }

  resolve(resource: string): KindInfo {
    const info = kindByResource(resource);
    if (!info) throw new ApiError({ ...notFound(resource, "").status, message: "the server could not find the requested resource", details: undefined });
    return info;
  }

  decode(info: KindInfo, s: Stored): AnyObject {
    const o = ObjectMsg.decode(s.bytes);
    if (o.kind?.$case !== info.case) throw new Error(`stored ${info.resource} has kind ${o.kind?.$case}`);
    const v = this.fromStorage(info, o.kind.value);
    v.metadata ??= emptyMeta();
    v.metadata.resourceVersion = String(s.revision);
    v.apiVersion = info.apiVersion;
    v.kind = info.kind;
    return v;
  }

  /** The object a stored form holds (the strategy's fromStorage: Secrets are unsealed). */
  fromStorage(info: KindInfo, stored: AnyObject): AnyObject {
    return this.strategy(info)?.fromStorage?.(stored) ?? stored;
  }

  /** A change as clients see it: its object out of the stored form; an ERROR event when that fails. */
  openEvent(ev: WatchEvent): WatchEvent {
    const o = ev.object;
    if (!o?.kind) return ev;
    const info = kindOf(o);
    if (!this.strategy(info)?.fromStorage) return ev;
    try {
      return { ...ev, object: this.wrapValue(info, this.fromStorage(info, o.kind.value)) };
    } catch (err) {
      return { ...ev, type: "ERROR", object: undefined, status: statusOf(err) };
    }
  }

  async read(info: KindInfo, namespace: string, name: string): Promise<Current> {
    const s = await this.storage.get(info.resource, info.namespaced ? namespace : "", name);
    if (!s) throw notFound(info.resource, name, info.group);
    return { value: this.decode(info, s), revision: s.revision };
  }

  wrapValue(info: KindInfo, v: AnyObject): ApiObject {
    return { kind: { $case: info.case, value: v } as NonNullable<ApiObject["kind"]> };
  }

  /** Metadata errors only → 422. */
  validateMeta(info: KindInfo, v: AnyObject): void {
    const e = new Errors();
    validateMeta(e, v.metadata ?? emptyMeta(), info.namespaced, this.strategy(info)?.nameRule ?? "subdomain");
    if (e.causes.length) throw invalid(info.kind, v.metadata?.name ?? "", e.causes, info.group);
  }

  /** Field errors common to every kind plus the kind's own → 422. */
  validate(info: KindInfo, v: AnyObject, old?: AnyObject): void {
    const e = new Errors();
    validateMeta(e, v.metadata ?? emptyMeta(), info.namespaced, this.strategy(info)?.nameRule ?? "subdomain");
    e.causes.push(...(this.strategy(info)?.validate(v, old, this.scope) ?? []));
    if (e.causes.length) throw invalid(info.kind, v.metadata?.name ?? "", e.causes, info.group);
  }

  /**
   * Writes one version. `old` is the version read before (update/delete):
   * the write happens only if it is still the stored one (else 409).
   */
  async write(mode: "create" | "update" | "delete", info: KindInfo, v: AnyObject, old?: Current): Promise<AnyObject> {
    const meta = v.metadata ?? emptyMeta();
    const strategy = this.strategy(info);
    const namespace = info.namespaced ? meta.namespace : "";
    meta.resourceVersion = "";
    v.apiVersion = info.apiVersion;
    v.kind = info.kind;
    if (mode !== "delete") trackManagedFields(info, v, old?.value, this.scope.manager);
    let object = encode(ObjectMsg, this.wrapValue(info, v));
    if (object.length > MAX_OBJECT_BYTES) throw tooLarge(`Request entity too large: the object is ${object.length} bytes; limit is ${MAX_OBJECT_BYTES}`);
    // What Redis and the event log hold (a sealed Secret): never the plaintext of a kind with a storage form.
    const stored = strategy?.toStorage?.(v) ?? v;
    if (stored !== v) object = encode(ObjectMsg, this.wrapValue(info, stored));
    if (isDryRun(this)) {
      // Everything but the write: a create still meets an object of that name, an update keeps the stored version.
      if (mode === "create" && (await this.storage.get(info.resource, namespace, meta.name))) throw alreadyExists(info.resource, meta.name, info.group);
      meta.resourceVersion = old ? String(old.revision) : "";
      return v;
    }
    const newIdx = mode === "delete" ? {} : (strategy?.indexes?.(v) ?? {});
    const oldIdx = old ? (strategy?.indexes?.(old.value) ?? {}) : {};
    const indexAdd: IndexEntry[] = Object.entries(newIdx)
      .filter(([k, x]) => oldIdx[k] !== x)
      .map(([index, value]) => ({ index, value }));
    const indexRemove: IndexEntry[] = Object.entries(oldIdx)
      .filter(([k, x]) => newIdx[k] !== x)
      .map(([index, value]) => ({ index, value }));
    const prev = mode === "update" && old ? old.value : undefined;
    // The object's bytes encoded above, appended as the event's field 2 (`object`), instead of encoding it a second time.
    const head: WatchEvent = {
      type: mode === "create" ? "ADDED" : mode === "update" ? "MODIFIED" : "DELETED",
      object: undefined,
      status: undefined,
      revision: 0,
      prevLabels: prev?.metadata?.labels ?? {},
      prevFields: prev ? selectableFields(info, prev) : {},
      hasPrev: Boolean(prev),
    };
    const event = encodeWith((w) => WatchEvent.encode(head, w).uint32(WATCH_EVENT_OBJECT_TAG).bytes(object));
    const node = strategy?.node?.(v) ?? "";
    try {
      const rev = await this.storage.write({
        mode,
        resource: info.resource,
        namespace,
        name: meta.name,
        expectedRevision: old?.revision,
        object: mode === "delete" ? undefined : object,
        event,
        subject: eventSubject(info.resource, namespace, meta.name, node),
        indexAdd,
        indexRemove,
      });
      meta.resourceVersion = String(rev);
      // The bytes written, for the NATS door's answer (not for a kind whose stored form is not the object).
      if (stored === v && mode !== "delete") noteWritten(v, object, rev);
      return v;
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      if (err.code === "exists") throw alreadyExists(info.resource, meta.name, info.group);
      if (err.code === "not-found") throw notFound(info.resource, meta.name, info.group);
      throw conflict(info.resource, meta.name, "the object has been modified; please apply your changes to the latest version and try again", info.group);
    }
  }

  /** Creates with fresh metadata (uid, timestamps, generation), after defaults and validation. */
  async createObject(info: KindInfo, v: AnyObject): Promise<AnyObject> {
    const meta = (v.metadata ??= emptyMeta());
    if (!info.namespaced) meta.namespace = "";
    if (!meta.name && meta.generateName) meta.name = generateName(meta.generateName);
    Object.assign<ObjectMeta, Partial<ObjectMeta>>(meta, {
      uid: randomUUID(),
      creationTimestamp: nowRfc3339(),
      generation: 1,
      resourceVersion: "",
      deletionTimestamp: "",
      deletionGracePeriodSeconds: undefined,
    });
    this.validateMeta(info, v); // names first: strategies may rely on them
    if (info.namespaced) await this.checkNamespace(meta.namespace);
    const strategy = this.strategy(info);
    await strategy?.prepareCreate?.(v, this);
    try {
      this.validate(info, v);
      await strategy?.admit?.(this, v);
      for (let attempt = 0; ; attempt++) {
        try {
          const created = await this.write("create", info, v);
          // A dry run gives back what it allocated (a ClusterIP, node ports): the answer shows them, nothing keeps them.
          if (isDryRun(this)) await strategy?.abortCreate?.(v);
          return created;
        } catch (err) {
          // A generated name that collided: draw another.
          if (!(err instanceof ApiError && err.reason === "AlreadyExists" && v.metadata?.generateName && attempt < 3)) throw err;
          meta.name = generateName(meta.generateName);
        }
      }
    } catch (err) {
      await strategy?.abortCreate?.(v).catch(() => undefined);
      throw err;
    }
  }

  private async checkNamespace(namespace: string): Promise<void> {
    const ns = await this.storage.get("namespaces", "", namespace);
    if (!ns) throw notFound("namespaces", namespace);
    let seen = namespacesSeen.get(this.storage);
    if (!seen) namespacesSeen.set(this.storage, (seen = new Map()));
    let known = seen.get(namespace);
    if (!known || Buffer.compare(known.bytes, ns.bytes) !== 0) {
      const nsInfo = kindByResource("namespaces") as KindInfo;
      // A copy: the bytes read may be a view of a larger buffer (a socket chunk) that this would keep alive.
      known = { bytes: Buffer.from(ns.bytes), terminating: Boolean(this.decode(nsInfo, ns).metadata?.deletionTimestamp) };
      if (seen.size >= 4_096) seen.clear();
      seen.set(namespace, known);
    }
    if (known.terminating) {
      throw forbidden(`unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  /** Checks a client's resourceVersion against the stored one (409 if stale). */
  checkVersion(info: KindInfo, name: string, given: string, current: Current): void {
    if (given && given !== String(current.revision)) {
      if (!/^\d+$/.test(given)) throw badRequest(`invalid resourceVersion "${given}"`);
      throw conflict(info.resource, name, "the object has been modified; please apply your changes to the latest version and try again", info.group);
    }
  }

  /** Whether two values are equal as canonical JSON (generation and status checks). */
  static same(a: unknown, b: unknown): boolean {
    return canonicalJson(a ?? null) === canonicalJson(b ?? null);
  }

  /** Removes an object now (bypassing graceful deletion); returns its last state. */
  async remove(info: KindInfo, current: Current): Promise<AnyObject> {
    const v = copyOf(info, current.value);
    const gone = await this.write("delete", info, v, current);
    if (isDryRun(this)) return gone;
    await this.strategy(info)
      ?.afterDelete?.(current.value)
      .catch((err: unknown) => this.log.warn({ err }, "after-delete hook failed"));
    return gone;
  }

  /** Reads the list page of one kind. */
  async page(
    info: KindInfo,
    opts: { namespace: string; index?: { name: string; value: string }; limit: number; after?: string },
  ): Promise<{ revision: number; items: AnyObject[]; next?: string }> {
    const page = await this.storage.list(info.resource, {
      namespace: info.namespaced ? opts.namespace : "",
      index: opts.index ? { index: opts.index.name, value: opts.index.value } : undefined,
      limit: opts.limit,
      after: opts.after,
    });
    return { revision: page.revision, items: page.items.map((s) => this.decode(info, s)), next: page.next };
  }

  // ---- the verbs ----

  async get(req: GetRequest): Promise<ApiObject> {
    const info = this.resolve(req.resource);
    const rv = req.resourceVersion ?? "";
    const cached = rv ? await this.getCached(info, req.namespace, req.name, parseRevision(rv)) : undefined;
    return this.wrapValue(info, cached ?? (await this.read(info, req.namespace, req.name)).value);
  }

  /** A GET with a resourceVersion from the object cache once it reached it; undefined when the cache is not ready (the store answers). */
  private async getCached(info: KindInfo, namespace: string, name: string, want: number): Promise<AnyObject | undefined> {
    const cache = this.objectCache;
    if (!cache || cache.revision < 0) {
      cache?.countRead("get", "store");
      return undefined;
    }
    if (want > 0 && !(await cache.waitFor(want, this.cacheWaitMs))) throw tooLargeResourceVersion(want, cache.revision);
    const r = cache.get(info.resource, info.namespaced ? namespace : "", name);
    cache.countRead("get", r ? "cache" : "store");
    if (!r) return undefined;
    if (!r.found) throw notFound(info.resource, name, info.group);
    return this.decode(info, r.found);
  }

  async list(req: ListRequest): Promise<ObjectList> {
    const info = this.resolve(req.resource);
    const sel = parseSelection(info, req.namespace, req.labelSelector, req.fieldSelector);
    const rv = req.resourceVersion ?? "";
    const match = req.resourceVersionMatch ?? "";
    validateListOptions(rv, match, req.continue);
    const token = req.continue ? decodeContinue(req.continue) : undefined;
    const limit = req.limit > 0 ? Number(req.limit) : 0;
    const cached = await this.listCached(info, sel, { rv, match, token, limit });
    if (cached) return cached;
    const nodeReq = info.resource === "pods" ? sel.fields.requirements.find((r) => r.field === "spec.nodeName" && r.operator === "=") : undefined;
    const page = await this.page(info, {
      namespace: sel.namespace,
      index: nodeReq && nodeReq.value ? { name: "node", value: nodeReq.value } : undefined,
      limit,
      after: token?.a,
    });
    const items = page.items.map((v) => this.wrapValue(info, v)).filter((o) => selectsObject(sel, o));
    return { metadata: { resourceVersion: String(page.revision), continue: page.next ? encodeContinue(page.next) : "" }, items };
  }

  /**
   * A list from the object cache, Kubernetes' way: resourceVersion "0" at the
   * cache's revision; N (NotOlderThan) once the cache reached N (504 after
   * cacheWaitMs); Exact N at N while the cache keeps it (410 after); a
   * continued page at its first page's revision (410 once compacted); no
   * resourceVersion only with consistentListFromCache, once the cache reached
   * the store's current revision. Selection reads what the cache keeps of each
   * object: only selected objects are decoded. Undefined: the store answers.
   */
  private async listCached(
    info: KindInfo,
    sel: Selection,
    q: { rv: string; match: string; token: ContinueToken | undefined; limit: number },
  ): Promise<ObjectList | undefined> {
    const cache = this.objectCache;
    const ready = cache !== undefined && cache.revision >= 0;
    let at: number | undefined;
    if (q.token?.r !== undefined) {
      if (!ready) throw expired(CONTINUE_EXPIRED);
      at = q.token.r;
    } else if (q.token) {
      return undefined; // a page of the store's list goes on there
    } else if (!q.rv) {
      if (!ready || !this.consistentListFromCache) return undefined;
      const current = await this.storage.currentRevision();
      if (!(await cache.waitFor(current, this.cacheWaitMs))) {
        this.log.debug({ current, cache: cache.revision }, "object cache behind the store; consistent list from the store");
        cache.countRead("list", "store");
        return undefined;
      }
    } else {
      const want = parseRevision(q.rv);
      if (!ready) {
        cache?.countRead("list", "store");
        return undefined;
      }
      if (want > 0 && !(await cache.waitFor(want, this.cacheWaitMs))) throw tooLargeResourceVersion(want, cache.revision);
      if (q.match === "Exact") at = want;
    }
    const page = cache?.list(info.resource, {
      namespace: info.namespaced ? sel.namespace : "",
      after: q.token?.a,
      limit: q.limit,
      revision: at,
      select: (labels, fields) => selects(sel, labels, fields),
    });
    if (page === undefined) {
      if (q.token) throw expired(CONTINUE_EXPIRED);
      cache?.countRead("list", "store");
      return undefined;
    }
    cache?.countRead("list", "cache");
    if (page === "expired") {
      if (q.token) throw expired(CONTINUE_EXPIRED);
      throw expired(`too old resource version: ${at} (${cache?.compactedRevision})`);
    }
    return {
      metadata: { resourceVersion: String(page.revision), continue: page.next ? encodeContinue(page.next, page.revision) : "" },
      items: page.items.map((s) => this.wrapValue(info, this.decode(info, s))),
    };
  }

  async create(req: CreateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    return this.wrapValue(info, await this.createObject(info, requestObject(info, req.object, this.scope)));
  }

  async update(req: UpdateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    return this.wrapValue(info, await this.replace(info, requestObject(info, req.object, this.scope), false));
  }

  async updateStatus(req: UpdateRequest): Promise<ApiObject> {
    const info = this.info(req.object);
    return this.wrapValue(info, await this.replace(info, requestObject(info, req.object, this.scope), true));
  }

  private info(o: ApiObject | undefined): KindInfo {
    if (!o?.kind) throw badRequest("the request has no object");
    return kindOf(o);
  }

  /** Update (spec and metadata) or status update, with the checks of both. */
  async replace(info: KindInfo, v: AnyObject, statusOnly: boolean, current?: Current): Promise<AnyObject> {
    const meta = (v.metadata ??= emptyMeta());
    if (!info.namespaced) meta.namespace = "";
    if (statusOnly && !info.hasStatus) throw notFound(`${info.resource}/status`, meta.name);
    const cur = current ?? (await this.read(info, meta.namespace, meta.name));
    this.checkVersion(info, meta.name, meta.resourceVersion, cur);
    const old = cur.value;
    let next: AnyObject;
    if (statusOnly) {
      // Read here, the old version is this call's alone: the new one may share what it does not change (its status is replaced).
      next = current ? copyOf(info, old) : topLevelCopyOf(old);
      (next as { status?: unknown }).status = (v as { status?: unknown }).status;
    } else {
      // Compared as Kubernetes JSON: a zero Go struct and an absent one are the same status (the JSON
      // always writes fields Kubernetes never omits, so a status read back may decode to zeros where none were stored).
      if (info.hasStatus && (v as { status?: unknown }).status !== undefined && !GenericStore.same(statusJson(info, v), statusJson(info, old))) {
        throw invalid(
          info.kind,
          meta.name,
          [{ field: "status", reason: "FieldValueForbidden", message: "Forbidden: status may only be changed through the status subresource" }],
          info.group,
        );
      }
      next = v;
      (next as { status?: unknown }).status = (old as { status?: unknown }).status;
      const om = old.metadata ?? emptyMeta();
      Object.assign(meta, {
        uid: om.uid,
        creationTimestamp: om.creationTimestamp,
        deletionTimestamp: om.deletionTimestamp,
        deletionGracePeriodSeconds: om.deletionGracePeriodSeconds,
        generation: om.generation,
        generateName: om.generateName,
      });
      this.strategy(info)?.prepareUpdate?.(next, old, this.scope);
      // Compared as Kubernetes JSON, as the status is: a spec read and written back unchanged (a label edit by
      // kubectl) decodes with empty messages where the stored one had none, and is the same spec.
      if (!GenericStore.same(specJson(info, next), specJson(info, old))) meta.generation = om.generation + 1;
      this.validate(info, next, old);
      await this.strategy(info)?.admit?.(this, next, old);
    }
    // The last finalizer gone from an object being deleted: it goes.
    const nm = next.metadata ?? emptyMeta();
    if (nm.deletionTimestamp && nm.finalizers.length === 0 && !this.strategy(info)?.waitsAfterFinalizers?.(next)) {
      await this.write("update", info, next, cur);
      return this.remove(info, await this.read(info, nm.namespace, nm.name));
    }
    return this.write("update", info, next, cur);
  }

  /**
   * Deletes, or marks for deletion, one object. A write that lost a race (an
   * actor updated the status meanwhile) is retried on the new state, as
   * Kubernetes' GuaranteedUpdate does; the client's preconditions are checked
   * again on each attempt, so a stale resourceVersion still gets its 409.
   */
  async delete(req: DeleteRequest): Promise<ApiObject> {
    const info = this.resolve(req.resource);
    for (let attempt = 0; ; attempt++) {
      const cur = await this.read(info, req.namespace, req.name);
      this.checkDeletePreconditions(info, req, cur);
      try {
        return await this.deleteCurrent(info, req, cur);
      } catch (err) {
        if (attempt >= 8 || !(err instanceof ApiError && err.reason === "Conflict")) throw err;
      }
    }
  }

  private checkDeletePreconditions(info: KindInfo, req: DeleteRequest, cur: Current): void {
    const meta = cur.value.metadata ?? emptyMeta();
    const opts = req.options;
    if (opts?.preconditions?.uid && opts.preconditions.uid !== meta.uid) {
      throw conflict(
        info.resource,
        req.name,
        `Precondition failed: UID in precondition: ${opts.preconditions.uid}, UID in object meta: ${meta.uid}`,
        info.group,
      );
    }
    if (opts?.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== String(cur.revision)) {
      throw conflict(
        info.resource,
        req.name,
        `Precondition failed: ResourceVersion in precondition: ${opts.preconditions.resourceVersion}, ResourceVersion in object meta: ${cur.revision}`,
        info.group,
      );
    }
  }

  private async deleteCurrent(info: KindInfo, req: DeleteRequest, cur: Current): Promise<ApiObject> {
    const v = copyOf(info, cur.value);
    const meta = v.metadata ?? emptyMeta();
    const opts = req.options;
    if (opts?.propagationPolicy && !["Orphan", "Background", "Foreground"].includes(opts.propagationPolicy)) {
      throw invalid("DeleteOptions", "", [
        {
          field: "propagationPolicy",
          reason: "FieldValueNotSupported",
          message: `Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"`,
        },
      ]);
    }
    const strategy = this.strategy(info);
    if (strategy?.delete) return this.wrapValue(info, await strategy.delete(this, info, cur));
    // Orphan and Foreground are carried out by the garbage collector (the replication actor) through finalizers.
    const gcFinalizer = opts?.propagationPolicy === "Orphan" ? "orphan" : opts?.propagationPolicy === "Foreground" ? "foregroundDeletion" : "";
    if (gcFinalizer && info.ownsDependents && !meta.deletionTimestamp && !meta.finalizers.includes(gcFinalizer)) meta.finalizers.push(gcFinalizer);
    const grace = strategy?.gracePeriod?.(v, opts?.gracePeriodSeconds) ?? 0;
    if (meta.finalizers.length > 0 || grace > 0) {
      if (meta.deletionTimestamp && (grace > 0 || meta.finalizers.length > 0) && (meta.deletionGracePeriodSeconds ?? 0) <= grace)
        return this.wrapValue(info, cur.value);
      meta.deletionTimestamp = meta.deletionTimestamp || new Date(Date.now() + grace * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
      meta.deletionGracePeriodSeconds = grace;
      if (grace === 0 && meta.finalizers.length === 0) return this.wrapValue(info, await this.remove(info, cur));
      return this.wrapValue(info, await this.write("update", info, v, cur));
    }
    return this.wrapValue(info, await this.remove(info, cur));
  }

  async deleteCollection(req: DeleteCollectionRequest): Promise<ObjectList> {
    const list = await this.list({
      resource: req.resource,
      namespace: req.namespace,
      labelSelector: req.labelSelector,
      fieldSelector: req.fieldSelector,
      limit: 0,
      continue: "",
    });
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
}

/** A continue token: the member to continue after and, for a list of the object cache, the revision it is at. */
interface ContinueToken {
  a: string;
  r?: number | undefined;
}

const CONTINUE_EXPIRED =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";

function encodeContinue(member: string, revision?: number): string {
  return Buffer.from(JSON.stringify(revision === undefined ? { a: member } : { a: member, r: revision })).toString("base64url");
}

function decodeContinue(token: string): ContinueToken {
  try {
    const v = JSON.parse(Buffer.from(token, "base64url").toString()) as { a?: unknown; r?: unknown };
    if (typeof v.a === "string" && (v.r === undefined || (typeof v.r === "number" && Number.isSafeInteger(v.r) && v.r >= 0))) {
      return { a: v.a, r: v.r };
    }
  } catch {
    // fall through
  }
  throw badRequest("continue key is not valid: illegal base64 data or bad JSON");
}

/** A resourceVersion given to a read: a revision (0: any). */
function parseRevision(rv: string): number {
  if (!/^\d{1,15}$/.test(rv)) throw badRequest(`invalid resourceVersion "${rv}"`);
  return Number(rv);
}

/** Kubernetes' answer when the cache did not reach a resourceVersion in time (504, retry after 1 s). */
function tooLargeResourceVersion(want: number, current: number): ApiError {
  return new ApiError(
    failure(504, "Timeout", `Timeout: Too large resource version: ${want}, current: ${current}`, {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version", field: "" }],
      retryAfterSeconds: 1,
    }),
  );
}

/** Kubernetes' ValidateListOptions (apimachinery meta/internalversion/validation) of a list (not a watch). */
function validateListOptions(rv: string, match: string, cont: string): void {
  const causes: { field: string; reason: string; message: string }[] = [];
  const forbid = (message: string): void =>
    void causes.push({ field: "resourceVersionMatch", reason: "FieldValueForbidden", message: `Forbidden: ${message}` });
  if (match) {
    if (!rv) forbid("resourceVersionMatch is forbidden unless resourceVersion is provided");
    if (cont) forbid("resourceVersionMatch is forbidden when continue is provided");
    if (match !== "Exact" && match !== "NotOlderThan")
      causes.push({
        field: "resourceVersionMatch",
        reason: "FieldValueNotSupported",
        message: `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan", ""`,
      });
    if (match === "Exact" && rv === "0") forbid('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  }
  if (causes.length) {
    const list = causes.map((c) => `${c.field}: ${c.message}`);
    const body = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
    throw new ApiError(
      failure(422, "Invalid", `ListOptions.meta.k8s.io "" is invalid: ${body}`, { name: "", group: "meta.k8s.io", kind: "ListOptions", causes }),
    );
  }
  // The storage's rule (etcd3 GetList): a continued list is at its token's revision.
  if (cont && rv && rv !== "0") throw badRequest("specifying resource version is not allowed when using continue");
}
