import path from "node:path";
import type Dockerode from "dockerode";
import { bytes, milliCpu } from "@choreo/kit/apimachinery";
import type { Container, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { containerEnv, expandVars, volumeBinds, type VolumeBind } from "../pod-spec.js";
import { effectiveSecurity, imageUser } from "../security-context.js";

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
  /** The volume binds, subPaths and hostPaths already bound safely (safe-binds.ts); default: the spec's paths as text. */
  volumes?: VolumeBind[];
  /** The image's `Config.User` (runAsGroup without runAsUser keeps the image's user); default root. */
  imageUser?: string;
  /** A Localhost seccomp profile's JSON, read by the launcher from the agent's profiles dir. */
  seccompProfile?: string;
}

/**
 * The docker create options of a pod's app container, mapped as the
 * kubelet does: command → Entrypoint, args → Cmd (the image's own when
 * unset), env with downward-API fieldRefs and `$(VAR)` expansion, limits →
 * NanoCpus/Memory, requests.cpu → CpuShares, volumes as binds.
 */
export function appContainerOptions(x: AppContainerContext): Dockerode.ContainerCreateOptions {
  const c = x.container;
  const env = containerEnv(x.pod, c, { podIp: x.podIp, hostIp: x.hostIp });
  const expand = (s: string): string => expandVars(s, env);
  const { User, ...security } = securityOf(x);
  return {
    name: x.name,
    Image: c.image,
    Entrypoint: c.command.length > 0 ? c.command.map(expand) : undefined,
    Cmd: c.args.length > 0 ? c.args.map(expand) : undefined,
    Env: [...env].map(([k, v]) => `${k}=${v}`),
    WorkingDir: c.workingDir || undefined,
    Labels: x.labels,
    User,
    Tty: c.tty,
    OpenStdin: c.stdin,
    HostConfig: {
      NetworkMode: `container:${x.sandboxId}`,
      IpcMode: `container:${x.sandboxId}`,
      // docker's init as PID 1 forwards SIGTERM and reaps: a shell or httpd
      // as PID 1 ignores SIGTERM (no handler), which would turn every
      // graceful stop into a SIGKILL after the whole grace period.
      Init: true,
      // No raw sockets (Kubernetes' default since 1.22, CVE-2020-8558): the
      // sandbox's ping_group_range keeps ping working over ICMP datagram sockets.
      Binds: bindsOf(x.pod, c, x.podDir, x.volumes),
      ...resourcesOf(c),
      ...security,
    },
  };
}

type SecurityOptions = Pick<Dockerode.HostConfig, "CapAdd" | "CapDrop" | "Privileged" | "ReadonlyRootfs" | "GroupAdd" | "SecurityOpt"> & { User?: string };

/**
 * The container's securityContext as docker options (security-context.ts
 * merges pod and container): runAsUser/runAsGroup → User, supplementalGroups
 * and fsGroup → GroupAdd, capabilities → CapAdd/CapDrop over docker's
 * defaults less NET_RAW, privileged, readOnlyRootFilesystem,
 * allowPrivilegeEscalation: false → no-new-privileges, seccompProfile
 * Unconfined → unconfined, Localhost → the profile's JSON; RuntimeDefault
 * (and none) is docker's default profile.
 */
export function securityOf(x: Pick<AppContainerContext, "pod" | "container" | "imageUser" | "seccompProfile">): SecurityOptions & { CapDrop: string[] } {
  const sec = effectiveSecurity(x.pod, x.container);
  const out: SecurityOptions & { CapDrop: string[] } = { CapDrop: [] };
  if (sec.runAsUser !== undefined || sec.runAsGroup !== undefined) {
    const image = imageUser(x.imageUser ?? "");
    const user = sec.runAsUser ?? ("uid" in image ? image.uid : image.name);
    out.User = sec.runAsGroup !== undefined ? `${user}:${sec.runAsGroup}` : String(user);
  }
  if (sec.supplementalGroups.length > 0) out.GroupAdd = sec.supplementalGroups.map(String);
  if (sec.privileged) out.Privileged = true;
  if (sec.readOnlyRootFilesystem) out.ReadonlyRootfs = true;
  // No raw sockets (Kubernetes' default since 1.22, CVE-2020-8558): the
  // sandbox's ping_group_range keeps ping working over ICMP datagram sockets.
  // Unless the container adds NET_RAW (or ALL) itself.
  const drop = new Set(sec.capDrop);
  if (!sec.capAdd.includes("NET_RAW") && !sec.capAdd.includes("ALL")) drop.add("NET_RAW");
  out.CapDrop = [...drop];
  if (sec.capAdd.length > 0) out.CapAdd = sec.capAdd;
  const opts: string[] = [];
  if (!sec.allowPrivilegeEscalation) opts.push("no-new-privileges");
  if (sec.seccomp.type === "Unconfined") opts.push("seccomp=unconfined");
  if (sec.seccomp.type === "Localhost" && x.seccompProfile !== undefined) opts.push(`seccomp=${x.seccompProfile}`);
  if (opts.length > 0) out.SecurityOpt = opts;
  return out;
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

/** `src:dst[:ro]` binds: the pod's resolv.conf and hosts, then each volume mount (subPath honoured). */
export function bindsOf(pod: Pod, c: Container, podDir: string, volumes: VolumeBind[] = volumeBinds(pod, c, podDir)): string[] {
  const binds = [`${path.join(podDir, "resolv.conf")}:/etc/resolv.conf`, `${path.join(podDir, "hosts")}:/etc/hosts`];
  for (const b of volumes) binds.push(`${b.source}:${b.target}${b.readOnly ? ":ro" : ""}`);
  return binds;
}
