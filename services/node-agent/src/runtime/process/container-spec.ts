import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import { containerEnv as specEnv, expandVars, podHostname, type PodFacts, type VolumeBind } from "../pod-spec.js";
import type { CgroupLimits } from "./cgroups.js";

/** The PATH a container gets when its spec sets none (Docker's default). */
export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Host directories a container on the host's filesystem sees, read-only, when present. */
export const HOST_DIRS = ["/bin", "/sbin", "/lib", "/lib64", "/usr", "/etc", "/opt"] as const;

/** A bind mount into the container's root. */
export interface BindMount extends VolumeBind {
  /** The source is a file (the target must be a file too). */
  file?: boolean | undefined;
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

/** The container's environment, in order: PATH, HOSTNAME and HOME defaults, then the spec's (fieldRef resolved, `$(VAR)` expanded). */
export function containerEnv(pod: Pod, c: Container, facts: PodFacts): Map<string, string> {
  return specEnv(pod, c, facts, [
    ["PATH", DEFAULT_PATH],
    ["HOSTNAME", podHostname(pod)],
    ["HOME", "/root"],
  ]);
}

/** limits.memory and limits.cpu as cgroup values (requests are the scheduler's business). */
export function containerLimits(c: Container): CgroupLimits {
  const l = c.resources?.limits ?? {};
  return {
    memoryBytes: l["memory"] ? bytes(l["memory"]) : undefined,
    cpuMilli: l["cpu"] ? milliCpu(l["cpu"]) : undefined,
  };
}
