import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { forbidden } from "@choreo/kit";
import path from "node:path";

/**
 * Which host directories pods may mount as hostPath volumes: none unless
 * the api is started with `CHOREO_ALLOWED_HOST_PATHS` (comma-separated
 * absolute prefixes, e.g. `/var/log,/srv/data`). A hostPath volume is a
 * hole in the pod's isolation (Kubernetes' PodSecurity "baseline" refuses
 * them all), so the default is closed.
 */
export function allowedHostPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env["CHOREO_ALLOWED_HOST_PATHS"] ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p.startsWith("/"))
    .map((p) => path.posix.normalize(p).replace(/\/+$/, "") || "/");
}

/** Whether `p` is one of `prefixes` or below one (after normalising `..`). */
export function hostPathAllowed(p: string, prefixes: readonly string[]): boolean {
  const n = path.posix.normalize(p);
  return prefixes.some((pre) => pre === "/" || n === pre || n.startsWith(`${pre}/`));
}

/** Refuses (403 Forbidden) a pod mounting a host path outside the allowed prefixes. */
export function checkHostPaths(pod: Pod, prefixes: readonly string[] = allowedHostPaths()): void {
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.hostPath) continue;
    if (hostPathAllowed(v.hostPath.path, prefixes)) continue;
    const allowed = prefixes.length ? prefixes.join(", ") : "none";
    throw forbidden(
      `pods "${pod.metadata?.name ?? ""}" is forbidden: hostPath volume "${v.name}" (${v.hostPath.path}) is not allowed by the api's policy (allowed host paths: ${allowed}; set CHOREO_ALLOWED_HOST_PATHS)`,
    );
  }
}
