// The vocabulary of authentication and authorization, shared by every door
// (HTTP, gRPC, NATS) and every authorizer (RBAC, the node authorizer).

/** Who is asking: what an authenticator proves, as Kubernetes' user.Info. */
export interface UserInfo {
  /** `alice`, `system:serviceaccount:ns:sa`, `system:node:node-1`, `system:anonymous`. */
  name: string;
  uid: string;
  /** `system:authenticated` is always among them for an authenticated user; `system:masters` may do anything. */
  groups: string[];
  /** Extra facts (a ServiceAccount token's pod name and uid, as `authentication.kubernetes.io/pod-name`). */
  extra: Record<string, string[]>;
}

/** What is asked, as Kubernetes' authorizer.Attributes. */
export interface Attributes {
  user: UserInfo;
  /**
   * A resource request's verb: get, list, watch, create, update, patch,
   * delete, deletecollection (and impersonate, bind, escalate, approve, use);
   * a non-resource request's: the HTTP method lower-cased (get, post, put, …).
   */
  verb: string;
  /** False for non-resource paths (/healthz, /version, /api, /openapi/v2). */
  resourceRequest: boolean;
  /** "" for the core group. */
  apiGroup: string;
  apiVersion: string;
  /** Plural resource name: `pods`, `deployments`; "" for non-resource requests. */
  resource: string;
  /** `log`, `exec`, `status`, `scale`, `eviction`, `binding`, `portforward`, `attach`, `token`, ""… */
  subresource: string;
  /** "" for cluster-scoped resources and for requests across all namespaces. */
  namespace: string;
  /** "" when the request names no object (list, watch of a collection, create without a name). */
  name: string;
  /** The request path, for non-resource requests (`/healthz`). */
  path: string;
  /** A list's or watch's field selector, as sent (`spec.nodeName=node-1`): the node authorizer lets a node list only its pods. */
  fieldSelector?: string;
}

/** An authorizer's answer. `denied`: an explicit no that ends the chain (no other authorizer may allow). */
export interface Decision {
  allowed: boolean;
  denied?: boolean;
  /** Why: which binding allowed it, or why not — shown in a 403's message and in access reviews. */
  reason: string;
}

export interface Authorizer {
  authorize(a: Attributes): Decision;
}

export const ANONYMOUS: UserInfo = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"], extra: {} };
export const MASTERS = "system:masters";
export const AUTHENTICATED = "system:authenticated";
