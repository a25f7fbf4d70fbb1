import fs from "node:fs";
import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { imageRootfs } from "../../images/types.js";
import type { Cgroups } from "./cgroups.js";
import { volumeBinds, type PodFacts, type VolumeBind } from "../pod-spec.js";
import { containerArgv, containerEnv, HOST_DIRS, type BindMount } from "./container-spec.js";
import { netnsPath } from "./sandbox.js";
import type { ContainerScriptSpec } from "./scripts.js";
import { processSecurity } from "./security.js";
import { podPaths, type StoredSpec } from "./state.js";

/** What building a container's scripts needs to know about the node. */
export interface BuildEnv {
  node: string;
  stateDir: string;
  imagesDir: string;
  cgroups: Cgroups;
}

/**
 * The script spec of one container of a pod: the image's rootfs when the
 * image store has it, else the host's filesystem (read-only system dirs);
 * the pod's namespaces, cgroups, volumes, resolv.conf and hosts; the
 * command line and environment as Kubernetes maps them. `volumes`: the
 * binds with subPaths and hostPaths already bound safely (safe-binds.ts),
 * default the spec's paths as text.
 */
export function buildContainerSpec(b: BuildEnv, pod: Pod, c: Container, facts: PodFacts, volumes?: VolumeBind[]): ContainerScriptSpec {
  const uid = pod.metadata?.uid ?? "";
  const p = podPaths(b.stateDir, uid);
  const rootfs = imageRootfs(b.imagesDir, c.image);
  const useImage = fs.existsSync(rootfs);
  const binds: BindMount[] = (volumes ?? volumeBinds(pod, c, p.dir)).map((m) => ({ ...m, file: isFile(m.source) }));
  // An image's root gets the pod's resolv.conf and hosts as files in its overlay's upper dir (two mounts fewer per
  // start); on the host's filesystem /etc is the host's, read-only: its files are covered by binds if they are plain files.
  const etc = [
    { source: p.resolvConf, target: "/etc/resolv.conf" },
    { source: p.hosts, target: "/etc/hosts" },
  ];
  if (!useImage) for (const f of etc) if (isPlainFile(f.target)) binds.push({ ...f, readOnly: false, file: true });
  const env = containerEnv(pod, c, facts);
  const dirs = b.cgroups.containerDirs(b.node, uid, c.name);
  return {
    title: `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""} (${uid}) container ${c.name}`,
    dir: p.container(c.name),
    netns: pod.spec?.hostNetwork ? undefined : netnsPath(uid),
    ipcFile: p.ipc,
    utsFile: p.uts,
    cgroupDirs: dirs,
    oomFile: b.cgroups.oomFile(dirs),
    lowerdir: useImage ? rootfs : undefined,
    hostDirs: useImage ? [] : HOST_DIRS.filter((d) => fs.existsSync(d)),
    binds,
    upperFiles: useImage ? etc : [],
    env,
    argv: containerArgv(c, env),
    workingDir: c.workingDir || "/",
    stdin: c.stdin,
    stdinOnce: c.stdinOnce,
    tty: c.tty,
    security: processSecurity(pod, c),
  };
}

/** The spec as pod.json stores it. */
export function storeSpec(s: ContainerScriptSpec): StoredSpec {
  return { ...s, env: [...s.env] };
}

/** The spec back from pod.json. */
export function loadSpec(s: StoredSpec): ContainerScriptSpec {
  return { ...s, env: new Map(s.env) };
}

function isFile(p: string): boolean {
  try {
    return !fs.statSync(p).isDirectory();
  } catch {
    return false; // missing hostPath: a directory mount point (and the bind fails, as it should)
  }
}

function isPlainFile(p: string): boolean {
  try {
    return fs.lstatSync(p).isFile();
  } catch {
    return false;
  }
}
