// `choreo events`: the event log, one line per change (as etcdctl watch / nats sub).
// Reads CHOREO_EVENTS over NATS with @choreo/client's subscribe(); no api call.
import { stringify } from "yaml";
import { connectBus } from "@choreo/kit/bus";
import { kindByUserName } from "@choreo/kit";
import { messageToKubeJson, type KubeJson } from "@choreo/kit/kube-json";
import { subscribe, type ChangeEvent } from "@choreo/client";
import { CliError } from "../client.js";
import { eventLogFrom, kubeconfigPaths, loadKubeconfig, type EventLogAccess } from "../kubeconfig.js";
import { GLOBAL_OPTIONS, parseFlags, type CliIo, type Command, type Output } from "../session.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  watch: { type: "boolean", short: "w" },
  since: { type: "string" },
  resource: { type: "string" },
  "all-namespaces": { type: "boolean", short: "A" },
  node: { type: "string" },
  selector: { type: "string", short: "l" },
  output: { type: "string", short: "o" },
  nats: { type: "string" },
  "nats-credentials": { type: "string" },
} as const;

const USAGE = `Print the event log: one line per change (revision, verb, kind, namespace/name, what changed).

Usage: choreo events [-w] [--since REV] [--resource pods] [-n ns | -A] [-o json|yaml|wide]

  -w, --watch                 after the log, follow new changes (Ctrl-C ends)
      --since=0               changes after this revision (0: all the log keeps)
      --resource=''           one resource (pods, services, deploy…); default every resource
  -n, --namespace=''          one namespace (with --resource); default every namespace
      --node=''               pods bound to this node (with --resource pods)
  -l, --selector=''           label selector
  -o, --output=''             json | yaml (one document per change) | wide (adds node and labels)
      --nats=''               NATS url (default $CHOREO_NATS_URL, else the kubeconfig cluster's, as choreo up writes it)
      --nats-credentials=''   user:password file (default $CHOREO_NATS_CREDENTIALS, else the kubeconfig cluster's
                              read-only subscriber, <data-dir>/nats/subscriber.credentials); a subscriber's user suffices

Lines: REVISION VERB KIND NAMESPACE/NAME CHANGED — for MODIFIED, the top-level
fields (and metadata.<field>) that changed since the object's previous event
printed by this run; "?" when that was before --since.

Examples:
  choreo events --since 0
  choreo events -w --resource pods -n default
  choreo events --since 1200 -o json`;

type Json = Record<string, unknown>;

/** The top-level fields (and metadata.<field>) that differ between two objects' Kubernetes JSON. */
export function changedFields(before: Json, after: Json): string[] {
  const out: string[] = [];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  for (const k of keys) {
    if (k === "metadata") {
      const b = (before[k] ?? {}) as Json;
      const a = (after[k] ?? {}) as Json;
      for (const m of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort()) {
        if (m === "resourceVersion" || m === "managedFields" || m === "generation") continue;
        if (JSON.stringify(b[m]) !== JSON.stringify(a[m])) out.push(`metadata.${m}`);
      }
    } else if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out.push(k);
  }
  return out;
}

/** One change as printed: the line's parts, and its Kubernetes JSON. */
export interface EventLine {
  revision: number;
  type: string;
  kind: string;
  namespace: string;
  name: string;
  changed: string[] | undefined;
  object: KubeJson;
}

/** Remembers each object's last JSON, to say what a MODIFIED changed. */
export class ChangeTracker {
  private readonly last = new Map<string, Json>();

  line(ev: ChangeEvent): EventLine {
    const object = messageToKubeJson(ev.kind.protoType, ev.object);
    const meta = ev.object.metadata;
    const key = `${ev.kind.resource}/${meta?.namespace ?? ""}/${meta?.name ?? ""}`;
    const before = this.last.get(key);
    let changed: string[] | undefined = [];
    if (ev.type === "MODIFIED") changed = before ? changedFields(before, object as Json) : undefined;
    if (ev.type === "DELETED") this.last.delete(key);
    else this.last.set(key, object as Json);
    return { revision: ev.revision, type: ev.type, kind: ev.kind.kind, namespace: meta?.namespace ?? "", name: meta?.name ?? "", changed, object };
  }
}

/** The text line of a change (`wide`: node and labels too). */
export function formatLine(l: EventLine, wide: boolean): string {
  const what = l.changed === undefined ? "?" : l.changed.join(",");
  const name = l.namespace ? `${l.namespace}/${l.name}` : l.name;
  const base = `${String(l.revision).padEnd(8)} ${l.type.padEnd(8)} ${l.kind.padEnd(22)} ${name.padEnd(40)} ${what}`.trimEnd();
  if (!wide) return base;
  const obj = l.object as { spec?: { nodeName?: string }; metadata?: { labels?: Record<string, string> } };
  const labels = Object.entries(obj.metadata?.labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return `${base.padEnd(110)} node=${obj.spec?.nodeName || "-"} labels=${labels || "-"}`;
}

function print(out: Output, l: EventLine, format: string): void {
  const doc = { revision: l.revision, type: l.type, kind: l.kind, namespace: l.namespace, name: l.name, changed: l.changed ?? null, object: l.object };
  if (format === "json") out.write(`${JSON.stringify(doc)}\n`);
  else if (format === "yaml") out.write(`---\n${stringify(doc)}`);
  else out.write(`${formatLine(l, format === "wide")}\n`);
}

/** The event log the kubeconfig's current (or --context) cluster names, when it is a choreo up cluster. */
function kubeconfigEventLog(flag: string | undefined, context: string | undefined, io: CliIo): EventLogAccess | undefined {
  const paths = kubeconfigPaths(flag, io.env, io.cwd);
  return paths.length > 0 ? eventLogFrom(loadKubeconfig(paths), context) : undefined;
}

async function runEvents(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(argv, OPTIONS);
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const format = values.output ?? "";
  if (!["", "json", "yaml", "wide"].includes(format))
    throw new CliError(`error: unable to match a printer suitable for the output format "${format}", allowed formats are: json,yaml,wide`);
  const since = Number(values.since ?? "0");
  if (!Number.isInteger(since) || since < 0) throw new CliError(`error: invalid argument "${values.since}" for "--since" flag: a revision (an integer ≥ 0)`);
  const kind = values.resource ? kindByUserName(values.resource) : undefined;
  if (values.resource && !kind) throw new CliError(`error: the server doesn't have a resource type "${values.resource}"`);
  const namespace = values["all-namespaces"] ? undefined : values.namespace;
  if (namespace && kind && !kind.namespaced) throw new CliError(`error: ${kind.resource} are not namespaced: drop -n`);
  if (namespace && !kind) throw new CliError("error: -n needs --resource (the event log's subjects name the resource first)");
  // Where: the flags, the environment, else the current kubeconfig's cluster (choreo up's extension: its read-only subscriber).
  const flagged = values.nats ?? io.env["CHOREO_NATS_URL"];
  const found = flagged ? undefined : kubeconfigEventLog(values.kubeconfig, values.context, io);
  const url = flagged ?? found?.natsUrl;
  if (!url)
    throw new CliError(
      "error: no NATS url: pass --nats, set CHOREO_NATS_URL, or use the kubeconfig choreo up wrote (its cluster names the event log); choreo up prints it: NATS (event log)",
    );
  const nc = await connectBus(url, "choreo-events", values["nats-credentials"] ?? io.env["CHOREO_NATS_CREDENTIALS"] ?? found?.credentials);
  const tracker = new ChangeTracker();
  try {
    const events = subscribe(nc, {
      ...(kind ? { resource: kind.resource } : {}),
      ...(namespace ? { namespace } : {}),
      ...(values.node !== undefined ? { node: values.node } : {}),
      ...(values.selector ? { labelSelector: values.selector } : {}),
      fromRevision: since,
      untilCaughtUp: !values.watch,
      ...(io.signal ? { signal: io.signal } : {}),
    });
    for await (const ev of events) print(io.stdout, tracker.line(ev), format);
  } finally {
    await nc.close();
  }
  return 0;
}

export const eventsCommand: Command = { name: "events", summary: "Print (-w: follow) the event log, one line per change", run: runEvents };
