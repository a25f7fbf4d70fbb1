import { headers, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import { ApiError, failure, unavailable, timeout as timeoutError } from "../api/errors.js";
import { emptyMeta, kindByCase, unwrap, wrap, type KindCase, type KindValue } from "../api/kinds.js";
import { apiSubject } from "../bus/subjects.js";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Reply, type Object as ApiObject, type ObjectList } from "../gen/choreo/api/v1/api.js";
import type { Scale } from "../gen/choreo/autoscaling/v1/autoscaling.js";
import { Status, type DeleteOptions } from "../gen/choreo/meta/v1/meta.js";
import { MetricsReply, NodeMetricsRequest, PodMetricsRequest, type NodeMetricsList, type PodMetricsList } from "../gen/choreo/metrics/v1beta1/metrics.js";
import { CREATE_TOKEN, METHODS, type CreateTokenReply, type Method, type TokenRequestJson } from "./methods.js";
import { requestOne } from "./requests.js";

/** Options of a list call. */
export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** Kubernetes' resourceVersion: "0" any (the api's object cache), N not older than N. */
  resourceVersion?: string;
  /** "NotOlderThan" or "Exact" (with a resourceVersion). */
  resourceVersionMatch?: string;
}

/** Patch content types the api accepts. */
export type PatchType = "application/merge-patch+json" | "application/json-patch+json" | "application/strategic-merge-patch+json";

/**
 * The api over NATS request-reply, protobuf on the wire: how actors talk to
 * the api service. Every failure is an ApiError with a Kubernetes Status.
 */
export class ApiClient {
  readonly timeoutMs: number;
  private readonly token: string | undefined;

  /**
   * `token`: the bearer token sent as the `Authorization` header of every
   * request (an actor's own, from its CHOREO_API_TOKEN_FILE: see
   * @choreo/kit/secrets actorToken); without one the api answers 401.
   */
  constructor(
    private readonly nc: NatsConnection,
    opts: { timeoutMs?: number; token?: string } = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.token = opts.token || undefined;
  }

  /**
   * The same client (connection, token) with another request timeout: a
   * heartbeat's requests must give up within its own period, or one
   * request lost with a dying api replica (kill -9: no answer ever comes)
   * outlasts the node's grace period (kubelet's heartbeat client has the
   * heartbeat's period as its timeout).
   */
  withTimeout(timeoutMs: number): ApiClient {
    return new ApiClient(this.nc, { timeoutMs, ...(this.token ? { token: this.token } : {}) });
  }

  /** The request's headers: `Authorization: Bearer <token>` when the client has a token. */
  private headers(): MsgHdrs | undefined {
    if (!this.token) return undefined;
    const h = headers();
    h.set("Authorization", `Bearer ${this.token}`);
    return h;
  }

  /** Sends one request; returns the reply or throws its Status. */
  async call<M extends Method>(method: M, req: Parameters<(typeof METHODS)[M]["encode"]>[0]): Promise<Reply> {
    const codec = METHODS[method] as { encode(m: typeof req): { finish(): Uint8Array } };
    const reply = Reply.decode(await this.send(method, codec.encode(req).finish()));
    if (reply.result?.$case === "status") throw new ApiError(reply.result.value);
    return reply;
  }

  /**
   * `call` for a caller that does not read the answer's object (the
   * scheduler's bind): only a refusal's Status is decoded from the reply, not
   * the object the api sends back.
   */
  async callNoAnswer<M extends Method>(method: M, req: Parameters<(typeof METHODS)[M]["encode"]>[0]): Promise<void> {
    const codec = METHODS[method] as { encode(m: typeof req): { finish(): Uint8Array } };
    const status = statusOfReply(await this.send(method, codec.encode(req).finish()));
    if (status) throw new ApiError(status);
  }

  /** One request on `choreo.api.<method>`; transport failures become 503/504 ApiErrors. */
  private async send(method: string, data: Uint8Array): Promise<Uint8Array> {
    try {
      return (await requestOne(this.nc, apiSubject(method), data, this.timeoutMs, this.headers())).data;
    } catch (err) {
      const text = String((err as Error).message ?? err);
      if (/no responders|503/i.test(text)) throw unavailable("the api service is not reachable (no responders)");
      if (/timeout/i.test(text)) throw timeoutError(`the api did not answer ${method} within ${this.timeoutMs} ms`);
      throw new ApiError(failure(503, "ServiceUnavailable", `api request failed: ${text}`), { cause: err });
    }
  }

  /**
   * metrics.k8s.io PodMetrics (what `kubectl top pods` shows) of the pods of
   * `namespace` ("": every namespace) matching the selectors, or of the pod
   * `opts.name` (404 when it does not exist or has no metrics yet). Each
   * item's `containers[].usage` has `cpu` (e.g. "250m", "123456n") and
   * `memory` (working set, e.g. "1234Ki") quantities over `window` ending at
   * `timestamp`. Pods whose node did not answer, or whose containers have no
   * rate yet (a rate needs two readings, seconds apart), are left out.
   */
  async podMetrics(namespace: string, opts: { name?: string; labelSelector?: string; fieldSelector?: string } = {}): Promise<PodMetricsList> {
    const req = PodMetricsRequest.encode({
      namespace,
      name: opts.name ?? "",
      labelSelector: opts.labelSelector ?? "",
      fieldSelector: opts.fieldSelector ?? "",
    });
    const r = MetricsReply.decode(await this.send("podMetrics", req.finish()));
    if (r.result?.$case === "status") throw new ApiError(r.result.value);
    if (r.result?.$case !== "pods") throw new Error(`expected pod metrics, got ${r.result?.$case}`);
    return r.result.value;
  }

  /** metrics.k8s.io NodeMetrics of every node matching the selector, or of node `opts.name`; nodes that did not answer are left out. */
  async nodeMetrics(opts: { name?: string; labelSelector?: string } = {}): Promise<NodeMetricsList> {
    const req = NodeMetricsRequest.encode({ name: opts.name ?? "", labelSelector: opts.labelSelector ?? "" });
    const r = MetricsReply.decode(await this.send("nodeMetrics", req.finish()));
    if (r.result?.$case === "status") throw new ApiError(r.result.value);
    if (r.result?.$case !== "nodes") throw new Error(`expected node metrics, got ${r.result?.$case}`);
    return r.result.value;
  }

  /**
   * A ServiceAccount token (serviceaccounts/NAME/token): `tokenRequest`
   * answered with `status.token` and `status.expirationTimestamp`, or the
   * api's refusal as an ApiError (404 account, 409 bound object's uid,
   * 422 lifetime, 403). The token is a credential: never log it.
   */
  async createToken(namespace: string, name: string, tokenRequest: TokenRequestJson): Promise<TokenRequestJson> {
    const data = new TextEncoder().encode(JSON.stringify({ namespace, name, tokenRequest }));
    let reply: CreateTokenReply;
    try {
      reply = JSON.parse(new TextDecoder().decode(await this.send(CREATE_TOKEN, data))) as CreateTokenReply;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError(failure(500, "InternalError", `createToken: the api's answer is not JSON: ${String(err)}`), { cause: err });
    }
    if ("status" in reply) throw new ApiError(reply.status);
    return reply.tokenRequest;
  }

  private object(r: Reply): ApiObject {
    if (r.result?.$case !== "object") throw new Error(`expected an object reply, got ${r.result?.$case}`);
    return r.result.value;
  }

  /** `opts.resourceVersion` "0": any version (the api's object cache, as kubelet reads its Node); N: not older than N. */
  async get(resource: string, namespace: string, name: string, opts: { resourceVersion?: string } = {}): Promise<ApiObject> {
    return this.object(await this.call("get", { resource, namespace, name, resourceVersion: opts.resourceVersion }));
  }

  async list(resource: string, opts: ListOptions = {}): Promise<ObjectList> {
    const r = await this.call("list", {
      resource,
      namespace: opts.namespace ?? "",
      labelSelector: opts.labelSelector ?? "",
      fieldSelector: opts.fieldSelector ?? "",
      limit: opts.limit ?? 0,
      continue: opts.continue ?? "",
      resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch,
    });
    if (r.result?.$case !== "list") throw new Error(`expected a list reply, got ${r.result?.$case}`);
    return r.result.value;
  }

  async create(object: ApiObject, dryRun = false): Promise<ApiObject> {
    return this.object(await this.call("create", { object, dryRun }));
  }

  async update(object: ApiObject): Promise<ApiObject> {
    return this.object(await this.call("update", { object, dryRun: false }));
  }

  async updateStatus(object: ApiObject): Promise<ApiObject> {
    return this.object(await this.call("updateStatus", { object, dryRun: false }));
  }

  async patch(resource: string, namespace: string, name: string, patchType: PatchType, patch: unknown, subresource = ""): Promise<ApiObject> {
    return this.object(await this.call("patch", { resource, namespace, name, patchType, patch: JSON.stringify(patch), subresource }));
  }

  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    const opts = options ? { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [], ...options } : undefined;
    return this.object(await this.call("delete", { resource, namespace, name, options: opts }));
  }

  async deleteCollection(resource: string, opts: ListOptions = {}): Promise<ObjectList> {
    const r = await this.call("deleteCollection", {
      resource,
      namespace: opts.namespace ?? "",
      labelSelector: opts.labelSelector ?? "",
      fieldSelector: opts.fieldSelector ?? "",
      options: undefined,
    });
    if (r.result?.$case !== "list") throw new Error(`expected a list reply, got ${r.result?.$case}`);
    return r.result.value;
  }

  /**
   * Evicts a pod (pods/NAME/eviction): deleted with `options` unless its
   * PodDisruptionBudget allows no disruption (a 429 ApiError). Returns the pod as last stored.
   */
  async evict(namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    const deleteOptions = options ? { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [], ...options } : undefined;
    return this.object(
      await this.call("evict", {
        namespace,
        name,
        eviction: { apiVersion: "policy/v1", kind: "Eviction", metadata: emptyMeta({ name, namespace }), deleteOptions },
      }),
    );
  }

  /** Binds a pod to a node (the scheduler's write); answers the bound pod. */
  async bind(namespace: string, name: string, node: string, uid = ""): Promise<ApiObject> {
    return this.object(await this.call("bind", bindRequest(namespace, name, node, uid)));
  }

  /**
   * `bind` without the answer: the bound pod the api sends back is not
   * decoded (the scheduler learns its binds from its informer). A refusal
   * throws its ApiError as `bind`'s does.
   */
  async bindOnly(namespace: string, name: string, node: string, uid = ""): Promise<void> {
    await this.callNoAnswer("bind", bindRequest(namespace, name, node, uid));
  }

  async getScale(resource: string, namespace: string, name: string): Promise<Scale> {
    const r = await this.call("getScale", { resource, namespace, name });
    if (r.result?.$case !== "scale") throw new Error(`expected a scale reply, got ${r.result?.$case}`);
    return r.result.value;
  }

  async updateScale(resource: string, namespace: string, name: string, replicas: number, resourceVersion = ""): Promise<Scale> {
    const r = await this.call("updateScale", {
      resource,
      namespace,
      name,
      scale: {
        apiVersion: "autoscaling/v1",
        kind: "Scale",
        metadata: emptyMeta({ name, namespace, resourceVersion }),
        spec: { replicas },
        status: undefined,
      },
    });
    if (r.result?.$case !== "scale") throw new Error(`expected a scale reply, got ${r.result?.$case}`);
    return r.result.value;
  }

  /** A client typed to one kind: values in, values out. */
  typed<C extends KindCase>(c: C): TypedClient<C> {
    return new TypedClient(this, c);
  }
}

/** ApiClient narrowed to one kind (`client.typed("pod").get(ns, name)` → Pod). */
export class TypedClient<C extends KindCase> {
  readonly resource: string;
  constructor(
    readonly api: ApiClient,
    readonly kindCase: C,
  ) {
    this.resource = resourceOf(kindCase);
  }

  async get(namespace: string, name: string): Promise<KindValue<C>> {
    return unwrap(await this.api.get(this.resource, namespace, name)) as KindValue<C>;
  }

  async list(opts: ListOptions = {}): Promise<{ items: KindValue<C>[]; resourceVersion: string }> {
    const l = await this.api.list(this.resource, opts);
    return { items: l.items.map((o) => unwrap(o) as KindValue<C>), resourceVersion: l.metadata?.resourceVersion ?? "" };
  }

  async create(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.api.create(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async update(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.api.update(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async updateStatus(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.api.updateStatus(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async delete(namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<KindValue<C>> {
    return unwrap(await this.api.delete(this.resource, namespace, name, options)) as KindValue<C>;
  }
}

/** The request of a bind: a Binding of the pod `namespace/name` (of `uid`, "" for any) to `node`. */
export function bindRequest(namespace: string, name: string, node: string, uid: string): Parameters<(typeof METHODS)["bind"]["encode"]>[0] {
  return {
    namespace,
    name,
    binding: {
      apiVersion: "v1",
      kind: "Binding",
      metadata: emptyMeta({ name, namespace, uid }),
      target: { kind: "Node", name: node, namespace: "", uid: "", apiVersion: "v1", resourceVersion: "", fieldPath: "" },
    },
  };
}

/** Reply's `status` field (oneof `result`): field 4, length-delimited. */
const REPLY_STATUS_TAG = (4 << 3) | 2;

/** The Status of an encoded Reply that carries one (a refusal), undefined otherwise; the other results are skipped, not decoded. */
export function statusOfReply(data: Uint8Array): Status | undefined {
  const reader = new BinaryReader(data);
  let status: Status | undefined;
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    // A oneof: the last of its fields on the wire wins.
    if (tag === REPLY_STATUS_TAG) status = Status.decode(reader, reader.uint32());
    else {
      status = undefined;
      reader.skip(tag & 7, tag >>> 3);
    }
  }
  return status;
}

function resourceOf(c: KindCase): string {
  return kindByCase(c).resource;
}

/**
 * Runs a read-modify-write until it does not conflict (client-go's
 * RetryOnConflict): `fn` must re-read the object each time.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, attempts = 10): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === "Conflict") || i + 1 >= attempts) throw err;
      await new Promise((r) => setTimeout(r, Math.min(100, 2 ** i) * Math.random()));
    }
  }
}
