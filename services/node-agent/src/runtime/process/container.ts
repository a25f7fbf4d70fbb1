import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import { bootEpochSeconds, procStartTime } from "./proc.js";
import { initScript, runFstab, shimScript, stdinPaths, writeExecSpec, type ContainerScriptSpec } from "./scripts.js";
import { runPaths } from "./state.js";

/** A run the shim was started for. */
export interface StartedRun {
  shimPid: number;
  shimStart: string;
  startedAt: string;
}

/** Writes the container's shim.sh, init.sh and exec.spec (once per container; restarts reuse them). */
export function writeScripts(spec: ContainerScriptSpec): void {
  fs.mkdirSync(path.join(spec.dir, "rootfs"), { recursive: true });
  writeExecSpec(spec);
  fs.writeFileSync(path.join(spec.dir, "shim.sh"), shimScript(spec));
  fs.writeFileSync(path.join(spec.dir, "init.sh"), initScript(spec));
}

/**
 * Starts run `n` of a container whose scripts are written and whose
 * cgroups exist: writes the run's fstab and prepares its overlay dirs
 * (mount points the image lacks are made in the upper dir, so the init
 * step spawns no mkdir), then spawns the shim detached, with an empty
 * environment (nothing of the agent's reaches the container).
 * One process spawn from the agent; the shim does the rest.
 */
export function startRun(spec: ContainerScriptSpec, n: number): StartedRun {
  const rp = runPaths(spec.dir, n);
  for (const f of [rp.exit, rp.code, rp.pid]) fs.rmSync(f, { force: true });
  if (spec.lowerdir) prepareUpper(spec.lowerdir, rp.upper, spec);
  fs.mkdirSync(rp.work, { recursive: true });
  fs.writeFileSync(rp.fstab, runFstab(spec, n));
  const child = spawn("/bin/sh", [path.join(spec.dir, "shim.sh"), String(n), bootEpochSeconds().toFixed(3)], {
    detached: true,
    stdio: "ignore",
    cwd: spec.dir,
    env: {},
  });
  child.on("error", () => {
    // the shim's failure shows as a run without an exit file (ContainerStatusUnknown)
  });
  child.unref();
  const pid = child.pid ?? 0;
  return { shimPid: pid, shimStart: procStartTime(pid) ?? "", startedAt: nowRfc3339() };
}

/** Makes, in the upper dir, every mount point the image's root lacks. */
function prepareUpper(lower: string, upper: string, spec: ContainerScriptSpec): void {
  fs.mkdirSync(upper, { recursive: true });
  const dirs = ["/proc", "/dev", ...spec.binds.filter((b) => !b.file).map((b) => b.target)];
  if (spec.workingDir) dirs.push(spec.workingDir);
  for (const d of dirs) if (!existsIn(lower, d)) fs.mkdirSync(path.join(upper, d), { recursive: true });
  if (!existsIn(lower, "/tmp")) {
    // An image without /tmp gets a world-writable one (chmod: mkdir's mode passes through the umask).
    fs.mkdirSync(path.join(upper, "tmp"), { recursive: true });
    fs.chmodSync(path.join(upper, "tmp"), 0o1777);
  }
  for (const b of spec.binds) {
    if (!b.file || existsIn(lower, b.target)) continue;
    fs.mkdirSync(path.join(upper, path.dirname(b.target)), { recursive: true });
    fs.writeFileSync(path.join(upper, b.target), "");
  }
  for (const f of spec.upperFiles) {
    fs.mkdirSync(path.join(upper, path.dirname(f.target)), { recursive: true });
    fs.copyFileSync(f.source, path.join(upper, f.target));
  }
}

/** Whether `p` exists in the root `root` (lstat: a symlink must not be followed out of it). */
function existsIn(root: string, p: string): boolean {
  try {
    fs.lstatSync(path.join(root, p));
    return true;
  } catch {
    return false;
  }
}

/** Removes an ended run's overlay dirs (its log stays: it is the `previous` log). */
export function removeRunDirs(dir: string, n: number): void {
  const rp = runPaths(dir, n);
  for (const f of [rp.upper, rp.work, rp.fstab, ...Object.values(stdinPaths(dir, n))]) fs.rmSync(f, { recursive: true, force: true });
}
