import * as grpc from "@grpc/grpc-js";
import { ApiService, type ApiServer, type WatchEvent, type WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Logger } from "@choreo/kit/log";
import { statusOf, timeout } from "@choreo/kit";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { Authenticator } from "../auth/authenticate.js";
import { ALLOW_ALL } from "../auth/authorize.js";
import { guardedHandlers } from "../auth/guarded-handlers.js";
import type { FlowControl } from "../flowcontrol/flow-control.js";
import { legacyAdmin, StaticTokens } from "../auth/static-tokens.js";
import type { Authorizer, UserInfo } from "../auth/types.js";
import type { AuditLog } from "../audit/index.js";
import type { Readiness } from "../health/readiness.js";
import { serverCredentials, userOfCall, type GrpcTls } from "./credentials.js";
import { grpcError } from "./grpc-errors.js";
import { withCallSignal } from "../handlers/call-signal.js";
import { GrpcHealth } from "./health.js";
import { addReflection } from "./reflection.js";

export { grpcError, STATUS_DETAILS_KEY, STATUS_METADATA_KEY, statusFromDetails } from "./grpc-errors.js";

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
  /** TLS as on HTTPS (serving certificate; client certificates of `clientCa` name their user); undefined: plaintext. */
  tls?: GrpcTls;
  /** What grpc.health.v1 follows (the checks of /readyz); undefined: SERVING while the server runs. */
  readiness?: Readiness;
  /** How often the health service asks the readiness checks (1 s). */
  healthIntervalMs?: number;
  /** Told of every unary call once answered (the Kubernetes status code: 200, 404, 504…) and of every watch when it ends. */
  onRequest?: (method: string, code: number, seconds: number) => void;
  /** Seats by priority level (API Priority and Fairness): a unary call runs once it has one; a watch takes none. */
  flowControl?: FlowControl;
}

/**
 * The api over gRPC (@grpc/grpc-js), incl. the Watch stream, beside server
 * reflection and grpc.health.v1. A call's deadline ends its work: a unary call
 * whose deadline passed before its handler runs is not run, one waiting in the
 * handler (the object cache reaching a revision) stops waiting, a watch stops.
 */
export class GrpcTransport {
  readonly name = "grpc-transport";
  private boundPort = 0;
  private openWatches = 0;
  private unaryInFlight = 0;
  /** The health service (its status follows `readiness`). */
  readonly health: GrpcHealth;
  private readonly ready: Promise<number>;
  private readyResolve!: (p: number) => void;

  constructor(private readonly opts: GrpcOptions) {
    this.ready = new Promise((r) => (this.readyResolve = r));
    this.health = new GrpcHealth(opts.readiness, opts.log, opts.healthIntervalMs);
  }

  /** Unary calls being served now. */
  get inFlight(): number {
    return this.unaryInFlight;
  }

  /** Watch streams being served now (a cancelled or expired one is gone from it). */
  get watches(): number {
    return this.openWatches;
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
    type Call = Pick<grpc.ServerUnaryCall<unknown, unknown>, "metadata" | "getPeer" | "getAuthContext">;
    // A client certificate of the cluster's client CA, else the bearer token (as on HTTPS); 401 for neither.
    const userOf = async (call: Call): Promise<UserInfo> =>
      (authentication.enabled ? userOfCall(call) : undefined) ?? (await authentication.token(String(call.metadata.get("authorization")[0] ?? "") || undefined));
    const as = async (call: Call): Promise<ApiHandlers> =>
      guardedHandlers(
        handlers,
        authorizer,
        await userOf(call),
        audit
          ? {
              log: audit,
              requestURI: (m) => `grpc:/choreo.api.v1.Api/${m.charAt(0).toUpperCase()}${m.slice(1)}`,
              sourceIP: call.getPeer().replace(/:\d+$/, ""),
              userAgent: String(call.metadata.get("user-agent")[0] ?? "grpc"),
            }
          : undefined,
        this.opts.flowControl,
      );
    const unary =
      <K extends keyof ApiHandlers, Req, Res>(method: K): grpc.handleUnaryCall<Req, Res> =>
      (call, callback) => {
        // The caller's deadline or cancel aborts the call's signal: waits inside the handler end with it.
        const ac = new AbortController();
        const giveUp = (): void => ac.abort();
        call.once("cancelled", giveUp);
        this.unaryInFlight++;
        const started = performance.now();
        let code = 200;
        as(call)
          .then((h) => {
            // Past its deadline (or cancelled) while authenticated: the work is not started.
            if (call.cancelled) throw timeout("the call was cancelled or its deadline passed before it ran");
            return withCallSignal(ac.signal, () => (h[method] as unknown as (r: Req) => Promise<Res>).call(h, call.request));
          })
          .then(
            (res) => callback(null, res),
            (err: unknown) => {
              code = statusOf(err).code;
              if (code >= 500 && code !== 504) this.opts.log.error({ err, method }, "grpc call failed");
              callback(grpcError(err));
            },
          )
          .finally(() => {
            this.unaryInFlight--;
            call.off("cancelled", giveUp);
            this.opts.onRequest?.(method, code, (performance.now() - started) / 1000);
          });
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
      const started = performance.now();
      try {
        events = (await as(call)).watch(call.request, ac.signal);
      } catch (err) {
        // Refused watches are counted; one that runs lasts as long as its client wants (no latency to speak of).
        this.opts.onRequest?.("watch", statusOf(err).code, (performance.now() - started) / 1000);
        call.emit("error", grpcError(err)); // ends the call with the Status (destroy would never send it)
        return;
      }
      // A client's cancel, its deadline (grpc-js cancels the call), the connection's end or shutdown stop the watch.
      const stop = (): void => ac.abort();
      call.on("cancelled", stop);
      call.on("close", stop);
      signal.addEventListener("abort", stop, { once: true });
      if (call.cancelled) stop();
      this.openWatches++;
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
          this.openWatches--;
          signal.removeEventListener("abort", stop);
        }
      })();
    };
    const server = new grpc.Server({
      "grpc.max_receive_message_length": 8 * 1024 * 1024,
      "grpc.max_send_message_length": 64 * 1024 * 1024,
      // A client gone without a word (its host died, a cable pulled): pinged after a minute of silence and
      // dropped 20 s later, its watches with it — else they would be served until TCP gives up (minutes to hours).
      "grpc.keepalive_time_ms": 60_000,
      "grpc.keepalive_timeout_ms": 20_000,
    });
    server.addService(ApiService, impl);
    this.health.service.addToServer(server);
    // Reflection, like /openapi, for authenticated callers; health, like /readyz, for anyone.
    addReflection(server, async (call) => void (await userOf(call)));
    this.boundPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${this.opts.host}:${this.opts.port}`, serverCredentials(this.opts.tls), (err, port) => (err ? reject(err) : resolve(port))),
    );
    this.readyResolve(this.boundPort);
    this.opts.log.info({ port: this.boundPort, tls: this.opts.tls !== undefined }, "grpc listening");
    // Until shutdown the health service follows readiness; NOT_SERVING once the signal aborts, before the server closes.
    await this.health.follow(signal);
    await new Promise<void>((resolve) => {
      const finish = (): void => {
        clearTimeout(force);
        clearInterval(poll);
        resolve();
      };
      const close = (): void => (server.forceShutdown(), finish());
      const force = setTimeout(close, 5_000);
      // Once no api call is left, what remains (health Watch, reflection streams) never ends by itself:
      // closed after NOT_SERVING had a moment to go out, not after the 5 s.
      const poll = setInterval(() => this.openWatches === 0 && this.unaryInFlight === 0 && close(), 250);
      server.tryShutdown(finish);
    });
  }
}
