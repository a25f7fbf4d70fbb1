import path from "node:path";
import type Dockerode from "dockerode";
import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";

/** What a pod's app container is created with besides its spec. */
export interface AppContainerContext {
  pod: Pod;
  container: Container;
  /** The sandbox whose network and IPC namespaces it joins. */
  sandboxId: string;
  podIp: string;
  hostIp: string;
  /** `<stateDir>/pods/<uid>`: resolv.conf, hosts and the emptyDir volumes. */
  podDir: string;
  labels: Record<string, string>;
  name: string;
}

/**
 * The docker create options of a pod's app container, mapped as the
 * kubelet does: command → Entrypoint, args → Cmd (the image's own when
 * unset), env with downward-API fieldRefs and `$(VAR)` expansion, limits →
 * NanoCpus/Memory, requests.cpu → CpuShares, volumes as binds.
 */
export function appContainerOptions(x: AppContainerContext): Dockerode.ContainerCreateOptions {
  const c = x.container;
  const env = envOf(x.pod, c, x.podIp, x.hostIp);
  const expand = (s: string): string => expandVars(s, env);
  return {
    name: x.name,
    Image: c.image,
    Entrypoint: c.command.length > 0 ? c.command.map(expand) : undefined,
    Cmd: c.args.length > 0 ? c.args.map(expand) : undefined,
    Env: [...env].map(([k, v]) => `${k}=${v}`),
    WorkingDir: c.workingDir || undefined,
    Labels: x.labels,
    Tty: c.tty,
    OpenStdin: c.stdin,
    HostConfig: {
      NetworkMode: `container:${x.sandboxId}`,
      IpcMode: `container:${x.sandboxId}`,
      // docker's init as PID 1 forwards SIGTERM and reaps: a shell or httpd
      // as PID 1 ignores SIGTERM (no handler), which would turn every
      // graceful stop into a SIGKILL after the whole grace period.
      Init: true,
      Binds: bindsOf(x.pod, c, x.podDir),
      ...resourcesOf(c),
    },
  };
}

/** The container's environment in order, fieldRefs resolved and `$(VAR)` expanded against earlier entries. */
export function envOf(pod: Pod, c: Container, podIp: string, hostIp: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const e of c.env) {
    const ref = e.valueFrom?.fieldRef?.fieldPath;
    env.set(e.name, ref ? fieldValue(pod, ref, podIp, hostIp) : expandVars(e.value, env));
  }
  return env;
}

/** The downward API's value of `fieldPath` ("" for what it does not know). */
export function fieldValue(pod: Pod, fieldPath: string, podIp: string, hostIp: string): string {
  const m = pod.metadata;
  const label = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (label) return (label[1] === "labels" ? m?.labels : m?.annotations)?.[label[2]!] ?? "";
  switch (fieldPath) {
    case "metadata.name": return m?.name ?? "";
    case "metadata.namespace": return m?.namespace ?? "";
    case "metadata.uid": return m?.uid ?? "";
    case "spec.nodeName": return pod.spec?.nodeName ?? "";
    case "spec.serviceAccountName": return pod.spec?.serviceAccountName ?? "";
    case "status.podIP": return podIp;
    case "status.hostIP": return hostIp;
    default: return "";
  }
}

/** Kubernetes' `$(VAR)` expansion: known names replaced, unknown left as written, `$$` escapes. */
export function expandVars(s: string, env: Map<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name: string | undefined) => {
    if (name === undefined) return "$";
    return env.get(name) ?? all;
  });
}

/** Engine-enforced CPU and memory: limits cap, requests.cpu weighs (swap off so a memory limit means OOM). */
export function resourcesOf(c: Container): { NanoCpus?: number; Memory?: number; MemorySwap?: number; CpuShares?: number } {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  const out: { NanoCpus?: number; Memory?: number; MemorySwap?: number; CpuShares?: number } = {};
  if (limits["cpu"]) out.NanoCpus = Number(milliCpu(limits["cpu"])) * 1_000_000;
  if (limits["memory"]) out.Memory = out.MemorySwap = Number(bytes(limits["memory"]));
  // Kubernetes defaults a missing request to the limit; 2 shares is the kernel's minimum.
  const cpuRequest = requests["cpu"] || limits["cpu"];
  if (cpuRequest) out.CpuShares = Math.max(2, Math.floor((Number(milliCpu(cpuRequest)) * 1024) / 1000));
  return out;
}

/** Where emptyDir `name` lives on the node. */
export function emptyDirPath(podDir: string, name: string): string {
  return path.join(podDir, "volumes", name);
}

/** `src:dst[:ro]` binds: the pod's resolv.conf and hosts, then each volume mount (subPath honoured). */
export function bindsOf(pod: Pod, c: Container, podDir: string): string[] {
  const binds = [`${path.join(podDir, "resolv.conf")}:/etc/resolv.conf`, `${path.join(podDir, "hosts")}:/etc/hosts`];
  for (const m of c.volumeMounts) {
    const src = volumeSource(pod, m.name, podDir);
    if (src === undefined) throw new Error(`volume mount ${m.name} of container ${c.name} names no volume of the pod`);
    binds.push(`${m.subPath ? path.join(src, m.subPath) : src}:${m.mountPath}${m.readOnly ? ":ro" : ""}`);
  }
  return binds;
}

/** The node path behind volume `name`; undefined when the pod has no such (supported) volume. */
export function volumeSource(pod: Pod, name: string, podDir: string): string | undefined {
  const v = pod.spec?.volumes.find((x) => x.name === name);
  if (v?.emptyDir) return emptyDirPath(podDir, name);
  if (v?.hostPath) return v.hostPath.path;
  return undefined;
}
