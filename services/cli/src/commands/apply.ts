// `choreo apply -f`: client-side apply (create with the last-applied
// annotation, or a three-way merge patch), one manifest at a time.
import { computeApplyPatch, withLastApplied } from "../apply-patch.js";
import { CliError, formatError, isNotFound } from "../client.js";
import { readAll, readManifests, type Manifest } from "../manifests.js";
import { objectName, resourcePath } from "../resources.js";
import { GLOBAL_OPTIONS, Session, parseFlags, type CliIo, type Command } from "../session.js";

const OPTIONS = {
  ...GLOBAL_OPTIONS,
  filename: { type: "string", short: "f", multiple: true },
  recursive: { type: "boolean", short: "R" },
  output: { type: "string", short: "o" },
} as const;

const USAGE = `Apply a configuration to resources by file name or stdin.

Usage: choreo apply -f FILE|DIR|- [-f ...] [flags]

  -f, --filename=[]   a YAML/JSON file (several documents, List kinds), a directory
                      (its .yaml/.yml/.json files, recursively) or - for stdin
  -o, --output=''     name: print type/name only
  -n, --namespace=''  namespace for manifests that name none

Prints "TYPE/NAME created|configured|unchanged" per object.`;

export const FIELD_MANAGER = "kubectl-client-side-apply";
export const MERGE_PATCH = "application/merge-patch+json";

type Obj = Record<string, unknown>;

/** Applies one manifest; returns the verb printed (created, configured, unchanged). */
export async function applyOne(s: Session, m: Manifest): Promise<{ name: string; verb: "created" | "configured" | "unchanged" }> {
  const obj = structuredClone(m.object);
  const apiVersion = obj["apiVersion"];
  const kind = obj["kind"];
  const missing = [typeof apiVersion === "string" && apiVersion ? "" : "apiVersion not set", typeof kind === "string" && kind ? "" : "kind not set"].filter(
    (x) => x,
  );
  if (missing.length > 0) throw new CliError(`error: error validating "${m.source}": error validating data: [${missing.join(", ")}]`);
  const info = await s.resources.byApiVersionKind(apiVersion as string, kind as string);
  const meta = (obj["metadata"] && typeof obj["metadata"] === "object" ? obj["metadata"] : (obj["metadata"] = {})) as Obj;
  const name = typeof meta["name"] === "string" ? meta["name"] : "";
  if (name === "") throw new CliError(`error: error when retrieving current configuration of ${info.kind} from "${m.source}": resource name may not be empty`);
  let namespace: string | undefined;
  if (info.namespaced) {
    const own = typeof meta["namespace"] === "string" && meta["namespace"] ? meta["namespace"] : undefined;
    if (own && s.conn.namespaceExplicit && own !== s.namespace) {
      throw new CliError(
        `error: the namespace from the provided object "${own}" does not match the namespace "${s.namespace}". You must pass '--namespace=${own}' to perform this operation.`,
      );
    }
    namespace = own ?? s.namespace;
    meta["namespace"] = namespace;
  }
  const modified = withLastApplied(obj);
  const shown = objectName(info, name);
  let current: Obj;
  try {
    current = await s.client.json<Obj>({ path: resourcePath(info, namespace, name) });
  } catch (err) {
    if (!isNotFound(err)) throw new ApplyError(err, `retrieving current configuration of ${shown} from server for "${m.source}"`);
    try {
      await s.client.json({ method: "POST", path: resourcePath(info, namespace), query: { fieldManager: FIELD_MANAGER }, body: modified });
    } catch (e) {
      throw new ApplyError(e, `creating "${m.source}"`);
    }
    return { name: shown, verb: "created" };
  }
  const patch = computeApplyPatch(modified, current);
  if (!patch) return { name: shown, verb: "unchanged" };
  try {
    await s.client.json({
      method: "PATCH",
      path: resourcePath(info, namespace, name),
      query: { fieldManager: FIELD_MANAGER },
      body: patch,
      contentType: MERGE_PATCH,
    });
  } catch (e) {
    throw new ApplyError(e, `patching "${m.source}"`);
  }
  return { name: shown, verb: "configured" };
}

/** A failed step of apply and what was being done. */
class ApplyError extends Error {
  constructor(
    readonly inner: unknown,
    readonly when: string,
  ) {
    super(inner instanceof Error ? inner.message : String(inner));
  }
}

async function runApply(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS);
  const s = new Session(io, values);
  if (values.help) {
    s.out(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new CliError(`error: Unexpected args: [${positionals.join(" ")}]\nSee 'choreo apply -h' for help and examples`);
  const files = values.filename ?? [];
  if (files.length === 0) throw new CliError("error: must specify one of -f and -k");
  if (values.output !== undefined && values.output !== "name")
    throw new CliError(`error: unable to match a printer suitable for the output format "${values.output}", allowed formats are: name`);
  const stdin = io.stdin ?? (() => readAll(process.stdin));
  const manifests = await readManifests(files, io.cwd, stdin);
  if (manifests.length === 0) throw new CliError("error: no objects passed to apply");
  let failed = false;
  for (const m of manifests) {
    try {
      const r = await applyOne(s, m);
      s.out(values.output === "name" ? r.name : `${r.name} ${r.verb}`);
    } catch (err) {
      if (err instanceof ApplyError) s.err(formatError(err.inner, err.when));
      else if (err instanceof CliError) s.err(formatError(err));
      else throw err;
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

export const applyCommand: Command = { name: "apply", summary: "Apply a configuration to a resource by file name or stdin", run: runApply };
