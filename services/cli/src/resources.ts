// Resource types: what the user types (`po`, `pods`, `rc`, `daemonset.apps`) or a
// manifest names (apiVersion + kind) → the REST path. The kit's KINDS table
// answers first; the server's discovery documents answer for anything else.
import { KINDS, kindByApiVersionKind, kindByUserName } from "@choreo/kit";
import { CliError, type RestClient } from "./client.js";

/** What the CLI needs to know about a resource type. */
export interface ResourceInfo {
  resource: string;
  singular: string;
  kind: string;
  group: string;
  version: string;
  apiVersion: string;
  namespaced: boolean;
  shortNames: readonly string[];
  categories: readonly string[];
  verbs?: readonly string[];
}

/** `pod`, `daemonset.apps`: how kubectl names a type in `TYPE/NAME` and in messages. */
export function typeName(r: Pick<ResourceInfo, "kind" | "group">): string {
  return r.group ? `${r.kind.toLowerCase()}.${r.group}` : r.kind.toLowerCase();
}

/** `pod/web`, `daemonset.apps/agent`. */
export function objectName(r: Pick<ResourceInfo, "kind" | "group">, name: string): string {
  return `${typeName(r)}/${name}`;
}

/** The REST path of a collection, an object, or a subresource. Cluster-scoped kinds ignore the namespace; no namespace lists across all. */
export function resourcePath(
  r: Pick<ResourceInfo, "group" | "version" | "resource" | "namespaced">,
  namespace: string | undefined,
  name?: string,
  subresource?: string,
): string {
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${r.resource}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}

interface DiscoveredResource {
  name: string;
  singularName?: string;
  namespaced?: boolean;
  kind: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
}

/** Resolves resource types, asking the server's discovery only when the built-in table does not know a name. */
export class Resources {
  private discovered: Promise<ResourceInfo[]> | undefined;

  constructor(private readonly client: RestClient) {}

  /** Every resource the server serves (subresources excluded), core group first. */
  discover(): Promise<ResourceInfo[]> {
    this.discovered ??= (async () => {
      const out: ResourceInfo[] = [];
      const core = await this.client.json<{ resources?: DiscoveredResource[] }>({ path: "/api/v1" });
      out.push(...fromList(core.resources ?? [], "", "v1"));
      const groups = await this.client.json<{ groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[] }>({
        path: "/apis",
      });
      const lists = await Promise.all(
        (groups.groups ?? []).map(async (g) => {
          const version = g.preferredVersion?.version ?? g.versions?.[0]?.version ?? "v1";
          const list = await this.client.json<{ resources?: DiscoveredResource[] }>({ path: `/apis/${g.name}/${version}` });
          return fromList(list.resources ?? [], g.name, version);
        }),
      );
      for (const l of lists) out.push(...l);
      return out;
    })();
    return this.discovered;
  }

  /** The type a user names (`po`, `pods`, `Pod`, `rc`, `daemonsets.apps`). */
  async byUserName(name: string): Promise<ResourceInfo> {
    const known = kindByUserName(name);
    if (known) return known;
    const n = name.toLowerCase();
    const [base, ...groupParts] = n.split(".");
    const group = groupParts.join(".");
    const all = await this.discover();
    const hit = all.find(
      (r) =>
        (group === "" || r.group === group) &&
        (r.resource === base || r.singular === base || r.kind.toLowerCase() === base || r.shortNames.includes(base ?? "")),
    );
    if (!hit) throw new CliError(`error: the server doesn't have a resource type "${name}"`);
    return hit;
  }

  /** The type of a manifest (apiVersion + kind). */
  async byApiVersionKind(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const known = kindByApiVersionKind(apiVersion, kind);
    if (known) return known;
    const all = await this.discover();
    const hit = all.find((r) => r.apiVersion === apiVersion && r.kind === kind);
    if (!hit) throw new CliError(`error: resource mapping not found for kind "${kind}" in version "${apiVersion}"`);
    return hit;
  }

  /** The types in a category (`all`), in the table's order. */
  inCategory(category: string): ResourceInfo[] {
    return KINDS.filter((k) => k.categories.includes(category));
  }
}

function fromList(resources: DiscoveredResource[], group: string, version: string): ResourceInfo[] {
  return resources
    .filter((r) => !r.name.includes("/"))
    .map((r) => ({
      resource: r.name,
      singular: r.singularName || r.kind.toLowerCase(),
      kind: r.kind,
      group,
      version,
      apiVersion: group ? `${group}/${version}` : version,
      namespaced: r.namespaced === true,
      shortNames: r.shortNames ?? [],
      categories: r.categories ?? [],
      verbs: r.verbs ?? [],
    }));
}
