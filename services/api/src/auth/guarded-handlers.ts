// The api's handlers as one user may call them: every method is authorized
// before it runs, and audited when an audit log is given (gRPC and NATS; the
// HTTP gateway authorizes and audits by route).
import { statusOf } from "@choreo/kit";
import type { Method } from "@choreo/kit/client";
import type { WatchEvent, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { AuditEntry, AuditLog } from "../audit/index.js";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { admissionScope } from "../registry/generic/admission-context.js";
import type { RequestScope } from "../registry/generic/request-scope.js";
import { classify } from "../flowcontrol/classify.js";
import type { FlowControl } from "../flowcontrol/flow-control.js";
import { methodAttributes } from "./attributes.js";
import { authorizeAudited } from "./authorize.js";
import type { Attributes, Authorizer, UserInfo } from "./types.js";

/** Warnings have no header to go to on these doors. A module function: an arrow made per call as an object's `warn` is wrapped in tsx's __name (a defineProperty) each time. */
function dropWarning(): void {}

const UNARY: Method[] = ["get", "list", "create", "update", "updateStatus", "patch", "delete", "deleteCollection", "bind", "evict", "getScale", "updateScale"];

/** Where a door's calls are audited: the log, and how the door names a call (`grpc:/choreo.api.v1.Api/Get`, `nats:choreo.api.get`). */
export interface DoorAudit {
  log: AuditLog;
  requestURI(method: Method | "watch"): string;
  sourceIP?: string;
  userAgent?: string;
}

/** Authorizes a call of `attrs`; its audit entry (decision annotated) is returned to be finished. */
function admit(authorizer: Authorizer, user: UserInfo, audit: DoorAudit | undefined, m: Method | "watch", attrs: Attributes): AuditEntry | undefined {
  const entry = audit?.log.begin({
    user,
    verb: attrs.verb,
    attrs,
    requestURI: audit.requestURI(m),
    sourceIP: audit.sourceIP ?? "",
    ...(audit.userAgent ? { userAgent: audit.userAgent } : {}),
  });
  authorizeAudited(authorizer, attrs, entry);
  return entry;
}

/**
 * One call of the unary `m` on `inner` as `user`: authorized first (403,
 * nothing run), audited when `audit` is given, run with the user in the
 * admission context. A door serving one call per message (NATS) calls this
 * rather than building every method's wrapper for each message; `ownsRequest`:
 * the door decoded `req` for this call alone and reads nothing of it after.
 * With `flow`, the call runs once its priority level gives it a seat.
 */
export async function guardedCall(
  inner: ApiHandlers,
  authorizer: Authorizer,
  user: UserInfo,
  audit: DoorAudit | undefined,
  m: Method,
  req: unknown,
  ownsRequest = false,
  flow?: FlowControl,
): Promise<unknown> {
  const attrs = methodAttributes(user, m, req);
  const entry = admit(authorizer, user, audit, m, attrs);
  const fn = inner[m] as (r: unknown, scope: RequestScope) => Promise<unknown>;
  try {
    // Admission sees who asks (exempt users, escalation checks); warnings have no header to go to here.
    const admission = { user: user.name, userInfo: user, warn: dropWarning };
    // A request the door decoded for this call alone is the store's to change, unless the audit writes its body after the call.
    const scope: RequestScope = ownsRequest && !entry?.wantsRequestObject ? { admission, ownsRequest: true } : admissionScope(admission);
    const res = await (flow ? flow.run(classify(user, attrs), () => fn.call(inner, req, scope)) : fn.call(inner, req, scope));
    entry?.finish({ code: m === "create" ? 201 : 200, ...(entry.wantsRequestObject ? { requestObject: req } : {}) });
    return res;
  } catch (err) {
    const st = statusOf(err);
    entry?.finish({ code: st.code, status: st });
    throw err;
  }
}

/**
 * `inner` with each call checked against `authorizer` as `user` first (403 Forbidden, nothing run), and with `flow`
 * run once it has a seat (a watch is long-running: it takes none).
 */
export function guardedHandlers(inner: ApiHandlers, authorizer: Authorizer, user: UserInfo, audit?: DoorAudit, flow?: FlowControl): ApiHandlers {
  const out: Record<string, unknown> = {};
  for (const m of UNARY) out[m] = (req: unknown) => guardedCall(inner, authorizer, user, audit, m, req, false, flow);
  out["watch"] = (req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> => {
    // A watch is audited when it is admitted (its end is not waited for).
    admit(authorizer, user, audit, "watch", methodAttributes(user, "watch", req))?.finish({ code: 200 });
    return inner.watch(req, signal);
  };
  return out as unknown as ApiHandlers;
}
