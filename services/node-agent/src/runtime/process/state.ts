import fs from "node:fs";
import path from "node:path";
import type { ContainerStateTerminated } from "@choreo/kit/gen/choreo/core/v1/core";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { WalkedMount } from "../safe-binds.js";
import type { ContainerScriptSpec } from "./scripts.js";

/** A {@link ContainerScriptSpec} as JSON (env as pairs, in order). */
export type StoredSpec = Omit<ContainerScriptSpec, "env"> & { env: [string, string][] };

/** One container as pod.json records it (its current run is `restartCount`). */
export interface ContainerRecord {
  name: string;
  image: string;
  /** "image": the image's rootfs under an overlay; "host": the host's filesystem. */
  root: "image" | "host";
  restartCount: number;
  /** RFC 3339; when the current run was started. */
  startedAt: string;
  /** The current run's shim (pid and start time ticks, against pid reuse). */
  shimPid: number;
  shimStart: string;
  /** The run before (lastState). */
  last?: ContainerStateTerminated | undefined;
  /** What its scripts were generated from (restarts after an agent restart need it). */
  spec: StoredSpec;
  /** Its subPath and hostPath mounts, walked and bound again before every run (safe-binds.ts). */
  volumes?: WalkedMount[] | undefined;
  /** An init container (reported in initContainerStatuses). */
  init?: boolean | undefined;
  /** An ephemeral container (kubectl debug; reported in ephemeralContainerStatuses, never restarted). */
  ephemeral?: boolean | undefined;
  /** Not started yet (waiting PodInitializing until the agent's startContainer). */
  pending?: boolean | undefined;
  /** Its cgroup limits as decimal strings (bytes, millicores), for the cgroups of restarts. */
  limits: { memoryBytes?: string | undefined; cpuMilli?: string | undefined };
}

/** pod.json: the pod's identity, sandbox and containers; enough to adopt it after an agent restart. */
export interface PodRecord {
  uid: string;
  namespace: string;
  name: string;
  ip: string;
  hostNetwork: boolean;
  /** RFC 3339; when the sandbox came up. */
  startedAt: string;
  containers: ContainerRecord[];
}

/** How a run ended, from `<n>.exit` (written by the shim; its mtime is finishedAt). */
export interface RunExit {
  exitCode: number;
  reason: string;
  finishedAt: string;
}

/** The files of one pod under `<stateDir>/pods/<uid>`. */
export const podPaths = (stateDir: string, uid: string) => {
  const dir = path.join(stateDir, "pods", uid);
  return {
    dir,
    record: path.join(dir, "pod.json"),
    ipc: path.join(dir, "ipc"),
    uts: path.join(dir, "uts"),
    resolvConf: path.join(dir, "resolv.conf"),
    hosts: path.join(dir, "hosts"),
    container: (name: string) => path.join(dir, name),
  };
};

/** Files of run `n` of a container in `dir`. */
export const runPaths = (dir: string, n: number) => ({
  log: path.join(dir, `${n}.log`),
  pid: path.join(dir, `${n}.pid`),
  exit: path.join(dir, `${n}.exit`),
  code: path.join(dir, `${n}.code`),
  upper: path.join(dir, `${n}.upper`),
  work: path.join(dir, `${n}.work`),
  fstab: path.join(dir, `${n}.fstab`),
});

/** Writes pod.json atomically (write + rename), so a crash never leaves half a record. */
export function writePodRecord(stateDir: string, rec: PodRecord): void {
  const file = podPaths(stateDir, rec.uid).record;
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(rec));
  fs.renameSync(`${file}.tmp`, file);
}

/** Every pod record under `<stateDir>/pods`; pod dirs without a readable record are returned as orphans. */
export function readPodRecords(stateDir: string): { records: PodRecord[]; orphans: string[] } {
  const records: PodRecord[] = [];
  const orphans: string[] = [];
  let uids: string[];
  try {
    uids = fs.readdirSync(path.join(stateDir, "pods"));
  } catch {
    return { records, orphans };
  }
  for (const uid of uids) {
    try {
      records.push(JSON.parse(fs.readFileSync(podPaths(stateDir, uid).record, "utf8")) as PodRecord);
    } catch {
      orphans.push(uid);
    }
  }
  return { records, orphans };
}

/** The recorded end of run `n`, or undefined while it runs (or while the shim is mid-write). */
export function readRunExit(dir: string, n: number): RunExit | undefined {
  const file = runPaths(dir, n).exit;
  try {
    const [code, reason] = fs.readFileSync(file, "utf8").trim().split(" ");
    if (code === undefined || reason === undefined || !/^\d+$/.test(code)) return undefined;
    return { exitCode: Number(code), reason, finishedAt: nowRfc3339(fs.statSync(file).mtimeMs) };
  } catch {
    return undefined;
  }
}

/** The host pid and start time of run `n`'s PID 1, once its init step recorded them. */
export function readRunPid(dir: string, n: number): { pid: number; start: string } | undefined {
  try {
    const [pid, start] = fs.readFileSync(runPaths(dir, n).pid, "utf8").trim().split(" ");
    if (!pid || !start) return undefined;
    return { pid: Number(pid), start };
  } catch {
    return undefined;
  }
}
