// ChoreoClient: typed CRUD over NATS (kit's ApiClient), watch(), subscribe().
import type { NatsConnection } from "@nats-io/transport-node";
import { unwrap, wrap, kindByResource, type AnyObject, type KindCase, type KindValue } from "@choreo/kit";
import { ApiClient, type ListOptions, type TypedClient } from "@choreo/kit/client";
import { connectBus } from "@choreo/kit/bus";
import { subscribe, type ChangeEvent, type SubscribeOptions } from "./subscribe.js";

/** Where and who: the NATS url (default CHOREO_NATS_URL), its credentials and CA files, and the api bearer token for CRUD. */
export interface ConnectOptions {
  /** `nats://host:port` (several comma-separated for a NATS cluster); user:password as userinfo, or `credentialsFile`. */
  url?: string;
  /** A `user:password` file (default CHOREO_NATS_CREDENTIALS). */
  credentialsFile?: string;
  /** The NATS server's CA (TLS only; default CHOREO_NATS_CA). */
  caFile?: string;
  /** The api bearer token (CRUD only; subscribe needs none). */
  token?: string;
  /** The connection's name, as nats-server reports it. */
  name?: string;
  /** Request timeout of CRUD calls (default 10 s). */
  timeoutMs?: number;
}

/** Connects to the cluster's NATS and returns a client; `close()` (or `await using`) ends the connection. */
export async function connectClient(opts: ConnectOptions = {}): Promise<ChoreoClient> {
  const url = opts.url ?? process.env["CHOREO_NATS_URL"];
  if (!url) throw new Error("no NATS url: pass url or set CHOREO_NATS_URL");
  const nc = await connectBus(url, opts.name ?? "choreo-client", opts.credentialsFile ?? process.env["CHOREO_NATS_CREDENTIALS"], opts.caFile);
  return new ChoreoClient(nc, opts, true);
}

/**
 * The api over NATS, typed: `client.typed("pod").get(ns, name)` → Pod;
 * `client.watch("pods")` lists then follows; `client.subscribe({...})` reads
 * the event stream (durable, resumable). Errors are ApiErrors with the
 * Kubernetes Status (`isNotFound`, `isConflict`, `isExpired`…).
 */
export class ChoreoClient {
  /** kit's ApiClient (get/list/create/update/patch/delete/scale/bind…, untyped Object in and out). */
  readonly api: ApiClient;

  constructor(
    readonly nc: NatsConnection,
    opts: Pick<ConnectOptions, "token" | "timeoutMs"> = {},
    private readonly ownsConnection = false,
  ) {
    this.api = new ApiClient(nc, { ...(opts.token ? { token: opts.token } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  }

  /** A client of one kind: get/list/create/update/updateStatus/delete with that kind's type. */
  typed<C extends KindCase>(c: C): TypedClient<C> {
    return this.api.typed(c);
  }

  async get(resource: string, namespace: string, name: string): Promise<AnyObject> {
    return unwrap(await this.api.get(resource, namespace, name));
  }

  async list(resource: string, opts: ListOptions = {}): Promise<{ items: AnyObject[]; resourceVersion: string }> {
    const l = await this.api.list(resource, opts);
    return { items: l.items.map(unwrap), resourceVersion: l.metadata?.resourceVersion ?? "" };
  }

  /** Creates an object of kind `c` (`create("pod", pod)`). */
  async create<C extends KindCase>(c: C, value: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.api.create(wrap(c, value))) as KindValue<C>;
  }

  /** Updates an object of kind `c`; its resourceVersion must be the stored one (else 409 Conflict). */
  async update<C extends KindCase>(c: C, value: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.api.update(wrap(c, value))) as KindValue<C>;
  }

  async delete(resource: string, namespace: string, name: string): Promise<AnyObject> {
    return unwrap(await this.api.delete(resource, namespace, name));
  }

  /**
   * Kubernetes' list-then-watch: every object matching as ADDED (at the
   * list's revision), then each change after it, from the event stream.
   * A 410 Expired (`isExpired`) means: watch again (it relists).
   */
  async *watch(resource: string, opts: { namespace?: string; labelSelector?: string; signal?: AbortSignal } = {}): AsyncGenerator<ChangeEvent> {
    const kind = kindByResource(resource);
    if (!kind) throw new Error(`unknown resource ${JSON.stringify(resource)}`);
    const list = await this.list(resource, {
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}),
    });
    for (const object of list.items) yield { type: "ADDED", revision: Number(object.metadata?.resourceVersion ?? 0), object, kind };
    yield* this.subscribe({ resource, ...opts, fromRevision: Number(list.resourceVersion) });
  }

  /** Change events from the event stream: see {@link subscribe}. */
  subscribe(opts: SubscribeOptions = {}): AsyncGenerator<ChangeEvent> {
    return subscribe(this.nc, opts);
  }

  /** Closes the NATS connection when this client made it. */
  async close(): Promise<void> {
    if (this.ownsConnection) await this.nc.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
