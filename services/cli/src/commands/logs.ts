// `choreo logs`: a container's log through GET pods/NAME/log, streamed as it comes.
import { CliError, type Query } from "../client.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  container: { type: "string", short: "c" },
  follow: { type: "boolean", short: "f" },
  tail: { type: "string" },
  since: { type: "string" },
  timestamps: { type: "boolean" },
  previous: { type: "boolean", short: "p" },
} as const;

const USAGE = `Print the logs for a container in a pod.

Usage: choreo logs [pod/]NAME [-c CONTAINER] [flags]

  -c, --container=''   the container (optional when the pod has one)
  -f, --follow         stream the log as it grows
      --tail=-1        only the last N lines (-1: all)
      --since=''       only lines newer than a duration (10s, 5m, 1h30m)
      --timestamps     prefix each line with its RFC 3339 timestamp
  -p, --previous       the log of the container's previous run
  -n, --namespace=''   namespace (default: the context's, else default)

Examples:
  choreo logs web-1
  choreo logs web-1 -c sidecar -f --tail 10
  choreo logs pod/web-1 --since 5m --timestamps`;

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** A Go duration (`10s`, `5m`, `1h30m`, `1.5h`) in milliseconds; `undefined` when it does not parse. */
export function parseDuration(s: string): number | undefined {
  const parts = [...s.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== s) return undefined;
  return parts.reduce((ms, p) => ms + Number(p[1]) * (UNIT_MS[p[2] ?? ""] ?? 0), 0);
}

/** The log query of the flags, worded as kubectl's errors. */
export function logQuery(values: { container?: string; follow?: boolean; tail?: string; since?: string; timestamps?: boolean; previous?: boolean }): Query {
  const q: Query = { container: values.container };
  if (values.follow) q["follow"] = true;
  if (values.timestamps) q["timestamps"] = true;
  if (values.previous) q["previous"] = true;
  if (values.tail !== undefined) {
    const n = Number(values.tail);
    if (!Number.isInteger(n) || n < -1) throw new CliError(`error: invalid argument "${values.tail}" for "--tail" flag`);
    if (n >= 0) q["tailLines"] = n;
  }
  if (values.since !== undefined) {
    const ms = parseDuration(values.since);
    if (ms === undefined) throw new CliError(`error: invalid argument "${values.since}" for "--since" flag: time: invalid duration "${values.since}"`);
    if (ms <= 0) throw new CliError("error: --since must be greater than 0");
    q["sinceSeconds"] = Math.ceil(ms / 1_000);
  }
  return q;
}

/** The pod a `logs` argument names: `NAME`, `pod/NAME` or `pods/NAME`. */
function podName(arg: string): string {
  const slash = arg.indexOf("/");
  if (slash < 0) return arg;
  const type = arg.slice(0, slash);
  if (!["pod", "pods", "po"].includes(type)) throw new CliError(`error: cannot get the logs of ${type}: only pods are supported`);
  return arg.slice(slash + 1);
}

async function runLogs(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (positionals.length === 0)
    throw new CliError("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\nPOD or TYPE/NAME is a required argument for the logs command");
  if (positionals.length > 2 || (positionals.length === 2 && values.container !== undefined))
    throw new CliError("error: only one pod may be given (and a container once)");
  const container = values.container ?? positionals[1];
  const query = logQuery({ ...values, ...(container !== undefined ? { container } : {}) });
  const name = podName(positionals[0] ?? "");
  const path = `/api/v1/namespaces/${encodeURIComponent(s.namespace)}/pods/${encodeURIComponent(name)}/log`;
  await s.client.stream({ path, query, ...(io.signal ? { signal: io.signal } : {}) }, (chunk) => io.stdout.write(chunk));
  return 0;
}

export const logsCommand: Command = { name: "logs", summary: "Print the logs for a container in a pod", run: runLogs };
