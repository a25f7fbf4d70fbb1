// `choreo rollout status TYPE/NAME`: follows a Deployment's, DaemonSet's or
// StatefulSet's rollout over a watch until it finishes, printing kubectl's
// lines (rollout-status.ts); exit 0 once rolled out, 1 on an error, a
// deletion or --timeout.
import { CliError, type WatchEvent } from "../client.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";
import { parseDuration } from "./logs.js";
import { resourcePath } from "../resources.js";
import { ROLLOUT_KINDS, rolloutStatus } from "./rollout-status.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  watch: { type: "boolean", short: "w", default: true },
  timeout: { type: "string" },
} as const;

const USAGE = `Show the status of the rollout.

Usage: choreo rollout status (TYPE NAME | TYPE/NAME) [flags]

  Types: deployment (deploy), daemonset (ds), statefulset (sts).
  -w, --watch=true     watch the status of the rollout until it's done
      --timeout=0s     the length of time to wait before ending watch (0: forever)
  -n, --namespace=''   namespace (default: the context's, else default)

Examples:
  choreo rollout status deployment/web
  choreo rollout status ds agent --timeout 2m`;

/** TYPE/NAME or TYPE NAME. */
function target(positionals: string[]): { type: string; name: string } {
  const [first = "", second] = positionals;
  if (first === "") throw new CliError("error: required resource not specified");
  const slash = first.indexOf("/");
  if (slash >= 0) {
    if (second !== undefined)
      throw new CliError("error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form");
    return { type: first.slice(0, slash), name: first.slice(slash + 1) };
  }
  if (second === undefined) throw new CliError(`error: arguments in resource/name form must have a single resource and name`);
  return { type: first, name: second };
}

/** kubectl's `-w=false` / `--watch=false` (Node's parseArgs takes no value for a boolean). */
function watchValue(argv: string[]): { argv: string[]; watch: boolean } {
  let watch = true;
  const rest = argv.filter((a) => {
    const m = /^(?:-w|--watch)=(true|false)$/.exec(a);
    if (m) watch = m[1] === "true";
    return !m;
  });
  return { argv: rest, watch };
}

async function runStatus(raw: string[], io: CliIo): Promise<number> {
  const w = watchValue(raw);
  const { values, positionals } = parseFlags(w.argv, OPTIONS);
  const watch = w.watch && values.watch;
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  const timeoutMs = values.timeout === undefined || values.timeout === "0" ? 0 : parseDuration(values.timeout);
  if (timeoutMs === undefined)
    throw new CliError(`error: invalid argument "${values.timeout}" for "--timeout" flag: time: invalid duration "${values.timeout}"`);
  const { type, name } = target(positionals);
  const info = await s.resources.byUserName(type);
  const path = resourcePath(info, s.namespace);
  // Fetched first, as kubectl: a missing object is a NotFound whatever its kind.
  const obj = await s.client.json({ path: `${path}/${encodeURIComponent(name)}` });
  if (!(ROLLOUT_KINDS as readonly string[]).includes(info.kind)) throw new CliError(`error: no status viewer has been implemented for ${info.kind}`);
  let st = rolloutStatus(obj);
  s.out(st.message);
  if (st.done || !watch) return 0;

  const ac = new AbortController();
  const timer = timeoutMs > 0 ? setTimeout(() => ac.abort(), timeoutMs) : undefined;
  const outer = io.signal;
  const onAbort = (): void => ac.abort();
  outer?.addEventListener("abort", onAbort, { once: true });
  let failure: unknown;
  let rv = String((obj["metadata"] as Record<string, unknown> | undefined)?.["resourceVersion"] ?? "");
  try {
    // The watch resumes from the last version seen when the server ends it (its timeout).
    while (!st.done && failure === undefined && !ac.signal.aborted) {
      await s.client.watch(
        { path, query: { fieldSelector: `metadata.name=${name}`, resourceVersion: rv, allowWatchBookmarks: true }, signal: ac.signal },
        (ev: WatchEvent) => {
          const m = ev.object["metadata"] as Record<string, unknown> | undefined;
          if (m?.["resourceVersion"]) rv = String(m["resourceVersion"]);
          if (ev.type === "DELETED") failure = new CliError("error: object has been deleted");
          if (ev.type === "ERROR") failure = new CliError(`error: ${String(ev.object["message"] ?? "watch failed")}`);
          if (ev.type !== "ADDED" && ev.type !== "MODIFIED") return failure === undefined;
          try {
            st = rolloutStatus(ev.object);
          } catch (err) {
            failure = err;
            return false;
          }
          s.out(st.message);
          return !st.done;
        },
      );
    }
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
  }
  if (failure !== undefined) throw failure;
  if (!st.done) throw new CliError("error: timed out waiting for the condition");
  return 0;
}

const SUBCOMMANDS: Record<string, (argv: string[], io: CliIo) => Promise<number>> = { status: runStatus };

async function runRollout(argv: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  const run = sub === undefined ? undefined : SUBCOMMANDS[sub];
  if (!run) {
    io.stdout.write("Manage the rollout of a resource.\n\nUsage: choreo rollout status (TYPE NAME | TYPE/NAME) [flags]\n");
    return sub === undefined || sub === "-h" || sub === "--help" ? 0 : 1;
  }
  return run(rest, io);
}

export const rolloutCommand: Command = { name: "rollout", summary: "Show the status of a rollout (deployment, daemonset, statefulset)", run: runRollout };
