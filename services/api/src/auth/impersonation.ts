// Impersonation (`kubectl --as alice --as-group dev`): the Impersonate-*
// headers, each allowed by the `impersonate` verb, as the apiserver's
// WithImpersonation filter.
import type { IncomingHttpHeaders } from "node:http";
import { badRequest } from "@choreo/kit";
import { resourceAttributes } from "./attributes.js";
import { authorizeOrThrow } from "./authorize.js";
import { ANONYMOUS, AUTHENTICATED, type Authorizer, type UserInfo } from "./types.js";

const SA_PREFIX = "system:serviceaccount:";

function values(h: IncomingHttpHeaders, name: string): string[] {
  const v = h[name];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v])
    .flatMap((s) => s.split(","))
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The user a request acts as: `user` itself without Impersonate-* headers;
 * else the impersonated user, each part (user or ServiceAccount, every
 * group, uid, extra key/value) checked as `impersonate` on users, groups,
 * serviceaccounts, uids or userextras/<key> (403 for the first refused).
 */
export function impersonate(headers: IncomingHttpHeaders, user: UserInfo, authorizer: Authorizer): { user: UserInfo; impersonator?: UserInfo } {
  const name = values(headers, "impersonate-user")[0];
  const groups = values(headers, "impersonate-group");
  const uid = values(headers, "impersonate-uid")[0];
  const extraKeys = Object.keys(headers).filter((h) => h.startsWith("impersonate-extra-"));
  if (name === undefined) {
    if (groups.length || uid !== undefined || extraKeys.length) {
      throw badRequest("requested [Impersonate-Group Impersonate-Uid Impersonate-Extra] without impersonating a user");
    }
    return { user };
  }
  const check = (resource: string, group: string, objName: string, namespace = "", subresource = "") =>
    authorizeOrThrow(authorizer, resourceAttributes(user, "impersonate", { group, version: "v1", resource }, namespace, objName, subresource));
  if (name.startsWith(SA_PREFIX)) {
    const [ns = "", sa = ""] = name.slice(SA_PREFIX.length).split(":");
    check("serviceaccounts", "", sa, ns);
  } else {
    check("users", "", name);
  }
  for (const g of groups) check("groups", "", g);
  if (uid !== undefined) check("uids", "authentication.k8s.io", uid);
  const extra: Record<string, string[]> = {};
  for (const h of extraKeys) {
    const key = decodeURIComponent(h.slice("impersonate-extra-".length));
    for (const v of values(headers, h)) check("userextras", "authentication.k8s.io", v, "", key);
    extra[key] = values(headers, h);
  }
  const impersonatedGroups = [...groups];
  if (name.startsWith(SA_PREFIX)) {
    const ns = name.slice(SA_PREFIX.length).split(":")[0] ?? "";
    impersonatedGroups.push("system:serviceaccounts", `system:serviceaccounts:${ns}`);
  }
  if (name !== ANONYMOUS.name && !impersonatedGroups.includes(AUTHENTICATED)) impersonatedGroups.push(AUTHENTICATED);
  return { user: { name, uid: uid ?? "", groups: [...new Set(impersonatedGroups)], extra }, impersonator: user };
}
