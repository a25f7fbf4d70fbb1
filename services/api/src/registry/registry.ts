import { randomUUID } from "node:crypto";
import { canonicalJson } from "./canonical.js";
import {
  ApiError, badRequest, conflict, emptyMeta, forbidden, invalid, kindByResource, kindOf, notFound, selectableFields, tooLarge, alreadyExists,
  type AnyObject, type KindInfo, type ObjectMeta,
} from "@choreo/kit";
import { eventSubject } from "@choreo/kit/bus";
import { generateName, nowRfc3339 } from "@choreo/kit/apimachinery";
import { Object as ObjectMsg, WatchEvent, type ObjectList, type Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import type { RedisStore, Stored } from "../storage/redis-store.js";
import { StoreError } from "../storage/redis-store.js";
import { secondaryIndexKey } from "../storage/keys.js";
import type { Strategies, Strategy } from "./strategy.js";
import { Errors, validateMeta, type NameRule } from "./validation.js";

/** Objects above this size (encoded) are refused with 413, as etcd would. */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024;

/** The namespaces that exist from the start and may not be deleted. */
export const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

const NAME_RULES: Partial<Record<string, NameRule>> = { namespaces: "label", services: "dns1035" };

/** The state of an object as read: its value and revision. */
export interface Current {
  value: AnyObject;
  revision: number;
}

/**
 * The generic object store above Redis: metadata, defaults and validation
 * (through per-kind strategies), optimistic concurrency and the change
 * record of every write. The handlers (registry.ts's subclass) add verbs.
 */
export class ObjectStore {
  constructor(
    readonly store: RedisStore,
    readonly strategies: Strategies,
    readonly log: Logger,
  ) {}

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
    const v = o.kind.value;
    v.metadata ??= emptyMeta();
    v.metadata.resourceVersion = String(s.revision);
    v.apiVersion = info.apiVersion;
    v.kind = info.kind;
    return v;
  }

  async read(info: KindInfo, namespace: string, name: string): Promise<Current> {
    const s = await this.store.get(info.resource, info.namespaced ? namespace : "", name);
    if (!s) throw notFound(info.resource, name, info.group);
    return { value: this.decode(info, s), revision: s.revision };
  }

  wrapValue(info: KindInfo, v: AnyObject): ApiObject {
    return { kind: { $case: info.case, value: v } as NonNullable<ApiObject["kind"]> };
  }

  /** Metadata errors only → 422. */
  validateMeta(info: KindInfo, v: AnyObject): void {
    const e = new Errors();
    validateMeta(e, v.metadata ?? emptyMeta(), info.namespaced, NAME_RULES[info.resource] ?? "subdomain");
    if (e.causes.length) throw invalid(info.kind, v.metadata?.name ?? "", e.causes, info.group);
  }

  /** Field errors common to every kind plus the kind's own → 422. */
  validate(info: KindInfo, v: AnyObject, old?: AnyObject): void {
    const e = new Errors();
    validateMeta(e, v.metadata ?? emptyMeta(), info.namespaced, NAME_RULES[info.resource] ?? "subdomain");
    e.causes.push(...(this.strategy(info)?.validate(v, old) ?? []));
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
    const object = ObjectMsg.encode(this.wrapValue(info, v)).finish();
    if (object.length > MAX_OBJECT_BYTES) throw tooLarge(`Request entity too large: the object is ${object.length} bytes; limit is ${MAX_OBJECT_BYTES}`);
    const newIdx = mode === "delete" ? {} : (strategy?.indexes?.(v) ?? {});
    const oldIdx = old ? (strategy?.indexes?.(old.value) ?? {}) : {};
    const indexAdd = Object.entries(newIdx).filter(([k, x]) => oldIdx[k] !== x).map(([k, x]) => secondaryIndexKey(info.resource, k, x));
    const indexRemove = Object.entries(oldIdx).filter(([k, x]) => newIdx[k] !== x).map(([k, x]) => secondaryIndexKey(info.resource, k, x));
    const prev = mode === "update" && old ? old.value : undefined;
    const event = WatchEvent.encode({
      type: mode === "create" ? "ADDED" : mode === "update" ? "MODIFIED" : "DELETED",
      object: this.wrapValue(info, v),
      status: undefined,
      revision: 0,
      prevLabels: prev?.metadata?.labels ?? {},
      prevFields: prev ? selectableFields(info, prev) : {},
      hasPrev: Boolean(prev),
    }).finish();
    const node = strategy?.node?.(v) ?? "";
    try {
      const rev = await this.store.write({
        mode, resource: info.resource, namespace, name: meta.name, expectedRevision: old?.revision,
        object: mode === "delete" ? undefined : object, event, subject: eventSubject(info.resource, namespace, meta.name, node),
        indexAdd, indexRemove,
      });
      meta.resourceVersion = String(rev);
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
      uid: randomUUID(), creationTimestamp: nowRfc3339(), generation: 1, resourceVersion: "", deletionTimestamp: "", deletionGracePeriodSeconds: undefined,
    });
    this.validateMeta(info, v); // names first: strategies may rely on them
    if (info.namespaced) await this.checkNamespace(meta.namespace);
    const strategy = this.strategy(info);
    await strategy?.prepareCreate?.(v);
    try {
      this.validate(info, v);
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.write("create", info, v);
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
    const ns = await this.store.get("namespaces", "", namespace);
    if (!ns) throw notFound("namespaces", namespace);
    const nsInfo = kindByResource("namespaces") as KindInfo;
    const value = this.decode(nsInfo, ns);
    if (value.metadata?.deletionTimestamp) {
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

  /** The list of a kind's field paths that changed, for generation and status checks. */
  static same(a: unknown, b: unknown): boolean {
    return canonicalJson(a ?? null) === canonicalJson(b ?? null);
  }

  /** Removes an object now (bypassing graceful deletion); returns its last state. */
  async remove(info: KindInfo, current: Current): Promise<AnyObject> {
    const v = structuredClone(current.value);
    const gone = await this.write("delete", info, v, current);
    await this.strategy(info)?.afterDelete?.(current.value).catch((err: unknown) => this.log.warn({ err }, "after-delete hook failed"));
    return gone;
  }

  /** Reads the list page of one kind. */
  async page(info: KindInfo, opts: { namespace: string; index?: { name: string; value: string }; limit: number; after?: string }): Promise<{ revision: number; items: AnyObject[]; next?: string }> {
    const page = await this.store.list(info.resource, {
      namespace: info.namespaced ? opts.namespace : "",
      index: opts.index ? secondaryIndexKey(info.resource, opts.index.name, opts.index.value) : undefined,
      limit: opts.limit,
      after: opts.after,
    });
    return { revision: page.revision, items: page.items.map((s) => this.decode(info, s)), next: page.next };
  }

  kindOfObject(o: ApiObject): KindInfo {
    return kindOf(o);
  }
}

export type { ObjectList };
