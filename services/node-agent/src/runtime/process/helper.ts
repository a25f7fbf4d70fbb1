import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const NATIVE = fileURLToPath(new URL("../../../native/", import.meta.url));

/** The C source of choreo-exec (committed; the binary is built on the machine, never committed). */
export const HELPER_SOURCE = path.join(NATIVE, "choreo-exec.c");

/**
 * choreo-exec: a container's last step and every exec's (minimal /dev,
 * masked /proc, pivot_root, Docker's default capabilities, no_new_privs,
 * seccomp; argv and env read from a spec file), and the pod's `hostname`.
 */
export const HELPER = path.join(NATIVE, "build", "choreo-exec");

/** The flags it is built with: static, so nothing of the host's loader or its env applies to it. */
const CFLAGS = ["-O2", "-Wall", "-Wextra", "-static"];

/**
 * Makes sure choreo-exec is built and not older than its source: built with
 * gcc when not (node-setup prepare does it at set-up; the runtime's init
 * checks again). Built aside and renamed, so concurrent agents never run a
 * half-written binary. Throws with what to do when gcc is missing.
 */
export function ensureHelper(): string {
  const built = mtime(HELPER);
  if (built !== undefined && built >= (mtime(HELPER_SOURCE) ?? 0)) return HELPER;
  fs.mkdirSync(path.dirname(HELPER), { recursive: true });
  const tmp = `${HELPER}.${process.pid}.tmp`;
  try {
    execFileSync("gcc", [...CFLAGS, "-o", tmp, HELPER_SOURCE], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    const why = (err as NodeJS.ErrnoException).code === "ENOENT" ? "gcc is not installed" : String((err as { stderr?: Buffer }).stderr ?? err);
    throw new Error(`process runtime: cannot build ${HELPER} from ${HELPER_SOURCE} (${why}); run scripts/ensure-deps.sh (it installs gcc and libc6-dev)`);
  }
  fs.renameSync(tmp, HELPER);
  return HELPER;
}

function mtime(p: string): number | undefined {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return undefined;
  }
}
