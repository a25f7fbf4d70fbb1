// Static files of the web view under /ui/: the built bundle (dist/), with
// content types; any other path under /ui/ is index.html (the page routes
// itself by its hash). Public, like a login page: the page's API calls
// carry the user's bearer token and are authorized as any other request.
import { readFile, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { buildUi, DIST, isStale } from "./build.js";

/** The prefix the view is served under. */
export const UI_PREFIX = "/ui";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
};

/** Whether a path is the web view's (`/ui`, `/ui/…`). */
export function isUiPath(pathname: string): boolean {
  return pathname === UI_PREFIX || pathname.startsWith(`${UI_PREFIX}/`);
}

let checked: Promise<void> | undefined;

/**
 * dist/ built when missing or older than a source file in web/ — checked
 * once per process (a failure is retried by the next request).
 */
function ensureBuilt(dir: string): Promise<void> {
  checked ??= (async () => {
    if (!(await isStale(dir))) return;
    await buildUi(dir);
  })().catch((err: unknown) => {
    checked = undefined;
    throw err;
  });
  return checked;
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

function send(res: ServerResponse, code: number, type: string, body: Buffer | string, cache: string, head = false): void {
  res.writeHead(code, {
    "Content-Type": type,
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": cache,
    "X-Content-Type-Options": "nosniff",
    // The page talks to its own origin only; no inline scripts, no framing.
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
  });
  res.end(head ? undefined : body);
}

/**
 * Answers a GET/HEAD under /ui/: `/ui` redirects to `/ui/`; a file of dist/
 * by its name; anything else (a sub-path of the page, a missing file)
 * index.html. Other methods 405. `dir` is for tests.
 */
export async function serveUi(req: IncomingMessage, res: ServerResponse, pathname: string, dir = DIST): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain; charset=utf-8" });
    res.end("method not allowed\n");
    return;
  }
  if (pathname === UI_PREFIX) {
    res.writeHead(301, { Location: `${UI_PREFIX}/`, "Content-Length": 0 });
    res.end();
    return;
  }
  try {
    await ensureBuilt(dir);
  } catch (err) {
    send(res, 503, "text/plain; charset=utf-8", `the web view is not built: ${(err as Error).message}\n`, "no-store");
    return;
  }
  // Only a plain file name directly in dist/ is a file: no dots-and-slashes way out of it.
  const name = pathname.slice(UI_PREFIX.length + 1);
  const ext = path.extname(name);
  const asFile = /^[a-z0-9][a-z0-9._-]*$/i.test(name) && TYPES[ext] !== undefined && (await isFile(path.join(dir, name)));
  const file = asFile ? name : "index.html";
  const body = await readFile(path.join(dir, file));
  send(res, 200, TYPES[path.extname(file)]!, body, file === "index.html" ? "no-cache" : "max-age=300", req.method === "HEAD");
}
