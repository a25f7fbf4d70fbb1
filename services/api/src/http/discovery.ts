// Discovery documents: /api, /apis, /apis/G, /api/v1 and /apis/G/V, /version;
// /api and /apis also in the aggregated form (apidiscovery.k8s.io v2 and
// v2beta1) when the Accept header asks for it. All derived from the kinds table.
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { KINDS, type KindInfo } from "@choreo/kit";
import { metricsAggregatedGroup, metricsGroupEntry } from "../metrics-api/discovery.js";
import { REVIEW_GROUPS, reviewAggregatedGroup, reviewGroupEntry } from "./reviews/discovery.js";
import { sendJson } from "./respond.js";
import { groupVersions } from "./routes.js";

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/** GET /api */
export function apiVersions(serverAddress: string): Record<string, unknown> {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }] };
}

function groupEntry(name: string): Record<string, unknown> {
  const versions = groupVersions()
    .filter((gv) => gv.group === name)
    .map((gv) => ({ groupVersion: `${name}/${gv.version}`, version: gv.version }));
  return { name, versions, preferredVersion: versions[0] };
}

/** GET /apis */
export function apiGroupList(): Record<string, unknown> {
  const names = [
    ...new Set(
      groupVersions()
        .map((gv) => gv.group)
        .filter((g) => g !== ""),
    ),
  ];
  // The review groups (authorization.k8s.io, authentication.k8s.io) have no stored kind: http/reviews serves them.
  const reviews = Object.keys(REVIEW_GROUPS).map(reviewGroupEntry);
  return { kind: "APIGroupList", apiVersion: "v1", groups: [...names.map(groupEntry), ...reviews, metricsGroupEntry()] };
}

/** GET /apis/GROUP */
export function apiGroup(group: string): Record<string, unknown> {
  return { kind: "APIGroup", apiVersion: "v1", ...groupEntry(group) };
}

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

/** One subresource of a kind as discovery lists it. */
interface Sub {
  name: string;
  kind: Gvk;
  verbs: string[];
}

/** The subresources of a kind with what they answer and their verbs. */
function subresources(k: KindInfo): Sub[] {
  const own = { group: k.group, version: k.version, kind: k.kind };
  const out: Sub[] = [];
  if (k.resource === "pods") out.push({ name: "binding", kind: { group: "", version: "v1", kind: "Binding" }, verbs: ["create"] });
  if (k.resource === "pods") out.push({ name: "eviction", kind: { group: "policy", version: "v1", kind: "Eviction" }, verbs: ["create"] });
  if (k.resource === "pods") out.push({ name: "log", kind: own, verbs: ["get"] });
  if (k.resource === "pods") out.push({ name: "exec", kind: { group: "", version: "v1", kind: "PodExecOptions" }, verbs: ["create", "get"] });
  if (k.resource === "pods") out.push({ name: "attach", kind: { group: "", version: "v1", kind: "PodAttachOptions" }, verbs: ["create", "get"] });
  if (k.resource === "pods") out.push({ name: "ephemeralcontainers", kind: own, verbs: ["get", "patch", "update"] });
  if (k.hasScale) out.push({ name: "scale", kind: { group: "autoscaling", version: "v1", kind: "Scale" }, verbs: ["get", "patch", "update"] });
  if (k.hasStatus) out.push({ name: "status", kind: own, verbs: ["get", "patch", "update"] });
  return out;
}

/** The discovery entries of one kind: the resource and its subresources. */
export function resourceEntries(k: KindInfo): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [
    {
      name: k.resource,
      singularName: k.singular,
      namespaced: k.namespaced,
      kind: k.kind,
      verbs: VERBS,
      ...(k.shortNames.length ? { shortNames: [...k.shortNames] } : {}),
      ...(k.categories.length ? { categories: [...k.categories] } : {}),
    },
  ];
  for (const s of subresources(k)) {
    const other = s.kind.group !== k.group || s.kind.version !== k.version ? { group: s.kind.group, version: s.kind.version } : {};
    out.push({ name: `${k.resource}/${s.name}`, singularName: "", namespaced: k.namespaced, ...other, kind: s.kind.kind, verbs: s.verbs });
  }
  return out;
}

// ---- aggregated discovery (apidiscovery.k8s.io) -----------------------------

/** APIResourceDiscovery of one kind. */
function aggregatedResource(k: KindInfo): Record<string, unknown> {
  return {
    resource: k.resource,
    responseKind: { group: k.group, version: k.version, kind: k.kind },
    scope: k.namespaced ? "Namespaced" : "Cluster",
    singularResource: k.singular,
    verbs: VERBS,
    ...(k.shortNames.length ? { shortNames: [...k.shortNames] } : {}),
    ...(k.categories.length ? { categories: [...k.categories] } : {}),
    ...(subresources(k).length ? { subresources: subresources(k).map((s) => ({ subresource: s.name, responseKind: s.kind, verbs: s.verbs })) } : {}),
  };
}

/** APIGroupDiscovery of one group ("" for core): every served version, preferred first. */
function aggregatedGroup(group: string): Record<string, unknown> {
  const versions = groupVersions()
    .filter((gv) => gv.group === group)
    .map((gv) => ({
      version: gv.version,
      resources: KINDS.filter((k) => k.group === group && k.version === gv.version).map(aggregatedResource),
      freshness: "Current",
    }));
  return { metadata: { ...(group ? { name: group } : {}), creationTimestamp: null }, versions };
}

/** The aggregated document of `/api` (core group) or `/apis` (every other group). */
export function aggregatedDiscovery(which: "" | "apis", version: "v2" | "v2beta1"): Record<string, unknown> {
  const groups = which === "" ? [""] : [...new Set(groupVersions().map((gv) => gv.group))].filter((g) => g !== "");
  const items = groups.map(aggregatedGroup);
  // metrics.k8s.io is served beside the kinds (kubectl top looks for it), as metrics-server's aggregated API.
  if (which === "apis") items.push(...Object.keys(REVIEW_GROUPS).map(reviewAggregatedGroup), metricsAggregatedGroup());
  return { kind: "APIGroupDiscoveryList", apiVersion: `apidiscovery.k8s.io/${version}`, metadata: {}, items };
}

/** The aggregated discovery version an Accept header asks for first, if any (plain JSON first → undefined). */
export function aggregatedVersionOf(accept: string): "v2" | "v2beta1" | undefined {
  for (const entry of accept.split(",")) {
    const [type, ...params] = entry.split(";").map((x) => x.trim());
    const p = new Map(params.map((kv) => [kv.slice(0, kv.indexOf("=")).trim().toLowerCase(), kv.slice(kv.indexOf("=") + 1).trim()] as const));
    const t = (type ?? "").toLowerCase();
    if (t !== "application/json" && t !== "*/*" && t !== "application/*") continue;
    const v = p.get("v");
    if (p.get("g") === "apidiscovery.k8s.io" && p.get("as") === "APIGroupDiscoveryList" && (v === "v2" || v === "v2beta1")) return v;
    if (!p.has("as")) return undefined;
  }
  return undefined;
}

/** GET /api or /apis: aggregated when asked for (Content-Type echoes the negotiated type), the legacy document otherwise. */
export function serveDiscovery(req: IncomingMessage, res: ServerResponse, which: "" | "apis", legacy: Record<string, unknown>): void {
  const version = aggregatedVersionOf(String(req.headers["accept"] ?? ""));
  if (!version) return sendJson(res, 200, legacy);
  const text = JSON.stringify(aggregatedDiscovery(which, version));
  // As Kubernetes' aggregated handler: an ETag of the document, If-None-Match → 304 (kubectl's disk cache revalidates).
  const etag = `"${createHash("sha256").update(text).digest("hex")}"`;
  const common = { "Cache-Control": "no-cache, private", Vary: "Accept", ETag: etag };
  if (String(req.headers["if-none-match"] ?? "") === etag) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  res.writeHead(200, {
    "Content-Type": `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`,
    "Content-Length": Buffer.byteLength(text),
    ...common,
  });
  res.end(text);
}

/** GET /api/v1 or /apis/G/V (the route parser has checked the group/version is served). */
export function apiResourceList(group: string, version: string): Record<string, unknown> {
  const kinds = KINDS.filter((k) => k.group === group && k.version === version);
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: group ? `${group}/${version}` : version,
    resources: kinds.flatMap(resourceEntries),
  };
}

/** GET /version */
export function versionInfo(): Record<string, unknown> {
  return {
    major: "1",
    minor: "32",
    gitVersion: "v1.32.0-choreo",
    gitCommit: "",
    gitTreeState: "clean",
    buildDate: "1970-01-01T00:00:00Z",
    goVersion: `node${process.versions.node}`,
    compiler: "tsx",
    platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
  };
}
