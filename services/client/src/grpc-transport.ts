// The api over its gRPC door (choreo.api.v1.Api, services/api/src/grpc):
// the generated grpc-js client of kit/gen, TLS checked against a CA, a
// bearer token in the `authorization` metadata or a client certificate.
// A failed call's Kubernetes Status comes in the `grpc-status-details-bin`
// trailer (google.rpc.Status, one Any holding choreo.meta.v1.Status).
import * as grpc from "@grpc/grpc-js";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ApiError, failure, kindByResource, kindOf, unwrap, type ApiObject, type DeleteOptions, type KindInfo, type ObjectList } from "@choreo/kit";
import type { ListOptions } from "@choreo/kit/client";
import { ApiClient as GrpcApiClient, type WatchEvent } from "@choreo/kit/gen/choreo/api/v1/api";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { ChangeEvent } from "./subscribe.js";
import { deleteOptions, TRANSPORT, type ApiTransport, type WatchFrom } from "./transport.js";

/** Where the gRPC server is and who calls it. */
export interface GrpcTransportOptions {
  /** `host:port` of the api's gRPC port (CHOREO_API_GRPC_PORT). */
  address: string;
  /** Plaintext (a server run with CHOREO_API_GRPC_INSECURE=1): the token travels in the clear. */
  insecure?: boolean;
  /** PEM of the CA that signed the server's certificate (default: the system's CAs). */
  ca?: string;
  /** Client certificate and key (PEM): the user is its CN, its groups each O. */
  cert?: string;
  key?: string;
  /** Bearer token, sent as `authorization: Bearer <token>` metadata. */
  token?: string;
  /** The name the server's certificate must carry, when it is not the address's host. */
  serverName?: string;
  /** Deadline of each unary call (default 10 s); watches have none. */
  timeoutMs?: number;
}

/** The standard rich-error trailer and its Any type URL for Kubernetes' Status. */
const DETAILS_KEY = "grpc-status-details-bin";
const STATUS_TYPE_URL = "type.googleapis.com/choreo.meta.v1.Status";
/** choreo's older trailer: the Status bytes alone. */
const STATUS_KEY = "choreo-status-bin";

/** The Kubernetes Status packed in a google.rpc.Status (`code = 1; message = 2; repeated Any details = 3`), if any. */
export function statusOfRpcDetails(bytes: Uint8Array): Status | undefined {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field !== 3 || wire !== 2) {
      r.skip(wire);
      continue;
    }
    const any = new BinaryReader(r.bytes());
    let typeUrl = "";
    let value: Uint8Array | undefined;
    while (any.pos < any.len) {
      const [f, t] = any.tag();
      if (f === 1 && t === 2) typeUrl = any.string();
      else if (f === 2 && t === 2) value = any.bytes();
      else any.skip(t);
    }
    if (typeUrl === STATUS_TYPE_URL && value) return Status.decode(value);
  }
  return undefined;
}

/** HTTP code and reason of a gRPC code, for a failure that carries no Status (the server never answered, say). */
const BY_CODE: Partial<Record<grpc.status, [number, string]>> = {
  [grpc.status.INVALID_ARGUMENT]: [400, "BadRequest"],
  [grpc.status.UNAUTHENTICATED]: [401, "Unauthorized"],
  [grpc.status.PERMISSION_DENIED]: [403, "Forbidden"],
  [grpc.status.NOT_FOUND]: [404, "NotFound"],
  [grpc.status.ALREADY_EXISTS]: [409, "AlreadyExists"],
  [grpc.status.ABORTED]: [409, "Conflict"],
  [grpc.status.OUT_OF_RANGE]: [410, "Expired"],
  [grpc.status.RESOURCE_EXHAUSTED]: [429, "TooManyRequests"],
  [grpc.status.UNIMPLEMENTED]: [405, "MethodNotAllowed"],
  [grpc.status.UNAVAILABLE]: [503, "ServiceUnavailable"],
  [grpc.status.DEADLINE_EXCEEDED]: [504, "Timeout"],
};

/** A grpc-js error as an ApiError: the Status of its trailers, else one made from its code. */
export function apiErrorOf(err: grpc.ServiceError): ApiError {
  const details = err.metadata?.get(DETAILS_KEY)[0];
  const fromDetails = details instanceof Uint8Array ? statusOfRpcDetails(details) : undefined;
  const raw = err.metadata?.get(STATUS_KEY)[0];
  const status = fromDetails ?? (raw instanceof Uint8Array ? Status.decode(raw) : undefined);
  if (status) return new ApiError(status, { cause: err });
  const [code, reason] = BY_CODE[err.code] ?? [500, "InternalError"];
  return new ApiError(failure(code, reason, err.details || err.message), { cause: err });
}

function info(resource: string): KindInfo {
  const k = kindByResource(resource);
  if (!k) throw new ApiError(failure(404, "NotFound", `the server could not find the requested resource (resource ${JSON.stringify(resource)})`));
  return k;
}

type Unary<Req, Res> = (
  req: Req,
  md: grpc.Metadata,
  opts: Partial<grpc.CallOptions>,
  cb: (err: grpc.ServiceError | null, res: Res) => void,
) => grpc.ClientUnaryCall;

export class GrpcTransport implements ApiTransport {
  readonly [TRANSPORT] = true as const;
  readonly name = "grpc" as const;
  readonly client: GrpcApiClient;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  /** How many Watch calls were made (a stream the server ended is called again from the last revision). */
  watchesStarted = 0;
  private readonly open = new Set<grpc.ClientReadableStream<WatchEvent>>();
  private closed = false;

  constructor(opts: GrpcTransportOptions) {
    this.token = opts.token || undefined;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    const creds = opts.insecure
      ? grpc.credentials.createInsecure()
      : grpc.credentials.createSsl(
          opts.ca ? Buffer.from(opts.ca) : null,
          opts.cert && opts.key ? Buffer.from(opts.key) : null,
          opts.cert && opts.key ? Buffer.from(opts.cert) : null,
        );
    this.client = new GrpcApiClient(opts.address, creds, opts.serverName ? { "grpc.ssl_target_name_override": opts.serverName } : {});
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.token) md.set("authorization", `Bearer ${this.token}`);
    return md;
  }

  /** One unary call with the deadline; failures as ApiErrors. */
  private unary<Req, Res>(method: Unary<Req, Res>, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      method.call(this.client, req, this.metadata(), { deadline: Date.now() + this.timeoutMs }, (err, res) => (err ? reject(apiErrorOf(err)) : resolve(res)));
    });
  }

  get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    return this.unary(this.client.get as Unary<Parameters<GrpcApiClient["get"]>[0], ApiObject>, { resource: info(resource).resource, namespace, name });
  }

  list(resource: string, opts: ListOptions): Promise<ObjectList> {
    return this.unary(this.client.list as Unary<Parameters<GrpcApiClient["list"]>[0], ObjectList>, {
      resource: info(resource).resource,
      namespace: opts.namespace ?? "",
      labelSelector: opts.labelSelector ?? "",
      fieldSelector: opts.fieldSelector ?? "",
      limit: opts.limit ?? 0,
      continue: opts.continue ?? "",
      resourceVersion: opts.resourceVersion,
      resourceVersionMatch: opts.resourceVersionMatch,
    });
  }

  create(object: ApiObject): Promise<ApiObject> {
    return this.unary(this.client.create as Unary<Parameters<GrpcApiClient["create"]>[0], ApiObject>, { object, dryRun: false });
  }

  update(object: ApiObject): Promise<ApiObject> {
    return this.unary(this.client.update as Unary<Parameters<GrpcApiClient["update"]>[0], ApiObject>, { object, dryRun: false });
  }

  updateStatus(object: ApiObject): Promise<ApiObject> {
    return this.unary(this.client.updateStatus as Unary<Parameters<GrpcApiClient["updateStatus"]>[0], ApiObject>, { object, dryRun: false });
  }

  delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    return this.unary(this.client.delete as Unary<Parameters<GrpcApiClient["delete"]>[0], ApiObject>, {
      resource: info(resource).resource,
      namespace,
      name,
      options: deleteOptions(options),
    });
  }

  /**
   * Api/Watch from the revision: a stream of WatchEvents. ERROR (410
   * Expired) is thrown as its Status; a stream the server ends cleanly is
   * made again from the last revision seen.
   */
  async *watchFrom(resource: string, from: WatchFrom): AsyncGenerator<ChangeEvent> {
    const k = info(resource);
    let rv = from.resourceVersion;
    while (!from.signal?.aborted && !this.closed) {
      const call = this.client.watch(
        {
          resource: k.resource,
          namespace: from.namespace ?? "",
          labelSelector: from.labelSelector ?? "",
          fieldSelector: "",
          resourceVersion: rv,
          timeoutSeconds: from.timeoutSeconds ?? 0,
          allowBookmarks: true,
        },
        this.metadata(),
      );
      this.watchesStarted++;
      // A cancelled call (abort, close(), the loop left) ends with CANCELLED: seen by the loop below or by no one.
      call.on("error", () => undefined);
      const onAbort = (): void => call.cancel();
      from.signal?.addEventListener("abort", onAbort, { once: true });
      this.open.add(call);
      try {
        for await (const raw of call) {
          const ev = raw as WatchEvent;
          if (ev.type === "ERROR") throw new ApiError(ev.status ?? failure(500, "InternalError", "watch ERROR without a Status"));
          const object = ev.object?.kind ? ev.object : undefined;
          const objRv = object ? (unwrap(object).metadata?.resourceVersion ?? "") : "";
          if (objRv) rv = objRv;
          if (ev.type !== "ADDED" && ev.type !== "MODIFIED" && ev.type !== "DELETED") continue;
          if (!object) continue;
          yield { type: ev.type, revision: Number(ev.revision) || Number(objRv || 0), object: unwrap(object), kind: kindOf(object) };
        }
      } catch (err) {
        if (from.signal?.aborted || this.closed) return;
        if (err instanceof ApiError) throw err;
        throw apiErrorOf(err as grpc.ServiceError);
      } finally {
        from.signal?.removeEventListener("abort", onAbort);
        this.open.delete(call);
        call.cancel();
      }
    }
  }

  /** Ends open watches and the channel. */
  async close(): Promise<void> {
    this.closed = true;
    for (const call of this.open) call.cancel();
    this.client.close();
  }
}
