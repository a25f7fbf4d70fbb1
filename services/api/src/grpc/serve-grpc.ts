import { timingSafeEqual } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { statusOf, unauthorized } from "@choreo/kit";
import { ApiService, type ApiServer } from "@choreo/kit/gen/choreo/api/v1/api";
import { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Logger } from "@choreo/kit/log";
import type { ApiHandlers } from "../handlers/api-handlers.js";

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

function authorized(md: grpc.Metadata, tokens: string[] | undefined): boolean {
  if (!tokens) return true;
  const header = String(md.get("authorization")[0] ?? "");
  const given = Buffer.from(header.replace(/^Bearer\s+/i, ""));
  return tokens.some((t) => {
    const want = Buffer.from(t);
    return want.length === given.length && timingSafeEqual(want, given);
  });
}

/** Options of the gRPC transport. */
export interface GrpcOptions {
  handlers: ApiHandlers;
  log: Logger;
  host: string;
  port: number;
  tokens?: string[];
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
    const unary =
      <Req, Res>(fn: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> =>
      (call, callback) => {
        if (!authorized(call.metadata, tokens)) return callback(grpcError(unauthorized()));
        fn.call(handlers, call.request).then(
          (res) => callback(null, res),
          (err: unknown) => callback(grpcError(err)),
        );
      };
    const impl: ApiServer = {
      get: unary(handlers.get),
      list: unary(handlers.list),
      create: unary(handlers.create),
      update: unary(handlers.update),
      updateStatus: unary(handlers.updateStatus),
      patch: unary(handlers.patch),
      delete: unary(handlers.delete),
      deleteCollection: unary(handlers.deleteCollection),
      bind: unary(handlers.bind),
      evict: unary(handlers.evict),
      getScale: unary(handlers.getScale),
      updateScale: unary(handlers.updateScale),
      watch: (call) => {
        if (!authorized(call.metadata, tokens)) {
          call.destroy(grpcError(unauthorized()));
          return;
        }
        const ac = new AbortController();
        const stop = (): void => ac.abort();
        call.on("cancelled", stop);
        call.on("close", stop);
        signal.addEventListener("abort", stop, { once: true });
        void (async () => {
          try {
            for await (const ev of handlers.watch(call.request, ac.signal)) {
              if (ac.signal.aborted) break;
              if (!call.write(ev)) await new Promise((r) => call.once("drain", r));
            }
            call.end();
          } catch (err) {
            call.destroy(grpcError(err));
          } finally {
            signal.removeEventListener("abort", stop);
          }
        })();
      },
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
