// Who a NATS request is and whether it may run: the one place every api
// subject (the unary methods of serve-nats.ts, the metrics.k8s.io methods of
// metrics-api/nats-door.ts) authenticates its `Authorization: Bearer …`
// header, authorizes the request's attributes and audits the decision.
import type { Msg } from "@nats-io/transport-node";
import type { AuditEntry, AuditLog } from "../audit/index.js";
import type { Authenticator } from "../auth/authenticate.js";
import { authorizeAudited } from "../auth/authorize.js";
import type { Attributes, Authorizer, UserInfo } from "../auth/types.js";

/** How a NATS door checks its requests (each part optional, as the api's main and the tests give them). */
export interface NatsRequestAuth {
  /** Who a request is: its `Authorization: Bearer …` header's token; undefined (or without token sources): no authentication. */
  authentication?: Authenticator;
  /**
   * Who a request without an Authorization header is (the NATS
   * connection's credentials were its only proof); undefined: such a
   * request is refused with 401.
   */
  headerless?: UserInfo;
  /** Decides every request before it runs (403); undefined: everything is allowed. */
  authorizer?: Authorizer;
  /** Gets one event per request when given (requestURI `nats:<subject>`). */
  audit?: AuditLog;
}

/** The request's user; undefined when the door authenticates nobody (no token sources). Throws 401 for a missing or unknown token. */
export async function natsRequestUser(msg: Msg, auth: NatsRequestAuth): Promise<UserInfo | undefined> {
  const { authentication, headerless } = auth;
  if (!authentication?.enabled) return undefined;
  const header = msg.headers?.get("Authorization") || undefined;
  if (header === undefined && headerless) return headerless;
  return authentication.token(header);
}

/**
 * Authenticates `msg`, then authorizes what `attributes` says its user asks
 * (403 with the apiserver's message, nothing run) and begins its audit
 * entry (finish it with the outcome). A door without authentication admits
 * everything, unaudited, as the unary methods do.
 */
export async function admitNatsRequest(
  msg: Msg,
  auth: NatsRequestAuth,
  attributes: (user: UserInfo) => Attributes,
): Promise<{ user: UserInfo; entry: AuditEntry | undefined } | undefined> {
  const user = await natsRequestUser(msg, auth);
  if (!user) return undefined;
  const attrs = attributes(user);
  const entry = auth.audit?.begin({ user, verb: attrs.verb, attrs, requestURI: `nats:${msg.subject}`, sourceIP: "", userAgent: "nats" });
  if (!auth.authorizer) return { user, entry };
  authorizeAudited(auth.authorizer, attrs, entry);
  return { user, entry };
}
