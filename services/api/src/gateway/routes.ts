import { kindByResource, type KindInfo } from "@choreo/kit";

/** A resource request path, parsed. */
export interface ResourcePath {
  info: KindInfo;
  group: string;
  version: string;
  namespace: string;
  name: string;
  subresource: string;
  /** /api/v1/pods without a namespace on a namespaced kind. */
  allNamespaces: boolean;
}

/** Parses `/api/v1/...` and `/apis/G/V/...`; undefined when it is no resource path. */
export function parseResourcePath(pathname: string): ResourcePath | undefined | "unknown" {
  const parts = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  let group = "";
  let version: string;
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) {
    version = parts[1] as string;
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    group = parts[1] as string;
    version = parts[2] as string;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace = "";
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1] as string;
    rest = rest.slice(2);
  } else if (rest[0] === "namespaces") {
    // the namespaces resource itself: /api/v1/namespaces[/NAME[/status]]
  }
  const [resource = "", name = "", subresource = "", ...extra] = rest;
  if (extra.length) return "unknown";
  const info = kindByResource(resource);
  if (!info || info.group !== group || info.version !== version) return "unknown";
  if (!info.namespaced && namespace) return "unknown";
  return { info, group, version, namespace, name, subresource, allNamespaces: info.namespaced && !namespace };
}
