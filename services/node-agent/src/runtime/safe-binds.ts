// The volume mounts that are bound by descriptor before each container
// start (see safe-path.ts): subPaths, whose directory a container of the
// pod can replace between runs, and hostPaths, where any component may be
// a symlink. Both runtimes call this on every (re)start and bind from the
// agent-private target instead of the path text.
import path from "node:path";
import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import fs from "node:fs";
import { configVolumePath, emptyDirPath, isConfigVolume, volumeBinds, type VolumeBind } from "./pod-spec.js";
import { bindOpened, mountsBelow, openBeneath, UnsafePathError, unmountBelow } from "./safe-path.js";

/** A volume mount whose node path is walked safely before each start of its container. */
export interface WalkedMount {
  volume: string;
  /** Its index among the container's volumeMounts (two mounts of one volume differ). */
  index: number;
  /** The volume's own directory: the pod's emptyDir (trusted), or the hostPath (walked from `/`). */
  root: string;
  /** The subPath ("" for a whole hostPath). */
  sub: string;
  hostPath: boolean;
  readOnly: boolean;
  /** A config volume (configMap, secret…): the agent's atomic layout, whose own symlinks the subPath may follow (see {@link resolveInConfigVolume}). */
  config?: boolean;
}

/**
 * `<podDir>/.volume-subpaths`, like the kubelet's `volume-subpaths` but
 * with a dot: process-runtime containers have their dirs in the pod dir
 * by name, and no container (DNS label) can be named `.volume-subpaths`.
 * Only the agent writes here; containers see at most what is bound in.
 */
export function subpathsDir(podDir: string): string {
  return path.join(podDir, ".volume-subpaths");
}

/** Where mount `m` of `container` is bound: `<podDir>/.volume-subpaths/<volume>/<container>/<index>`. */
export function bindTarget(podDir: string, container: string, m: Pick<WalkedMount, "volume" | "index">): string {
  return path.join(subpathsDir(podDir), m.volume, container, String(m.index));
}

/** The container's mounts that need the walk: every subPath, every hostPath. */
export function walkedMounts(pod: Pod, c: Container, podDir: string): WalkedMount[] {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const out: WalkedMount[] = [];
  for (const [index, m] of c.volumeMounts.entries()) {
    const v = volumes.get(m.name);
    if (!v || (!m.subPath && !v.hostPath)) continue;
    const config = isConfigVolume(v);
    const root = v.hostPath ? v.hostPath.path : config ? configVolumePath(podDir, v.name) : emptyDirPath(podDir, v.name);
    out.push({ volume: v.name, index, root, sub: m.subPath, hostPath: Boolean(v.hostPath), readOnly: m.readOnly || config, ...(config ? { config } : {}) });
  }
  return out;
}

/** Unmounts the binds of `container` (every volume), or of the whole pod without one. */
export async function unmountBinds(podDir: string, container?: string): Promise<void> {
  const base = subpathsDir(podDir);
  if (container === undefined) return unmountBelow(base);
  // <base>/<volume>/<container>/<index>: the container is the second component.
  for (const dir of new Set(mountsBelow(base).map((m) => path.relative(base, m).split("/")))) {
    if (dir.length >= 2 && dir[1] === container) await unmountBelow(path.join(base, dir[0]!, dir[1]!));
  }
}

/**
 * Redoes the container's binds for a new run: its previous binds are
 * unmounted, then each mount is walked (no symlink, no `..`; a missing
 * subPath of an emptyDir is created) and its descriptor bound onto its
 * target. Returns whether each bound path is a directory, by index. A
 * refused path throws {@link UnsafePathError} naming the volume (the
 * kubelet's CreateContainerConfigError); nothing stays bound then.
 */
export async function bindWalked(podDir: string, container: string, mounts: readonly WalkedMount[]): Promise<Map<number, boolean>> {
  await unmountBinds(podDir, container);
  const isDir = new Map<number, boolean>();
  try {
    for (const m of mounts) {
      let opened;
      try {
        const sub = m.config ? resolveInConfigVolume(m.root, m.sub) : m.sub;
        opened = openBeneath(m.root, sub, { checkRoot: m.hostPath, create: !m.hostPath && !m.config });
      } catch (err) {
        if (!(err instanceof UnsafePathError)) throw err;
        const what = m.sub ? "subPath" : "hostPath";
        throw new UnsafePathError(`failed to prepare ${what} for volumeMount "${m.volume}" of container "${container}": ${err.message}`, { cause: err });
      }
      isDir.set(m.index, opened.isDir);
      await bindOpened(opened, bindTarget(podDir, container, m), m.readOnly);
    }
  } catch (err) {
    await unmountBinds(podDir, container);
    throw err;
  }
  return isDir;
}

/**
 * A subPath of a config volume as the path it names in the volume's current
 * data dir: `key` is the agent's symlink `key -> ..data/key`, `..data` a
 * symlink to `..<timestamp>`, so the kubelet evaluates symlinks first and
 * requires the result to stay inside the volume. Only the agent writes
 * there (containers mount it read-only), so the evaluation is not raced.
 * The bind then holds that version: Kubernetes does not update subPath
 * mounts of config volumes (a restarted container gets the current one).
 */
export function resolveInConfigVolume(root: string, sub: string): string {
  let real: string;
  let base: string;
  try {
    base = fs.realpathSync(root);
    real = fs.realpathSync(path.join(root, sub));
  } catch {
    throw new UnsafePathError(`${path.join(root, sub)}: does not exist`);
  }
  const rel = path.relative(base, real);
  if (rel === ".." || rel.startsWith("../") || path.isAbsolute(rel)) throw new UnsafePathError(`${path.join(root, sub)}: outside the volume`);
  return rel;
}

/**
 * The container's volume binds for a new run, walked ones bound afresh
 * (see {@link bindWalked}) and named by their targets; the rest (whole
 * emptyDirs: the agent's own directories) as {@link volumeBinds} has them.
 */
export async function prepareBinds(pod: Pod, c: Container, podDir: string): Promise<VolumeBind[]> {
  const binds = volumeBinds(pod, c, podDir);
  const walked = walkedMounts(pod, c, podDir);
  await bindWalked(podDir, c.name, walked);
  for (const m of walked) binds[m.index] = { ...binds[m.index]!, source: bindTarget(podDir, c.name, m) };
  return binds;
}
