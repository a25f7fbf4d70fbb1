import { KINDS, type KindInfo } from "@choreo/kit";

const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/** The group/versions choreo serves, core first. */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const k of KINDS) seen.set(`${k.group}/${k.version}`, { group: k.group, version: k.version });
  return [...seen.values()];
}

/** GET /api */
export function apiVersions(serverAddress: string): unknown {
  return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }] };
}

/** GET /apis */
export function apiGroupList(): unknown {
  const groups = new Map<string, string[]>();
  for (const gv of groupVersions()) if (gv.group) groups.set(gv.group, [...(groups.get(gv.group) ?? []), gv.version]);
  // autoscaling/v1 serves the scale subresource's kind
  if (!groups.has("autoscaling")) groups.set("autoscaling", ["v1"]);
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: [...groups].map(([name, versions]) => ({
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    })),
  };
}

function resourceEntries(k: KindInfo): unknown[] {
  const out: unknown[] = [{
    name: k.resource, singularName: k.singular, namespaced: k.namespaced, kind: k.kind, verbs: VERBS,
    ...(k.shortNames.length ? { shortNames: k.shortNames } : {}), ...(k.categories.length ? { categories: k.categories } : {}),
  }];
  if (k.hasStatus) out.push({ name: `${k.resource}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get", "patch", "update"] });
  if (k.hasScale) out.push({ name: `${k.resource}/scale`, singularName: "", namespaced: k.namespaced, group: "autoscaling", version: "v1", kind: "Scale", verbs: ["get", "patch", "update"] });
  if (k.resource === "pods") {
    out.push({ name: "pods/binding", singularName: "", namespaced: true, kind: "Binding", verbs: ["create"] });
    out.push({ name: "pods/log", singularName: "", namespaced: true, kind: "Pod", verbs: ["get"] });
  }
  return out;
}

/** GET /api/v1 or /apis/G/V; undefined when not served. */
export function apiResourceList(group: string, version: string): unknown {
  const kinds = KINDS.filter((k) => k.group === group && k.version === version);
  if (kinds.length === 0 && !(group === "autoscaling" && version === "v1")) return undefined;
  return { kind: "APIResourceList", apiVersion: "v1", groupVersion: group ? `${group}/${version}` : version, resources: kinds.flatMap(resourceEntries) };
}

/** GET /version */
export function versionInfo(): unknown {
  return {
    major: "1", minor: "32", gitVersion: "v1.32.0-choreo.0.1.0", gitCommit: "", gitTreeState: "clean", buildDate: "2026-11-22T00:00:00Z",
    goVersion: `node${process.versions.node}`, compiler: "tsx", platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
  };
}
