// `choreo describe`: an object, what it relates to (its pods, its
// endpoints) and the Events about it — kubectl describe's layout.
import { CliError, formatError, isNotFound, type StatusError } from "../client.js";
import { DESCRIBERS, type Related } from "../describe/describers.js";
import { eventsSection, type Obj } from "../describe/format.js";
import { resourcePath, type ResourceInfo } from "../resources.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";
import { parseTargets } from "../targets.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  selector: { type: "string", short: "l" },
  "all-namespaces": { type: "boolean", short: "A" },
  "show-events": { type: "boolean", default: true },
} as const;

const USAGE = `Show details of a resource or group of resources, with the Events about them.

Usage: choreo describe TYPE [NAME_PREFIX | -l SELECTOR] | TYPE/NAME [flags]

  -l, --selector=''        label selector
  -A, --all-namespaces     across all namespaces
      --show-events=true   show the Events section
  -n, --namespace=''       namespace

Types: pods, nodes, replicationcontrollers (rc), daemonsets (ds), jobs, services (svc), endpoints (ep).

Examples:
  choreo describe pod web-5x2kq
  choreo describe rc web
  choreo describe nodes`;

const selectorOf = (m: Record<string, string>): string =>
  Object.entries(m)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

class Describe {
  private podsInfo: ResourceInfo | undefined;
  constructor(private readonly s: Session) {}

  private async list(info: ResourceInfo, namespace: string | undefined, query: Record<string, string | undefined>): Promise<Obj[]> {
    const body = await this.s.client.json<{ items?: Obj[] }>({ path: resourcePath(info, namespace), query });
    return body.items ?? [];
  }

  private async pods(namespace: string | undefined, query: Record<string, string | undefined>): Promise<Obj[]> {
    this.podsInfo ??= await this.s.resources.byUserName("pods");
    return this.list(this.podsInfo, namespace, query);
  }

  /** The objects a describer shows beside `o`. */
  async related(info: ResourceInfo, o: Obj): Promise<Related> {
    const m = (o["metadata"] ?? {}) as { name?: string; namespace?: string; uid?: string };
    const spec = (o["spec"] ?? {}) as { selector?: Record<string, string> & { matchLabels?: Record<string, string> } };
    const owned = (ps: Obj[]) =>
      ps.filter((p) => ((p["metadata"] as { ownerReferences?: { uid?: string }[] } | undefined)?.ownerReferences ?? []).some((r) => r.uid === m.uid));
    switch (info.kind) {
      case "Node":
        return { pods: await this.pods(undefined, { fieldSelector: `spec.nodeName=${m.name ?? ""}` }) };
      case "ReplicationController":
        return { pods: await this.pods(m.namespace, { labelSelector: selectorOf(spec.selector ?? {}) }) };
      case "DaemonSet":
      case "Job":
        return { pods: owned(await this.pods(m.namespace, { labelSelector: selectorOf(spec.selector?.matchLabels ?? {}) })) };
      case "Service": {
        const ep = await this.s.resources.byUserName("endpoints");
        try {
          return { endpoints: await this.s.client.json<Obj>({ path: resourcePath(ep, m.namespace, m.name) }) };
        } catch (err) {
          if (isNotFound(err)) return {};
          throw err;
        }
      }
      default:
        return {};
    }
  }

  /** Events about the object (Events of cluster-scoped objects live in default). */
  async events(info: ResourceInfo, o: Obj): Promise<Obj[]> {
    const m = (o["metadata"] ?? {}) as { name?: string; namespace?: string; uid?: string };
    const ev = await this.s.resources.byUserName("events");
    const items = await this.list(ev, m.namespace || "default", { fieldSelector: `involvedObject.name=${m.name ?? ""},involvedObject.kind=${info.kind}` });
    // Events of an earlier object of the same name are not this one's.
    return items.filter((e) => {
      const uid = (e["involvedObject"] as { uid?: string } | undefined)?.uid;
      return !uid || !m.uid || uid === m.uid;
    });
  }

  async describe(info: ResourceInfo, o: Obj, showEvents: boolean): Promise<string> {
    const describer = DESCRIBERS[info.kind];
    if (!describer) throw new CliError(`error: describe does not know ${info.resource} yet (known: ${Object.keys(DESCRIBERS).join(", ")})`);
    const now = Date.now();
    const w = describer(o, await this.related(info, o), now);
    if (showEvents) eventsSection(w, await this.events(info, o), now);
    return w.toString();
  }
}

async function runDescribe(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (positionals.length === 0)
    throw new CliError(`error: You must specify the type of resource to describe. Use "choreo api-resources" for a complete list of supported resources.`);
  const targets = await parseTargets(positionals, s.resources);
  const d = new Describe(s);
  const blocks: string[] = [];
  let failed = false;
  for (const t of targets) {
    const ns = values["all-namespaces"] || !t.info.namespaced ? undefined : s.namespace;
    let objects: Obj[];
    if (t.names.length === 1 && !values.selector) {
      try {
        objects = [await s.client.json<Obj>({ path: resourcePath(t.info, ns ?? s.namespace, t.names[0]) })];
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // kubectl: a name is also a prefix.
        const prefix = t.names[0] ?? "";
        objects =
          (await s.client.json<{ items?: Obj[] }>({ path: resourcePath(t.info, ns) })).items?.filter((o) =>
            String((o["metadata"] as { name?: string } | undefined)?.name ?? "").startsWith(prefix),
          ) ?? [];
        if (objects.length === 0) {
          s.err(formatError(err as StatusError));
          failed = true;
          continue;
        }
      }
    } else {
      const all = (await s.client.json<{ items?: Obj[] }>({ path: resourcePath(t.info, ns), query: { labelSelector: values.selector } })).items ?? [];
      objects =
        t.names.length === 0 ? all : all.filter((o) => t.names.some((n) => String((o["metadata"] as { name?: string } | undefined)?.name ?? "").startsWith(n)));
    }
    for (const o of objects) blocks.push(await d.describe(t.info, { apiVersion: t.info.apiVersion, kind: t.info.kind, ...o }, values["show-events"] !== false));
  }
  if (blocks.length === 0 && !failed) s.err(`No resources found in ${s.namespace} namespace.`);
  if (blocks.length) s.out(blocks.join("\n\n\n"));
  return failed ? 1 : 0;
}

export const describeCommand: Command = { name: "describe", summary: "Show details of a specific resource or group of resources", run: runDescribe };
