// Path parsing: a request path → what it addresses (a discovery document, an
// open endpoint, or a resource: kind + namespace + name + subresource).
import { KINDS, kindByResource, notFound, type KindInfo } from "@choreo/kit";
import { ApiError, failure, Reason } from "@choreo/kit";

/** What a path addresses. */
export type Route =
  | { type: "open"; what: "healthz" | "readyz" | "livez" | "version" }
  /** `path`: the v3 group-version (`api/v1`, `apis/apps/v1`), "" for the index and v2. */
  | { type: "openapi"; version: "v2" | "v3"; path: string }
  | { type: "apiVersions" }
  | { type: "apiGroupList" }
  | { type: "apiGroup"; group: string }
  | { type: "resourceList"; group: string; version: string }
  | ResourceRoute;

/** A resource path: `/api/v1/namespaces/NS/pods/NAME/status` and its shapes. */
export interface ResourceRoute {
  type: "resource";
  info: KindInfo;
  /** "" for cluster-scoped kinds and for all-namespace lists. */
  namespace: string;
  /** "" for a collection. */
  name: string;
  /** "", "status", "scale", "binding", "eviction" or "log". */
  subresource: string;
}

/** The subresources a kind serves. */
export function subresourcesOf(info: KindInfo): string[] {
  const out: string[] = [];
  if (info.hasStatus) out.push("status");
  if (info.hasScale) out.push("scale");
  if (info.resource === "pods") out.push("binding", "eviction", "log");
  if (info.resource === "pods") out.push("exec", "attach", "portforward");
  if (info.resource === "pods") out.push("ephemeralcontainers");
  if (info.resource === "serviceaccounts") out.push("token");
  if (info.resource === "certificatesigningrequests") out.push("approval");
  return out;
}

/** Kubernetes' answer for any path it does not serve. */
export function pathNotFound(): ApiError {
  return new ApiError(failure(404, Reason.NotFound, "the server could not find the requested resource", { kind: "", name: "" }));
}

const OPEN: Record<string, "healthz" | "readyz" | "livez" | "version"> = {
  "/healthz": "healthz",
  "/readyz": "readyz",
  "/livez": "livez",
  "/version": "version",
};

/** The group/versions served: core first, then groups in KINDS order (plus autoscaling/v1 for Scale). */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const k of KINDS) seen.set(`${k.group}/${k.version}`, { group: k.group, version: k.version });
  if (KINDS.some((k) => k.hasScale)) seen.set("autoscaling/v1", { group: "autoscaling", version: "v1" });
  return [...seen.values()];
}

function servesGroupVersion(group: string, version: string): boolean {
  return groupVersions().some((gv) => gv.group === group && gv.version === version);
}

/** A path segment percent-decoded; a malformed escape (`%`, `%zz`) is a 404, as any path not served. */
export function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw pathNotFound();
  }
}

/** Whether a path is open without authentication. */
export function isOpenPath(pathname: string): boolean {
  return pathname in OPEN;
}

/** `p` without its trailing slashes, by a scan: `/\/+$/` backtracks quadratically (16 KiB of slashes took 140 ms). */
function trimTrailingSlashes(p: string): string {
  let end = p.length;
  while (end > 0 && p.charCodeAt(end - 1) === 47) end--;
  return p.slice(0, end);
}

/** Parses a request path; throws a 404 Status for paths not served. */
export function parseRoute(pathname: string): Route {
  const trimmed = pathname.length > 1 ? trimTrailingSlashes(pathname) : pathname;
  const open = OPEN[trimmed];
  if (open) return { type: "open", what: open };
  if (trimmed === "/openapi/v2") return { type: "openapi", version: "v2", path: "" };
  if (trimmed === "/openapi/v3") return { type: "openapi", version: "v3", path: "" };
  if (trimmed.startsWith("/openapi/v3/")) return { type: "openapi", version: "v3", path: trimmed.slice("/openapi/v3/".length) };
  const seg = trimmed
    .split("/")
    .filter((s) => s !== "")
    .map(decodeSegment);
  if (seg[0] === "api") {
    if (seg.length === 1) return { type: "apiVersions" };
    if (seg[1] !== "v1") throw pathNotFound();
    if (seg.length === 2) return { type: "resourceList", group: "", version: "v1" };
    return resourcePath("", "v1", seg.slice(2));
  }
  if (seg[0] === "apis") {
    if (seg.length === 1) return { type: "apiGroupList" };
    const group = seg[1] as string;
    if (!groupVersions().some((gv) => gv.group === group && group !== "")) throw pathNotFound();
    if (seg.length === 2) return { type: "apiGroup", group };
    const version = seg[2] as string;
    if (!servesGroupVersion(group, version)) throw pathNotFound();
    if (seg.length === 3) return { type: "resourceList", group, version };
    return resourcePath(group, version, seg.slice(3));
  }
  throw pathNotFound();
}

function lookup(group: string, version: string, resource: string): KindInfo {
  const info = kindByResource(resource);
  if (!info || info.group !== group || info.version !== version) throw pathNotFound();
  return info;
}

function withSub(info: KindInfo, namespace: string, name: string, sub: string | undefined): ResourceRoute {
  const subresource = sub ?? "";
  if (subresource && !subresourcesOf(info).includes(subresource)) throw pathNotFound();
  if (name === "" && subresource) throw pathNotFound();
  return { type: "resource", info, namespace, name, subresource };
}

// rest: the segments after /api/v1 or /apis/G/V.
function resourcePath(group: string, version: string, rest: string[]): ResourceRoute {
  const [a, b, c, d, e, ...more] = rest;
  if (more.length > 0 || a === undefined) throw pathNotFound();
  if (a === "namespaces" && b !== undefined && c !== undefined) {
    // namespaces/NS/RESOURCE[/NAME[/SUB]] — unless c is a subresource of the namespace itself.
    const nsInfo = kindByResource("namespaces");
    const inner = kindByResource(c);
    if (!(inner && inner.namespaced) && group === "" && nsInfo && d === undefined && subresourcesOf(nsInfo).includes(c)) {
      return withSub(nsInfo, "", b, c);
    }
    const info = lookup(group, version, c);
    if (!info.namespaced) throw pathNotFound();
    return withSub(info, b, d ?? "", e);
  }
  if (e !== undefined || d !== undefined) throw pathNotFound();
  const info = lookup(group, version, a);
  if (b === undefined) return withSub(info, "", "", undefined);
  // A name outside namespaces/NS: only cluster-scoped kinds.
  if (info.namespaced) throw pathNotFound();
  return withSub(info, "", b, c);
}

/** Kubernetes' NotFound for a named object (used when a subresource is missing). */
export function objectNotFound(info: KindInfo, name: string): ApiError {
  return notFound(info.resource, name, info.group);
}
