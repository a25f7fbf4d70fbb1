// The api's handlers as one user may call them: every method is authorized
// before it runs (gRPC and NATS; the HTTP gateway authorizes by route).
import type { Method } from "@choreo/kit/client";
import type { WatchEvent, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { withAdmissionContext } from "../registry/generic/admission-context.js";
import { methodAttributes } from "./attributes.js";
import { authorizeOrThrow } from "./authorize.js";
import type { Authorizer, UserInfo } from "./types.js";

const UNARY: Method[] = ["get", "list", "create", "update", "updateStatus", "patch", "delete", "deleteCollection", "bind", "evict", "getScale", "updateScale"];

/** `inner` with each call checked against `authorizer` as `user` first (403 Forbidden, nothing run). */
export function guardedHandlers(inner: ApiHandlers, authorizer: Authorizer, user: UserInfo): ApiHandlers {
  const out: Record<string, unknown> = {};
  for (const m of UNARY) {
    const fn = inner[m] as (r: unknown) => Promise<unknown>;
    out[m] = (req: unknown) => {
      try {
        authorizeOrThrow(authorizer, methodAttributes(user, m, req));
      } catch (err) {
        return Promise.reject(err);
      }
      // Admission sees who asks (exempt users, escalation checks); warnings have no header to go to here.
      return withAdmissionContext({ user: user.name, userInfo: user, warn: () => undefined }, () => fn.call(inner, req));
    };
  }
  out["watch"] = (req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> => {
    authorizeOrThrow(authorizer, methodAttributes(user, "watch", req));
    return inner.watch(req, signal);
  };
  return out as unknown as ApiHandlers;
}
