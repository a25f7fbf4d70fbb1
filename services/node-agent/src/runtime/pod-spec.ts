// What every real runtime reads from a pod spec the same way, as the
// kubelet does: the downward API's fieldRefs, `$(VAR)` expansion, the
// environment, the pod's hostname, and where volume mounts come from.
import path from "node:path";
import type { Container, Pod, Volume } from "@choreo/kit/gen/choreo/core/v1/core";

/** What `valueFrom.fieldRef` can name that the pod object does not hold yet. */
export interface PodFacts {
  podIp: string;
  hostIp: string;
  /** The node, when spec.nodeName is not set on the object at hand. */
  nodeName?: string;
}

/** Kubernetes' `$(VAR)` expansion: defined names replaced, undefined ones kept as written, `$$` a literal `$`. */
export function expandVars(s: string, env: ReadonlyMap<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === "$$") return "$";
    return name !== undefined && env.has(name) ? env.get(name)! : m;
  });
}

/** The downward API's value of `fieldPath` ("" for what it does not know). */
export function fieldValue(pod: Pod, fieldPath: string, facts: PodFacts): string {
  const m = pod.metadata;
  switch (fieldPath) {
    case "metadata.name":
      return m?.name ?? "";
    case "metadata.namespace":
      return m?.namespace ?? "";
    case "metadata.uid":
      return m?.uid ?? "";
    case "spec.nodeName":
      return pod.spec?.nodeName || facts.nodeName || "";
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.podIP":
      return facts.podIp;
    case "status.hostIP":
      return facts.hostIp;
  }
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (label) return (label[1] === "labels" ? m?.labels : m?.annotations)?.[label[2]!] ?? "";
  return "";
}

/**
 * The container's environment in order: `base` (a runtime's defaults, such
 * as PATH), then the spec's entries, fieldRefs resolved and `$(VAR)`
 * expanded against the entries before them.
 */
export function containerEnv(pod: Pod, c: Container, facts: PodFacts, base: Iterable<[string, string]> = []): Map<string, string> {
  const env = new Map<string, string>(base);
  for (const e of c.env) {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    env.set(e.name, ref !== undefined ? fieldValue(pod, ref, facts) : expandVars(e.value, env));
  }
  return env;
}

/** The pod's hostname: spec.hostname or its name, cut to a DNS label. */
export function podHostname(pod: Pod): string {
  return (pod.spec?.hostname || pod.metadata?.name || "pod").slice(0, 63);
}

/** Where the pod's emptyDir volume `name` lives on the node. */
export function emptyDirPath(podDir: string, name: string): string {
  return path.join(podDir, "volumes", name);
}

/** Whether the agent writes the volume's files (config-sources/): configMap, secret, downwardAPI, projected; always mounted read-only. */
export function isConfigVolume(v: Volume): boolean {
  return Boolean(v.configMap || v.secret || v.downwardApi || v.projected);
}

/**
 * Where the agent writes config volume `name` of the pod whose dir is
 * `podDir` (`<stateDir>/pods/<uid>`): `<stateDir>/config-volumes/<uid>/<name>`,
 * outside the pod dir, which the runtimes make and remove themselves.
 */
export function configVolumePath(podDir: string, name: string): string {
  return path.join(path.dirname(path.dirname(podDir)), "config-volumes", path.basename(podDir), name);
}

/** One volume mount of a container: a node path onto a path in the container. */
export interface VolumeBind {
  source: string;
  /** Absolute path inside the container. */
  target: string;
  readOnly: boolean;
}

/**
 * The container's volume mounts: emptyDirs are directories in the pod's
 * state dir (shared by its containers), hostPaths the host's paths. A
 * subPath and the mount path are normalised under their roots, so no `..`
 * reaches out of the volume (the api refuses them too). A mount naming no
 * volume of the pod is an error (the api validates; this is a last guard).
 */
export function volumeBinds(pod: Pod, c: Container, podDir: string): VolumeBind[] {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  return c.volumeMounts.map((m) => {
    const v = volumes.get(m.name);
    const config = v !== undefined && isConfigVolume(v);
    if (!v || (!v.hostPath && !v.emptyDir && !config)) throw new Error(`container ${c.name} mounts unknown volume ${m.name}`);
    const base = v.hostPath ? v.hostPath.path : config ? configVolumePath(podDir, v.name) : emptyDirPath(podDir, v.name);
    const source = m.subPath ? path.join(base, path.normalize(`/${m.subPath}`)) : base;
    return { source, target: path.normalize(`/${m.mountPath}`), readOnly: m.readOnly || config };
  });
}
