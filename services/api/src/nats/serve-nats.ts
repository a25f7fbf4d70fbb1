import type { NatsConnection, Msg, Subscription } from "@nats-io/transport-node";
import { statusOf } from "@choreo/kit";
import { apiSubject, drainSubscriptions } from "@choreo/kit/bus";
import { METHODS, type Method } from "@choreo/kit/client";
import { Reply, type Object as ApiObject, type ObjectList } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import { FailureLog, type Logger } from "@choreo/kit/log";
import type { AuditLog } from "../audit/index.js";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { ALLOW_ALL } from "../auth/authorize.js";
import { guardedCall, type DoorAudit } from "../auth/guarded-handlers.js";
import { classify } from "../flowcontrol/classify.js";
import type { FlowControl } from "../flowcontrol/flow-control.js";
import type { RequestScope } from "../registry/generic/request-scope.js";
import { encode } from "../registry/shared/encode.js";
import { writtenReply } from "../registry/shared/written.js";
import { natsRequestUser, type NatsRequestAuth } from "./request-auth.js";

/** The queue group every api replica joins: a request goes to one of them. */
export const API_QUEUE = "choreo-api";

type Result = ApiObject | ObjectList | Scale;

/** The scope of a call without a user (no authentication): only that the request is the call's own. */
const OWNS_REQUEST: RequestScope = Object.freeze({ ownsRequest: true });

/** The verbs whose answer is the object their last write wrote, unchanged (registry/shared/written.ts): answered from its bytes. */
const ANSWERED_FROM_WRITE: ReadonlySet<Method> = new Set<Method>(["create", "update", "updateStatus", "bind"]);

function replyOf(method: Method, result: Result): Reply {
  if (method === "list" || method === "deleteCollection") return { result: { $case: "list", value: result as ObjectList } };
  if (method === "getScale" || method === "updateScale") return { result: { $case: "scale", value: result as Scale } };
  return { result: { $case: "object", value: result as ApiObject } };
}

/**
 * How the NATS door names a call in the audit log: `nats:` and its message's
 * subject. A class rather than an object literal with an arrow made per
 * message, which tsx's keepNames wraps in __name (a defineProperty) each time.
 */
class NatsDoorAudit implements DoorAudit {
  readonly userAgent = "nats";
  constructor(
    readonly log: AuditLog,
    private readonly subject: string,
  ) {}

  requestURI(): string {
    return `nats:${this.subject}`;
  }
}

/**
 * Serves the api's unary methods over NATS request-reply, protobuf in and
 * out, in a queue group so several replicas share the load. Failures are
 * answered with the Status, never dropped.
 */
export class NatsTransport {
  readonly name = "nats-transport";
  /** Answers waiting for the end of this turn of the event loop (`sendReplies`). */
  private replies: { msg: Msg; data: Uint8Array }[] = [];
  private readonly sendRepliesNow = (): void => this.sendReplies();
  /**
   * Server errors are logged through a FailureLog by method: with the store away every request fails (500 lease
   * renewals a second at 5,000 nodes), and each writing its stack would bury the cause.
   */
  private readonly failures: FailureLog;

  constructor(
    private readonly opts: {
      nc: NatsConnection;
      handlers: ApiHandlers;
      log: Logger;
      onRequest?: (method: string, code: number, seconds: number) => void;
      /** Seats by priority level (API Priority and Fairness): a call runs once it has one. */
      flowControl?: FlowControl;
    } & NatsRequestAuth,
  ) {
    this.failures = new FailureLog(opts.log);
  }

  async start(signal: AbortSignal): Promise<void> {
    const subs: Subscription[] = [];
    for (const method of Object.keys(METHODS) as Method[]) {
      subs.push(
        this.opts.nc.subscribe(apiSubject(method), {
          queue: API_QUEUE,
          callback: (err, msg) => {
            if (err) {
              this.opts.log.warn({ err, method }, "subscription error");
              return;
            }
            void this.serve(method, msg);
          },
        }),
      );
    }
    await this.opts.nc.flush();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    // Drain: stop taking requests, finish the ones in flight.
    await drainSubscriptions(subs);
  }

  /** Runs `method` as the request's user may (401 for an unknown token or a missing one when headerless requests are refused). */
  private async call(method: Method, msg: Msg, req: unknown): Promise<Result> {
    const user = await natsRequestUser(msg, this.opts);
    const handlers = this.opts.handlers;
    const flow = this.opts.flowControl;
    if (!user) {
      // `req` was decoded from this message for this call alone: the store may change its object instead of copying it.
      const run = () => (handlers[method] as (r: unknown, scope: RequestScope) => Promise<Result>).call(handlers, req, OWNS_REQUEST);
      return flow ? flow.run(classify(undefined, { verb: method, resource: "", namespace: "", apiGroup: "" }), run) : run();
    }
    const audit = this.opts.audit;
    const door = audit ? new NatsDoorAudit(audit, msg.subject) : undefined;
    return (await guardedCall(handlers, this.opts.authorizer ?? ALLOW_ALL, user, door, method, req, true, flow)) as Result;
  }

  private async serve(method: Method, msg: Msg): Promise<void> {
    const started = performance.now();
    let reply: Reply;
    let code = 200;
    try {
      const req = (METHODS[method] as { decode(b: Uint8Array): unknown }).decode(msg.data);
      reply = replyOf(method, await this.call(method, msg, req));
    } catch (err) {
      const status = statusOf(err);
      code = status.code;
      if (code >= 500) this.failures.failed("request failed", method, err, { method }, undefined, "error");
      reply = { result: { $case: "status", value: status } };
    }
    this.opts.onRequest?.(method, code, (performance.now() - started) / 1000);
    if (!msg.reply) return;
    const written = reply.result?.$case === "object" && ANSWERED_FROM_WRITE.has(method) ? writtenReply(reply.result.value) : undefined;
    if (this.replies.push({ msg, data: written ?? encode(Reply, reply) }) === 1) setImmediate(this.sendRepliesNow);
  }

  /**
   * Sends the answers of this turn of the event loop together. nats.js writes
   * to its socket what one microtask checkpoint queued: answers finished in
   * different checkpoints of one I/O callback (a Redis reply resolving a
   * batch of writes whose handlers await different numbers of times) each
   * went out in a write of their own.
   */
  private sendReplies(): void {
    const replies = this.replies;
    this.replies = [];
    for (const r of replies) {
      try {
        r.msg.respond(r.data);
      } catch (err) {
        // The connection closed or draining: the requester times out, as it would had the answer been lost.
        this.opts.log.warn({ err, subject: r.msg.subject }, "answer not sent");
      }
    }
  }
}
