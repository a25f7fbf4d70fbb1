// Volume paths opened without following symlinks, and bound by descriptor
// (the kubelet's defence against CVE-2017-1002101). A container that can
// write a volume can put a symlink where a subPath (or a hostPath below an
// allowed prefix) names a directory; a bind mount of the path text would
// then follow it to anywhere on the host, the next time the path is bound.
// Here every component is opened relative to the directory before it,
// refusing symlinks, and the mount is made from the descriptor of what was
// opened: swapping a component after the walk changes nothing.
//
// Node has no openat(2); opening `/proc/self/fd/<dirfd>/<name>` is the same
// lookup (the magic link is the held directory itself, and O_NOFOLLOW
// applies to `<name>`, the last component).
import fs from "node:fs";
import path from "node:path";
import { run } from "../exec.js";

/**
 * Linux's O_PATH (x86_64 and arm64 value): a descriptor naming a file
 * without opening it for reading, so a FIFO or device is never opened and a
 * file of any mode can be bound. Node's fs.constants does not export it.
 */
export const O_PATH = 0o10000000;

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;

/** A path refused by the walk: a symlink, `..`, a missing or wrong-typed component. */
export class UnsafePathError extends Error {
  override readonly name = "UnsafePathError";
}

/** Whether `err` is an {@link UnsafePathError}. */
export function isUnsafePath(err: unknown): err is UnsafePathError {
  return err instanceof UnsafePathError;
}

/** How {@link openBeneath} walks. */
export interface WalkOptions {
  /** Walk `root`'s own components from `/` too, refusing a symlink anywhere (hostPath); else `root` is trusted (the agent's own dir). */
  checkRoot: boolean;
  /** Create missing components of `sub` as directories (the kubelet does for subPaths of emptyDirs). */
  create: boolean;
}

/** An opened path: an O_PATH descriptor of it (the caller closes it) and whether it is a directory. */
export interface OpenedPath {
  fd: number;
  isDir: boolean;
}

/** The components of a relative path; `..` refused, empty and `.` skipped. */
function components(p: string, whole: string): string[] {
  const parts = p.split("/").filter((s) => s !== "" && s !== ".");
  if (parts.includes("..")) throw new UnsafePathError(`${whole}: ".." is not allowed`);
  return parts;
}

/** The errno code of a failed fs call. */
function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/**
 * Opens `root/sub` one component at a time without following a symlink:
 * each directory is opened relative to the descriptor of the one before
 * (O_NOFOLLOW | O_DIRECTORY), the last component with O_PATH | O_NOFOLLOW
 * and checked with fstat. With `create`, a missing component of `sub` is
 * made (mkdir relative to the held directory, mode of its parent) and then
 * opened the same way, so nothing swapped in meanwhile is followed either.
 * Throws {@link UnsafePathError} for `..`, a symlink, a non-directory in the
 * middle, or a missing component that is not created.
 */
export function openBeneath(root: string, sub: string, o: WalkOptions): OpenedPath {
  const whole = path.join(root, sub);
  const rel = components(sub, whole);
  const names = o.checkRoot ? [...components(root, whole), ...rel] : rel;
  let fd = fs.openSync(o.checkRoot ? "/" : root, O_RDONLY | O_DIRECTORY);
  try {
    for (const [i, name] of names.entries()) {
      const last = i === names.length - 1;
      const creatable = o.create && i >= names.length - rel.length;
      const next = openComponent(fd, name, last, creatable, whole);
      fs.closeSync(fd);
      fd = next;
    }
    const st = fs.fstatSync(fd);
    // With O_PATH | O_NOFOLLOW a symlink itself is opened, not refused: fstat tells.
    if (st.isSymbolicLink()) throw new UnsafePathError(`${whole}: ${names.at(-1) ?? ""} is a symbolic link, which is not allowed`);
    const opened = { fd, isDir: st.isDirectory() };
    fd = -1;
    return opened;
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

/** Opens `name` in the directory `dirFd` (see {@link openBeneath}). */
function openComponent(dirFd: number, name: string, last: boolean, create: boolean, whole: string): number {
  const at = `/proc/self/fd/${dirFd}/${name}`;
  const flags = last ? O_PATH | O_NOFOLLOW : O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
  try {
    return fs.openSync(at, flags);
  } catch (err) {
    if (code(err) === "ENOENT" && create) {
      try {
        fs.mkdirSync(at, fs.fstatSync(dirFd).mode & 0o7777);
      } catch (e) {
        if (code(e) !== "EEXIST") throw e; // made meanwhile: opened (and checked) below like any other
      }
      return openComponent(dirFd, name, last, false, whole);
    }
    // O_NOFOLLOW on a symlink: ELOOP; with O_DIRECTORY too (or on a file): ENOTDIR. Which one is only for the message.
    if (code(err) === "ELOOP" || code(err) === "ENOTDIR") {
      const what = isSymlinkAt(at) ? "is a symbolic link, which is not allowed" : "is not a directory";
      throw new UnsafePathError(`${whole}: ${name} ${what}`);
    }
    if (code(err) === "ENOENT") throw new UnsafePathError(`${whole}: ${name} does not exist`);
    throw err;
  }
}

/** Whether `at` names a symlink (opened itself with O_PATH | O_NOFOLLOW, never followed). */
function isSymlinkAt(at: string): boolean {
  try {
    const fd = fs.openSync(at, O_PATH | O_NOFOLLOW);
    try {
      return fs.fstatSync(fd).isSymbolicLink();
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * Bind-mounts what `opened` names onto `target` (made as an empty file or
 * directory to match), read-only when asked, then closes the descriptor.
 * The source is the agent's own `/proc/<pid>/fd/<n>`: the kernel binds the
 * very file the descriptor holds. `--no-canonicalize`: util-linux would
 * otherwise resolve the source path to text first, which is the race all
 * this avoids.
 */
export async function bindOpened(opened: OpenedPath, target: string, readOnly: boolean): Promise<void> {
  try {
    fs.mkdirSync(opened.isDir ? target : path.dirname(target), { recursive: true, mode: 0o700 });
    if (!opened.isDir) fs.closeSync(fs.openSync(target, "a", 0o600));
    await run("mount", ["--no-canonicalize", "--bind", `/proc/${process.pid}/fd/${opened.fd}`, target]);
    if (readOnly) await run("mount", ["--no-canonicalize", "-o", "remount,bind,ro", target]);
  } finally {
    fs.closeSync(opened.fd);
  }
}

/** Mount points at or below `dir`, deepest first (stacked ones once per mount). */
export function mountsBelow(dir: string): string[] {
  const text = fs.readFileSync("/proc/self/mountinfo", "utf8");
  const points = text
    .split("\n")
    .map((l) => l.split(" ", 5)[4] ?? "")
    .map(unescapeMount);
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
}

/** mountinfo's octal escapes (`\040` for a space) back to characters. */
function unescapeMount(p: string): string {
  return p.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Unmounts everything at or below `dir` (lazily: a busy mount must not keep a stale bind in place). */
export async function unmountBelow(dir: string): Promise<void> {
  for (const m of mountsBelow(dir)) await run("umount", ["-l", "--no-canonicalize", m]);
}
