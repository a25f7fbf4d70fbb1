import path from "node:path";
import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { CgroupLimits } from "./cgroups.js";

/** The PATH a container gets when its spec sets none (Docker's default). */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Host directories a container on the host's filesystem sees, read-only, when present. */
export const HOST_DIRS = ["/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/opt"] as const;

/** A bind mount into the container's root. */
export interface BindMount {
  source: string;
  /** Absolute path inside the container. */
  target: string;
  readOnly: boolean;
  /** The source is a file (the target must be a file too). */
  file?: boolean | undefined;
}

/** Where a pod's values for `valueFrom.fieldRef` come from. */
export interface PodFacts {
  podIp: string;
  hostIp: string;
  nodeName: string;
}

/**
 * The container's argv as Kubernetes maps command and args onto an image
 * whose metadata we do not have: our images have no ENTRYPOINT and CMD
 * `/bin/sh`, so `command` (+ `args`) wins, else `args`, else `/bin/sh`.
 * `$(VAR)` references expand from the container's env; `$$(` escapes.
 */
export function containerArgv(c: Container, env: ReadonlyMap<string, string>): string[] {
  const argv = c.command.length > 0 ? [...c.command, ...c.args] : c.args.length > 0 ? [...c.args] : ["/bin/sh"];
  return argv.map((a) => expandVars(a, env));
}

/** Kubernetes' `$(VAR)` expansion: defined names are replaced, undefined ones kept, `$$` is a literal `$`. */
export function expandVars(s: string, env: ReadonlyMap<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === "$$") return "$";
    return name !== undefined && env.has(name) ? env.get(name)! : m;
  });
}

/** The container's environment, in order: PATH and HOSTNAME defaults, then the spec's (fieldRef resolved, `$(VAR)` expanded). */
export function containerEnv(pod: Pod, c: Container, facts: PodFacts): Map<string, string> {
  const env = new Map<string, string>([
    ["PATH", DEFAULT_PATH],
    ["HOSTNAME", podHostname(pod)],
    ["HOME", "/root"],
  ]);
  for (const e of c.env) {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    env.set(e.name, ref !== undefined ? fieldValue(pod, ref, facts) : expandVars(e.value, env));
  }
  return env;
}

function fieldValue(pod: Pod, fieldPath: string, facts: PodFacts): string {
  const m = pod.metadata;
  switch (fieldPath) {
    case "metadata.name": return m?.name ?? "";
    case "metadata.namespace": return m?.namespace ?? "";
    case "metadata.uid": return m?.uid ?? "";
    case "spec.nodeName": return pod.spec?.nodeName || facts.nodeName;
    case "spec.serviceAccountName": return pod.spec?.serviceAccountName ?? "";
    case "status.podIP": return facts.podIp;
    case "status.hostIP": return facts.hostIp;
  }
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (label) return (label[1] === "labels" ? m?.labels : m?.annotations)?.[label[2]!] ?? "";
  return "";
}

/** The pod's hostname: spec.hostname or its name, cut to a DNS label. */
export function podHostname(pod: Pod): string {
  return (pod.spec?.hostname || pod.metadata?.name || "pod").slice(0, 63);
}

/** limits.memory and limits.cpu as cgroup values (requests are the scheduler's business). */
export function containerLimits(c: Container): CgroupLimits {
  const l = c.resources?.limits ?? {};
  return {
    memoryBytes: l["memory"] ? bytes(l["memory"]) : undefined,
    cpuMilli: l["cpu"] ? milliCpu(l["cpu"]) : undefined,
  };
}

/**
 * The container's volume binds: emptyDirs are directories in the pod's
 * state dir (shared by its containers), hostPaths the host's paths.
 * Mounts naming an unknown volume are an error (the api validates; this is a last guard).
 */
export function volumeBinds(pod: Pod, c: Container, podDir: string): BindMount[] {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  return c.volumeMounts.map((m) => {
    const v = volumes.get(m.name);
    if (!v) throw new Error(`container ${c.name} mounts unknown volume ${m.name}`);
    const base = v.hostPath ? v.hostPath.path : emptyDirPath(podDir, v.name);
    const source = m.subPath ? path.join(base, path.normalize(`/${m.subPath}`)) : base;
    return { source, target: path.normalize(`/${m.mountPath}`), readOnly: m.readOnly };
  });
}

/** Where the pod's emptyDir volume `name` lives. */
export function emptyDirPath(podDir: string, name: string): string {
  return path.join(podDir, "volumes", name);
}
