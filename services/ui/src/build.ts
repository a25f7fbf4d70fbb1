// The bundle: web/main.tsx → dist/app.js (esbuild, minified, preact
// bundled in: no CDN, works offline) beside dist/index.html and
// dist/app.css. Made at build time (scripts/ensure-deps.sh) or by the api
// on its first /ui/ request when dist/ is missing; never committed.
import { access, copyFile, mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** services/ui. */
export const UI_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Where the built files are served from. */
export const DIST = path.join(UI_ROOT, "dist");

/** Builds dist/ (into a temporary folder renamed in place, so a reader never sees half a bundle). */
export async function buildUi(out = DIST): Promise<void> {
  const { build } = await import("esbuild");
  const tmp = `${out}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await build({
    entryPoints: [path.join(UI_ROOT, "web", "main.tsx")],
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    outfile: path.join(tmp, "app.js"),
    logLevel: "silent",
  });
  await copyFile(path.join(UI_ROOT, "web", "index.html"), path.join(tmp, "index.html"));
  await copyFile(path.join(UI_ROOT, "web", "app.css"), path.join(tmp, "app.css"));
  // The old bundle moved aside, the new one put in its place: a reader sees one or the other.
  const old = `${out}.old-${process.pid}`;
  await rename(out, old).catch(() => undefined);
  try {
    await rename(tmp, out);
  } catch (err) {
    // Another process put its bundle there meanwhile: that one stays.
    if (!(await complete(out))) throw err;
    await rm(tmp, { recursive: true, force: true });
  }
  await rm(old, { recursive: true, force: true });
}

async function complete(dir: string): Promise<boolean> {
  try {
    await access(path.join(dir, "index.html"));
    await access(path.join(dir, "app.js"));
    return true;
  } catch {
    return false;
  }
}

/** Whether `out` lacks a complete bundle or is older than a file of web/ (a source changed since the build). */
export async function isStale(out = DIST): Promise<boolean> {
  if (!(await complete(out))) return true;
  const built = (await stat(path.join(out, "app.js"))).mtimeMs;
  const web = path.join(UI_ROOT, "web");
  for (const f of await readdir(web)) if ((await stat(path.join(web, f))).mtimeMs > built) return true;
  return false;
}
