// Discovery documents: /api, /apis, /apis/G, /api/v1 and /apis/G/V, /version.
import { KINDS, type KindInfo } from "@choreo/kit";
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
  return { kind: "APIGroupList", apiVersion: "v1", groups: names.map(groupEntry) };
}

/** GET /apis/GROUP */
export function apiGroup(group: string): Record<string, unknown> {
  return { kind: "APIGroup", apiVersion: "v1", ...groupEntry(group) };
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
  const sub = (name: string, kind: string, verbs: string[], extra: Record<string, unknown> = {}) =>
    out.push({ name: `${k.resource}/${name}`, singularName: "", namespaced: k.namespaced, ...extra, kind, verbs });
  if (k.resource === "pods") sub("binding", "Binding", ["create"]);
  if (k.resource === "pods") sub("log", "Pod", ["get"]);
  if (k.hasScale) sub("scale", "Scale", ["get", "patch", "update"], { group: "autoscaling", version: "v1" });
  if (k.hasStatus) sub("status", k.kind, ["get", "patch", "update"]);
  return out;
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
