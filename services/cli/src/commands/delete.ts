// `choreo delete`: by type and names, by manifest (-f), or by selector (-l / --all).
import { setTimeout as sleep } from "node:timers/promises";
import { CliError, formatError, isNotFound } from "../client.js";
import { readAll, readManifests } from "../manifests.js";
import { resourcePath, typeName, type ResourceInfo } from "../resources.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";
import { parseTargets } from "../targets.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  filename: { type: "string", short: "f", multiple: true },
  selector: { type: "string", short: "l" },
  "field-selector": { type: "string" },
  all: { type: "boolean" },
  "all-namespaces": { type: "boolean", short: "A" },
  "grace-period": { type: "string" },
  force: { type: "boolean" },
  now: { type: "boolean" },
  "ignore-not-found": { type: "boolean" },
  cascade: { type: "string" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
  output: { type: "string", short: "o" },
} as const;

const USAGE = `Delete resources by file names, stdin, resources and names, or by resources and label selector.

Usage: choreo delete (-f FILE | TYPE [NAME... | -l SELECTOR | --all] | TYPE/NAME...) [flags]

  -f, --filename=[]       manifests naming the objects to delete (file, directory or -)
  -l, --selector=''       delete the objects matching a label selector
      --all               delete every object of the types in the namespace
  -A, --all-namespaces    with -l or --all, across all namespaces
      --grace-period=-1   seconds to give the objects to terminate (-1: their default)
      --now               same as --grace-period=1
      --force             delete at once (grace period 0), without waiting for termination
      --cascade=background  background | foreground | orphan
      --ignore-not-found  no error when an object does not exist
      --wait              wait until the objects are gone (--timeout=60s)
  -o, --output=''         name: print type/name only`;

const FORCE_WARNING =
  "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.";

interface Victim {
  info: ResourceInfo;
  namespace: string | undefined;
  name: string;
}

function gracePeriod(values: { "grace-period"?: string; force?: boolean; now?: boolean }): number | undefined {
  let g = -1;
  if (values["grace-period"] !== undefined) {
    g = Number(values["grace-period"]);
    if (!Number.isInteger(g))
      throw new CliError(
        `error: invalid argument "${values["grace-period"]}" for "--grace-period" flag: strconv.ParseInt: parsing "${values["grace-period"]}": invalid syntax`,
      );
  }
  if (values.now) {
    if (g !== -1) throw new CliError("error: --now and --grace-period cannot be specified together");
    g = 1;
  }
  // Like kubectl: 0 without --force means 1; --force without a period means 0.
  if (g === 0 && !values.force) g = 1;
  if (values.force && g < 0) g = 0;
  return g < 0 ? undefined : g;
}

function propagation(cascade: string | undefined): string {
  switch (cascade ?? "background") {
    case "background":
    case "true":
      return "Background";
    case "foreground":
      return "Foreground";
    case "orphan":
    case "false":
      return "Orphan";
    default:
      throw new CliError(`error: invalid cascade value (${cascade}). Must be "background", "foreground", or "orphan".`);
  }
}

/** Parses `60s`, `2m`, `90` (seconds) into milliseconds. */
export function parseTimeout(v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const m = /^(\d+)(ms|s|m|h)?$/.exec(v);
  if (!m) throw new CliError(`error: invalid argument "${v}" for "--timeout" flag`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Number(m[1]) * unit;
}

async function victimsOf(
  s: Session,
  values: { filename?: string[]; selector?: string; "field-selector"?: string; all?: boolean; "all-namespaces"?: boolean },
  positionals: string[],
): Promise<{ victims: Victim[]; byQuery: boolean }> {
  if (values.filename && values.filename.length > 0) {
    if (positionals.length > 0) throw new CliError("error: resources cannot be given both as arguments and with -f");
    const manifests = await readManifests(values.filename, s.io.cwd, s.io.stdin ?? (() => readAll(process.stdin)));
    const victims: Victim[] = [];
    for (const m of manifests) {
      const info = await s.resources.byApiVersionKind(String(m.object["apiVersion"] ?? ""), String(m.object["kind"] ?? ""));
      const meta = (m.object["metadata"] ?? {}) as { name?: string; namespace?: string };
      if (!meta.name) throw new CliError(`error: resource name may not be empty (in "${m.source}")`);
      victims.push({ info, namespace: info.namespaced ? meta.namespace || s.namespace : undefined, name: meta.name });
    }
    return { victims, byQuery: false };
  }
  if (positionals.length === 0)
    throw new CliError(
      "error: You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'",
    );
  const targets = await parseTargets(positionals, s.resources);
  const byQuery = values.selector !== undefined || values["field-selector"] !== undefined || values.all === true;
  const victims: Victim[] = [];
  for (const t of targets) {
    if (t.names.length > 0) {
      if (byQuery) throw new CliError("error: name cannot be provided when a selector is specified");
      victims.push(...t.names.map((name) => ({ info: t.info, namespace: t.info.namespaced ? s.namespace : undefined, name })));
      continue;
    }
    if (!byQuery) throw new CliError(`error: resource(s) were provided, but no name was specified`);
    const allNs = values["all-namespaces"] === true;
    const list = await s.client.json<{ items?: { metadata?: { name?: string; namespace?: string } }[] }>({
      path: resourcePath(t.info, allNs || !t.info.namespaced ? undefined : s.namespace),
      query: { labelSelector: values.selector, fieldSelector: values["field-selector"] },
    });
    for (const item of list.items ?? []) {
      const name = item.metadata?.name;
      if (name) victims.push({ info: t.info, namespace: t.info.namespaced ? item.metadata?.namespace || s.namespace : undefined, name });
    }
  }
  return { victims, byQuery };
}

async function runDelete(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (values.output !== undefined && values.output !== "name")
    throw new CliError(`error: unable to match a printer suitable for the output format "${values.output}", allowed formats are: name`);
  const grace = gracePeriod(values);
  const body: Record<string, unknown> = { propagationPolicy: propagation(values.cascade) };
  if (grace !== undefined) body["gracePeriodSeconds"] = grace;
  const timeoutMs = parseTimeout(values.timeout, 60_000);
  const { victims, byQuery } = await victimsOf(s, values, positionals);
  if (victims.length === 0 && byQuery) {
    s.err(values["all-namespaces"] ? "No resources found" : `No resources found in ${s.namespace} namespace.`);
    return 0;
  }
  if (values.force) s.err(FORCE_WARNING);
  let failed = false;
  const deleted: Victim[] = [];
  for (const v of victims) {
    try {
      await s.client.json({ method: "DELETE", path: resourcePath(v.info, v.namespace, v.name), body });
      deleted.push(v);
      s.out(values.output === "name" ? `${typeName(v.info)}/${v.name}` : `${typeName(v.info)} "${v.name}" ${values.force ? "force deleted" : "deleted"}`);
    } catch (err) {
      if (isNotFound(err) && values["ignore-not-found"]) continue;
      s.err(formatError(err));
      if (!(err instanceof Error) || err.name !== "StatusError") return 1;
      failed = true;
    }
  }
  if (values.wait) {
    for (const v of deleted) {
      if (!(await waitGone(s, v, timeoutMs))) {
        s.err(`error: timed out waiting for the condition on ${typeName(v.info)}/${v.name}`);
        failed = true;
      }
    }
  }
  return failed ? 1 : 0;
}

/** Polls until the object is gone (404) or the timeout passes. */
async function waitGone(s: Session, v: Victim, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await s.client.json({ path: resourcePath(v.info, v.namespace, v.name) });
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
    if (Date.now() >= deadline) return false;
    await sleep(250, undefined, { signal: s.io.signal }).catch(() => undefined);
    if (s.io.signal?.aborted) return false;
  }
}

export const deleteCommand: Command = {
  name: "delete",
  summary: "Delete resources by file names, stdin, resources and names, or by resources and label selector",
  run: runDelete,
};
