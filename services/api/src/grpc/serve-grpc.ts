import * as grpc from "@grpc/grpc-js";
import { statusOf } from "@choreo/kit";
import { ApiService, type ApiServer, type WatchEvent, type WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Logger } from "@choreo/kit/log";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { Authenticator } from "../auth/authenticate.js";
import { ALLOW_ALL } from "../auth/authorize.js";
import { guardedHandlers } from "../auth/guarded-handlers.js";
import { legacyAdmin, StaticTokens } from "../auth/static-tokens.js";
import type { Authorizer } from "../auth/types.js";
import type { AuditLog } from "../audit/index.js";

/** Metadata key carrying the encoded Kubernetes Status of a failed call. */
export const STATUS_METADATA_KEY = "choreo-status-bin";

const CODES: Record<number, grpc.status> = {
  400: grpc.status.INVALID_ARGUMENT,
  401: grpc.status.UNAUTHENTICATED,
  403: grpc.status.PERMISSION_DENIED,
  404: grpc.status.NOT_FOUND,
  405: grpc.status.UNIMPLEMENTED,
  409: grpc.status.ABORTED,
  410: grpc.status.OUT_OF_RANGE,
  413: grpc.status.RESOURCE_EXHAUSTED,
  415: grpc.status.INVALID_ARGUMENT,
  422: grpc.status.INVALID_ARGUMENT,
  503: grpc.status.UNAVAILABLE,
  504: grpc.status.DEADLINE_EXCEEDED,
};

/** A gRPC error carrying the Status (code mapped, Status bytes in metadata). */
export function grpcError(err: unknown): grpc.ServiceError {
  const status = statusOf(err);
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_METADATA_KEY, Buffer.from(Status.encode(status).finish()));
  const code = status.reason === "AlreadyExists" ? grpc.status.ALREADY_EXISTS : (CODES[status.code] ?? grpc.status.INTERNAL);
  return Object.assign(new Error(status.message), { code, details: status.message, metadata }) as grpc.ServiceError;
}

/** Options of the gRPC transport. */
export interface GrpcOptions {
  handlers: ApiHandlers;
  log: Logger;
  host: string;
  port: number;
  /** Who calls (the `authorization` metadata's bearer token); undefined: no authentication. */
  authentication?: Authenticator;
  /** Administrator tokens (system:masters): shorthand for an `authentication` of those alone. */
  tokens?: string[];
  /** Decides every call before it runs (403 → PERMISSION_DENIED); undefined: everything is allowed. */
  authorizer?: Authorizer;
  /** Gets one event per call when given (requestURI `grpc:/choreo.api.v1.Api/<Method>`). */
  audit?: AuditLog;
}

/** The api over gRPC (@grpc/grpc-js), incl. the Watch stream. */
export class GrpcTransport {
  readonly name = "grpc-transport";
  private boundPort = 0;
  private readonly ready: Promise<number>;
  private readyResolve!: (p: number) => void;

  constructor(private readonly opts: GrpcOptions) {
    this.ready = new Promise((r) => (this.readyResolve = r));
  }

  /** The port once listening. */
  port(): Promise<number> {
    return this.ready;
  }

  async start(signal: AbortSignal): Promise<void> {
    const { handlers, tokens } = this.opts;
    const authentication =
      this.opts.authentication ??
      new Authenticator(tokens ? { tokens: [new StaticTokens(tokens.filter(Boolean).map((token) => ({ token, user: legacyAdmin() })))] } : {});
    const authorizer = this.opts.authorizer ?? ALLOW_ALL;
    /** The handlers as the caller may use them; throws 401 for an unknown token. */
    const audit = this.opts.audit;
    const as = async (call: { metadata: grpc.Metadata; getPeer(): string }): Promise<ApiHandlers> =>
      guardedHandlers(
        handlers,
        authorizer,
        await authentication.token(String(call.metadata.get("authorization")[0] ?? "") || undefined),
        audit
          ? {
              log: audit,
              requestURI: (m) => `grpc:/choreo.api.v1.Api/${m.charAt(0).toUpperCase()}${m.slice(1)}`,
              sourceIP: call.getPeer().replace(/:\d+$/, ""),
              userAgent: String(call.metadata.get("user-agent")[0] ?? "grpc"),
            }
          : undefined,
      );
    const unary =
      <K extends keyof ApiHandlers, Req, Res>(method: K): grpc.handleUnaryCall<Req, Res> =>
      (call, callback) => {
        as(call)
          .then((h) => (h[method] as unknown as (r: Req) => Promise<Res>).call(h, call.request))
          .then(
            (res) => callback(null, res),
            (err: unknown) => callback(grpcError(err)),
          );
      };
    const impl: ApiServer = {
      get: unary("get"),
      list: unary("list"),
      create: unary("create"),
      update: unary("update"),
      updateStatus: unary("updateStatus"),
      patch: unary("patch"),
      delete: unary("delete"),
      deleteCollection: unary("deleteCollection"),
      bind: unary("bind"),
      evict: unary("evict"),
      getScale: unary("getScale"),
      updateScale: unary("updateScale"),
      watch: (call) => void watch(call),
    };
    const watch = async (call: grpc.ServerWritableStream<WatchRequest, WatchEvent>): Promise<void> => {
      let events: AsyncIterable<WatchEvent>;
      const ac = new AbortController();
      try {
        events = (await as(call)).watch(call.request, ac.signal);
      } catch (err) {
        call.emit("error", grpcError(err)); // ends the call with the Status (destroy would never send it)
        return;
      }
      const stop = (): void => ac.abort();
      call.on("cancelled", stop);
      call.on("close", stop);
      signal.addEventListener("abort", stop, { once: true });
      void (async () => {
        try {
          for await (const ev of events) {
            if (ac.signal.aborted) break;
            if (!call.write(ev)) await new Promise((r) => call.once("drain", r));
          }
          call.end();
        } catch (err) {
          call.emit("error", grpcError(err)); // ends the call with the Status (destroy would never send it)
        } finally {
          signal.removeEventListener("abort", stop);
        }
      })();
    };
    const server = new grpc.Server({ "grpc.max_receive_message_length": 8 * 1024 * 1024, "grpc.max_send_message_length": 64 * 1024 * 1024 });
    server.addService(ApiService, impl);
    this.boundPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${this.opts.host}:${this.opts.port}`, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
    );
    this.readyResolve(this.boundPort);
    this.opts.log.info({ port: this.boundPort }, "grpc listening");
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 5_000);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}
