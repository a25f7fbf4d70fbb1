// ChoreoClient: typed CRUD and watch() over one of the api's three doors —
// NATS, the HTTPS gateway or gRPC — with the same methods, values and
// ApiErrors; subscribe() reads the event stream (NATS only).
import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { kindByCase, kindByResource, unwrap, wrap, type AnyObject, type DeleteOptions, type KindCase, type KindValue } from "@choreo/kit";
import type { ApiClient, ListOptions } from "@choreo/kit/client";
import { connectBus } from "@choreo/kit/bus";
import { GrpcTransport } from "./grpc-transport.js";
import { HttpTransport } from "./http-transport.js";
import { readKubeconfig, type KubeconfigConnection } from "./kubeconfig.js";
import { NatsApiTransport } from "./nats-transport.js";
import { subscribe, type ChangeEvent, type SubscribeOptions } from "./subscribe.js";
import { isTransport, type ApiTransport, type TransportName } from "./transport.js";

/**
 * Where and who. The transport is `transport`, else the url's scheme
 * (`nats://`/`tls://` NATS, `https://`/`http://` the HTTP gateway,
 * `grpcs://` gRPC over TLS, `grpc://` plaintext gRPC), else http when a
 * kubeconfig is given, else NATS at CHOREO_NATS_URL.
 */
export interface ConnectOptions {
  transport?: TransportName;
  /**
   * NATS: `nats://host:port` (several comma-separated for a NATS cluster; user:password as userinfo, or `credentialsFile`).
   * HTTP: `https://host:port` (default: the kubeconfig's server). gRPC: `grpcs://host:port` (the api's gRPC port).
   */
  url?: string;
  /**
   * A kubeconfig (what `choreo up` writes to .choreo/kubeconfig): the server, its CA, the token or client
   * certificate (http, grpc); the gRPC door (extension grpc.choreo.dev) and the bus with a read-only
   * subscriber's credentials (extension events.choreo.dev) when `choreo up` wrote it.
   */
  kubeconfig?: string;
  /** The kubeconfig's context (default its current-context). */
  context?: string;
  /** NATS: a `user:password` file (default CHOREO_NATS_CREDENTIALS). */
  credentialsFile?: string;
  /** The server's CA file: NATS (TLS only; default CHOREO_NATS_CA), or the api's for http and grpc. */
  caFile?: string;
  /** http, grpc: PEM of the api's CA (instead of caFile or the kubeconfig's). */
  ca?: string;
  /** http, grpc: a client certificate and its key (PEM) instead of a token. */
  cert?: string;
  key?: string;
  /** http: Kubernetes JSON (default) or Kubernetes protobuf bodies. */
  encoding?: "json" | "protobuf";
  /** http: do not check the server's certificate. */
  insecureSkipTlsVerify?: boolean;
  /** The api bearer token (CRUD and watch; subscribe needs none). Default: the kubeconfig's. */
  token?: string;
  /** NATS: the connection's name, as nats-server reports it. */
  name?: string;
  /** Timeout of CRUD calls (default 10 s). */
  timeoutMs?: number;
}

const SCHEMES: Record<string, TransportName> = { "nats:": "nats", "tls:": "nats", "https:": "http", "http:": "http", "grpcs:": "grpc", "grpc:": "grpc" };

/** The transport a url's scheme names, if it has one. */
export function transportOfUrl(url: string | undefined): TransportName | undefined {
  const m = url ? /^([a-z][a-z0-9+.-]*:)\/\//i.exec(url) : null;
  if (!m) return undefined;
  const t = SCHEMES[m[1]!.toLowerCase()];
  if (!t) throw new Error(`unknown scheme in ${JSON.stringify(url)}: use nats://, https://, http://, grpcs:// or grpc://`);
  return t;
}

/** Connects to the api through the transport chosen (see {@link ConnectOptions}); `close()` (or `await using`) ends the connection. */
export async function connectClient(opts: ConnectOptions = {}): Promise<ChoreoClient> {
  const byScheme = transportOfUrl(opts.url);
  const transport = opts.transport ?? byScheme ?? (opts.kubeconfig ? "http" : "nats");
  if (byScheme && byScheme !== transport) throw new Error(`url ${JSON.stringify(opts.url)} is not a ${transport} url`);
  const kc: Partial<KubeconfigConnection> = opts.kubeconfig ? readKubeconfig(opts.kubeconfig, opts.context) : {};
  if (transport === "nats") {
    // A kubeconfig `choreo up` wrote names the bus (its events.choreo.dev extension) and the api token.
    const url = opts.url ?? process.env["CHOREO_NATS_URL"] ?? kc.eventLog?.natsUrl;
    if (!url) throw new Error("no NATS url: pass url, set CHOREO_NATS_URL, or a kubeconfig with the events.choreo.dev extension");
    const credentials = opts.credentialsFile ?? process.env["CHOREO_NATS_CREDENTIALS"] ?? kc.eventLog?.credentialsFile;
    const nc = await connectBus(url, opts.name ?? "choreo-client", credentials, opts.caFile);
    const token = opts.token ?? kc.token;
    return new ChoreoClient(new NatsApiTransport(nc, { ...opts, ...(token ? { token } : {}) }, true));
  }
  const ca = opts.ca ?? (opts.caFile ? readFileSync(opts.caFile, "utf8") : kc.ca);
  const cert = opts.cert ?? kc.cert;
  const key = opts.key ?? kc.key;
  const token = opts.token ?? kc.token;
  const who = {
    ...(ca ? { ca } : {}),
    ...(cert && key ? { cert, key } : {}),
    ...(token ? { token } : {}),
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  };
  if (transport === "http") {
    const server = opts.url ?? kc.server;
    if (!server) throw new Error("no api server: pass url (https://host:port) or a kubeconfig");
    return new ChoreoClient(
      new HttpTransport({
        server,
        ...who,
        insecureSkipTlsVerify: opts.insecureSkipTlsVerify ?? kc.insecureSkipTlsVerify ?? false,
        ...(opts.encoding ? { encoding: opts.encoding } : {}),
      }),
    );
  }
  const grpcUrl = opts.url ?? kc.grpcServer;
  if (!grpcUrl) throw new Error("no gRPC server: pass url grpcs://host:port, or a kubeconfig with the grpc.choreo.dev extension (choreo up writes it)");
  const u = new URL(transportOfUrl(grpcUrl) ? grpcUrl : `grpcs://${grpcUrl}`);
  return new ChoreoClient(new GrpcTransport({ address: u.host, insecure: u.protocol === "grpc:", ...who }));
}

/** Options of watch(). */
export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  signal?: AbortSignal;
}

/**
 * The api, typed: `client.typed("pod").get(ns, name)` → Pod;
 * `client.watch("pods")` lists then follows; `client.subscribe({...})` reads
 * the event stream (NATS only; durable, resumable). Errors are ApiErrors
 * with the Kubernetes Status (`isNotFound`, `isConflict`, `isExpired`…),
 * whichever the transport.
 */
export class ChoreoClient {
  /** The door in use. */
  readonly transport: ApiTransport;
  /** The NATS connection (nats transport only). */
  readonly nc: NatsConnection | undefined;
  /** kit's ApiClient (patch, scale, evict, bind…, untyped Object in and out): nats transport only. */
  readonly api: ApiClient | undefined;

  /** `new ChoreoClient(nc, { token })` wraps a NATS connection you keep; or give a transport (closed by close()). */
  constructor(conn: NatsConnection | ApiTransport, opts: { token?: string; timeoutMs?: number } = {}) {
    this.transport = isTransport(conn) ? conn : new NatsApiTransport(conn, opts, false);
    this.nc = this.transport instanceof NatsApiTransport ? this.transport.nc : undefined;
    this.api = this.transport instanceof NatsApiTransport ? this.transport.api : undefined;
  }

  /** A client of one kind: get/list/create/update/updateStatus/delete with that kind's type. */
  typed<C extends KindCase>(c: C): TypedClient<C> {
    return new TypedClient(this.transport, c);
  }

  async get(resource: string, namespace: string, name: string): Promise<AnyObject> {
    return unwrap(await this.transport.get(resource, namespace, name));
  }

  async list(resource: string, opts: ListOptions = {}): Promise<{ items: AnyObject[]; resourceVersion: string }> {
    const l = await this.transport.list(resource, opts);
    return { items: l.items.map(unwrap), resourceVersion: l.metadata?.resourceVersion ?? "" };
  }

  /** Creates an object of kind `c` (`create("pod", pod)`). */
  async create<C extends KindCase>(c: C, value: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.transport.create(wrap(c, value))) as KindValue<C>;
  }

  /** Updates an object of kind `c`; its resourceVersion must be the stored one (else 409 Conflict). */
  async update<C extends KindCase>(c: C, value: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.transport.update(wrap(c, value))) as KindValue<C>;
  }

  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<AnyObject> {
    return unwrap(await this.transport.delete(resource, namespace, name, options));
  }

  /**
   * Kubernetes' list-then-watch: every object matching as ADDED (at the
   * list's revision), then each change after it — from the event stream
   * (nats) or the server's watch (http, grpc). A 410 Expired (`isExpired`)
   * means: watch again (it relists).
   */
  async *watch(resource: string, opts: WatchOptions = {}): AsyncGenerator<ChangeEvent> {
    const kind = kindByResource(resource);
    if (!kind) throw new Error(`unknown resource ${JSON.stringify(resource)}`);
    const sel = { ...(opts.namespace ? { namespace: opts.namespace } : {}), ...(opts.labelSelector ? { labelSelector: opts.labelSelector } : {}) };
    const list = await this.list(resource, sel);
    for (const object of list.items) yield { type: "ADDED", revision: Number(object.metadata?.resourceVersion ?? 0), object, kind };
    yield* this.transport.watchFrom(resource, { ...sel, ...(opts.signal ? { signal: opts.signal } : {}), resourceVersion: list.resourceVersion });
  }

  /** Change events from the event stream (NATS only: the stream is JetStream's): see {@link subscribe}. */
  subscribe(opts: SubscribeOptions = {}): AsyncGenerator<ChangeEvent> {
    if (!this.nc) throw new Error(`subscribe() reads the event stream over NATS; this client uses ${this.transport.name} (connect with a nats:// url)`);
    return subscribe(this.nc, opts);
  }

  /** Closes the connection when this client made it (a NatsConnection given to the constructor is yours to close). */
  async close(): Promise<void> {
    await this.transport.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** ChoreoClient narrowed to one kind (`client.typed("pod").get(ns, name)` → Pod), on any transport. */
export class TypedClient<C extends KindCase> {
  readonly resource: string;
  constructor(
    readonly transport: ApiTransport,
    readonly kindCase: C,
  ) {
    this.resource = kindByCase(kindCase).resource;
  }

  async get(namespace: string, name: string): Promise<KindValue<C>> {
    return unwrap(await this.transport.get(this.resource, namespace, name)) as KindValue<C>;
  }

  async list(opts: ListOptions = {}): Promise<{ items: KindValue<C>[]; resourceVersion: string }> {
    const l = await this.transport.list(this.resource, opts);
    return { items: l.items.map((o) => unwrap(o) as KindValue<C>), resourceVersion: l.metadata?.resourceVersion ?? "" };
  }

  async create(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.transport.create(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async update(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.transport.update(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async updateStatus(v: KindValue<C>): Promise<KindValue<C>> {
    return unwrap(await this.transport.updateStatus(wrap(this.kindCase, v))) as KindValue<C>;
  }

  async delete(namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<KindValue<C>> {
    return unwrap(await this.transport.delete(this.resource, namespace, name, options)) as KindValue<C>;
  }
}
