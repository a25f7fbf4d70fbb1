// Manifests: files, directories and stdin → one object per YAML/JSON document,
// with `List` kinds unpacked.
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { CliError } from "./client.js";

/** One object of a manifest and where it came from (for messages). */
export interface Manifest {
  object: Record<string, unknown>;
  source: string;
}

const EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** `List` and `*List` documents with items → their items (recursively). */
function unpack(obj: Record<string, unknown>): Record<string, unknown>[] {
  const kind = typeof obj["kind"] === "string" ? obj["kind"] : "";
  if (kind.endsWith("List") && Array.isArray(obj["items"])) {
    return (obj["items"] as unknown[]).filter(isObject).flatMap(unpack);
  }
  return [obj];
}

/** Splits multi-document YAML (JSON is YAML too) into objects; empty documents are skipped. */
export function splitDocuments(text: string, source: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new CliError(`error: error parsing ${source}: ${doc.errors[0]?.message ?? "invalid YAML"}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObject(value)) throw new CliError(`error: error parsing ${source}: a document is not an object`);
    for (const object of unpack(value)) out.push({ object, source });
  }
  return out;
}

/** The manifest files under a directory, recursively, sorted by path. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const out: string[] = [];
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (EXTENSIONS.has(path.extname(e.name).toLowerCase())) out.push(p);
  }
  return out;
}

/** Reads stdin to the end. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === "string" ? Buffer.from(c) : c);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The objects of every `-f` argument: a file (any extension), a directory
 * (its .yaml/.yml/.json files, recursively) or `-` (stdin).
 */
export async function readManifests(args: string[], cwd: string, stdin?: () => Promise<string>): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const arg of args) {
    if (arg === "-") {
      if (!stdin) throw new CliError("error: no standard input to read from");
      out.push(...splitDocuments(await stdin(), "STDIN"));
      continue;
    }
    const p = path.resolve(cwd, arg);
    const st = await stat(p).catch(() => undefined);
    if (!st) throw new CliError(`error: the path "${arg}" does not exist`);
    const files = st.isDirectory() ? await filesUnder(p) : [p];
    for (const f of files) {
      const shown = st.isDirectory() ? path.join(arg, path.relative(p, f)) : arg;
      out.push(...splitDocuments(await readFile(f, "utf8"), shown));
    }
  }
  return out;
}
