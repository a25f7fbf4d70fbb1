// The kubelet's AtomicWriter: a config volume's files replaced all at once.
//
//   <dir>/..2026_11_25_22_00_00.aB3xYz/   the data, one dir per version
//   <dir>/..data -> ..2026_11_25_22_00_00.aB3xYz
//   <dir>/<key>  -> ..data/<key>           what the container sees
//
// An update writes a new data dir, points a new symlink `..data_tmp` at it
// and renames that over `..data` (rename(2) is atomic), then removes the
// old data dir: a reader through `key` sees the old files or the new ones,
// never a mix of one file.
import fs from "node:fs";
import path from "node:path";
import { validFilePath, type Payload } from "./resolve.js";

const DATA = "..data";
const DATA_TMP = "..data_tmp";

/** `..YYYY_MM_DD_HH_MM_SS.` in UTC, the prefix of a data dir (a random suffix follows). */
export function dataDirPrefix(now: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, "0");
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.${p(now.getUTCMilliseconds(), 3)}`;
}

/** The volume's current files (path → data and mode), undefined before the first write. */
export function readCurrent(dir: string): Payload | undefined {
  let target: string;
  try {
    target = fs.readlinkSync(path.join(dir, DATA));
  } catch {
    return undefined;
  }
  const out: Payload = new Map();
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(dir, target, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else {
        const f = path.join(dir, target, r);
        out.set(r, { data: fs.readFileSync(f), mode: fs.statSync(f).mode & 0o7777 });
      }
    }
  };
  walk("");
  return out;
}

/** Whether two payloads hold the same paths with the same bytes and modes. */
export function samePayload(a: Payload, b: Payload): boolean {
  if (a.size !== b.size) return false;
  for (const [p, f] of a) {
    const g = b.get(p);
    if (!g || g.mode !== f.mode || !Buffer.from(g.data).equals(Buffer.from(f.data))) return false;
  }
  return true;
}

/**
 * Makes `dir` hold exactly `payload`, atomically (see the top of this
 * file); nothing is written when it already does. Returns whether it wrote.
 * Paths are validated first (relative, no `..`): nothing is written outside
 * `dir`.
 */
export function writeAtomic(dir: string, payload: Payload, now = new Date()): boolean {
  for (const p of payload.keys()) if (!validFilePath(p)) throw new Error(`invalid path ${JSON.stringify(p)}: must be relative and may not contain '..'`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const current = readCurrent(dir);
  const old = current ? fs.readlinkSync(path.join(dir, DATA)) : undefined;
  if (current && samePayload(current, payload)) return false;

  const tsDir = fs.mkdtempSync(path.join(dir, dataDirPrefix(now)));
  const tsName = path.basename(tsDir);
  try {
    for (const [p, f] of payload) {
      const file = path.join(tsDir, p);
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
      fs.writeFileSync(file, f.data, { mode: f.mode });
      fs.chmodSync(file, f.mode); // the umask does not apply to the mode asked for
    }
    fs.chmodSync(tsDir, 0o755);
    const tmp = path.join(dir, DATA_TMP);
    fs.rmSync(tmp, { force: true });
    fs.symlinkSync(tsName, tmp);
    fs.renameSync(tmp, path.join(dir, DATA));
  } catch (err) {
    fs.rmSync(tsDir, { recursive: true, force: true });
    throw err;
  }

  // The user-visible names: one symlink per top-level component, through ..data.
  const visible = new Set([...payload.keys()].map((p) => p.split("/")[0]!));
  for (const name of visible) {
    const at = path.join(dir, name);
    if (!fs.lstatSync(at, { throwIfNoEntry: false })) fs.symlinkSync(path.join(DATA, name), at);
  }
  if (old && old !== tsName) fs.rmSync(path.join(dir, old), { recursive: true, force: true });
  for (const e of fs.readdirSync(dir, { withFileTypes: true }))
    if (!e.name.startsWith("..") && !visible.has(e.name) && e.isSymbolicLink()) fs.rmSync(path.join(dir, e.name), { force: true });
  return true;
}
