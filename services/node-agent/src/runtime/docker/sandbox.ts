import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type Dockerode from "dockerode";
import { bytes } from "@choreo/kit/apimachinery";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { etcHosts, resolvConf } from "../../dns/resolv-conf.js";
import { run } from "../../exec.js";
import { LOCAL_IMAGES } from "../../images/types.js";
import type { PodNetwork } from "../../net/types.js";
import type { RuntimePod } from "../runtime.js";
import { emptyDirPath, podHostname } from "../pod-spec.js";
import { ownVolumeDir } from "../security-context.js";
import { createOrTakeOver, startQuietly } from "./engine.js";
import { podLabels, SANDBOX, sandboxName } from "./names.js";
import { dockerTime } from "./status.js";

/** `<stateDir>/pods/<uid>`: the pod's resolv.conf, hosts and emptyDir volumes. */
export function podDirOf(stateDir: string, uid: string): string {
  return path.join(stateDir, "pods", uid);
}

/**
 * Creates the pod's directory before its sandbox: resolv.conf (ClusterFirst:
 * the node's DNS; `Default`, and host-network pods, get the node's own),
 * a placeholder hosts file (rewritten once the IP is known), the emptyDir
 * volumes (medium Memory: a tmpfs mounted on the directory, sized by
 * sizeLimit) and the DirectoryOrCreate/FileOrCreate hostPaths.
 */
export async function preparePodDir(pod: Pod, podDir: string, dns: { nameserver: string; clusterDomain?: string }): Promise<void> {
  await mkdir(path.join(podDir, "volumes"), { recursive: true });
  const spec = pod.spec;
  const policy = spec?.dnsPolicy ?? "ClusterFirst";
  const hostDns = policy === "Default" || (spec?.hostNetwork && policy !== "ClusterFirstWithHostNet");
  const resolv = hostDns
    ? await readFile("/etc/resolv.conf", "utf8").catch(() => "")
    : resolvConf({ namespace: pod.metadata?.namespace ?? "default", nameserver: dns.nameserver, clusterDomain: dns.clusterDomain });
  await writeFile(path.join(podDir, "resolv.conf"), resolv);
  await writeHosts(podDir, "", podHostname(pod));
  const mounted = await mountsUnder(podDir);
  for (const v of spec?.volumes ?? []) {
    if (v.emptyDir) {
      const dir = emptyDirPath(podDir, v.name);
      await mkdir(dir, { recursive: true });
      if (v.emptyDir.medium === "Memory" && !mounted.includes(dir)) {
        const size = v.emptyDir.sizeLimit ? ["-o", `size=${bytes(v.emptyDir.sizeLimit)}`] : [];
        await run("mount", ["-t", "tmpfs", ...size, "tmpfs", dir]);
      }
      // 0777 as the kubelet's, or the pod's fsGroup's (setgid): a runAsUser container can write it.
      ownVolumeDir(dir, spec?.securityContext?.fsGroup);
    } else if (v.hostPath?.type === "DirectoryOrCreate") {
      await mkdir(v.hostPath.path, { recursive: true });
    } else if (v.hostPath?.type === "FileOrCreate") {
      await mkdir(path.dirname(v.hostPath.path), { recursive: true });
      await writeFile(v.hostPath.path, "", { flag: "a" });
    }
  }
  // subPaths of emptyDirs are made by the launcher's safe walk, before each start (safe-binds.ts): never by path text here.
}

/** (Re)writes the pod's /etc/hosts with its IP. */
export async function writeHosts(podDir: string, podIp: string, hostname: string): Promise<void> {
  await writeFile(path.join(podDir, "hosts"), etcHosts({ podIp, hostname }));
}

/** Mount points at or below `dir` (tmpfs emptyDirs), deepest first. */
async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile("/proc/self/mounts", "utf8").catch(() => "");
  const points = text
    .split("\n")
    .map((l) => l.split(" ")[1] ?? "")
    .map((p) => p.replace(/\\040/g, " "));
  return points.filter((p) => p === dir || p.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
}

/**
 * Unmounts what is mounted in the pod's directory (tmpfs emptyDirs, the
 * safe subPath and hostPath binds: `rm -r` would descend into them) and
 * removes it; a missing directory is fine.
 */
export async function removePodDir(podDir: string): Promise<void> {
  for (const p of await mountsUnder(podDir)) await run("umount", ["-l", p]);
  await rm(podDir, { recursive: true, force: true });
}

/**
 * The sandbox's create options: docker's init with `sleep` (so it reaps and
 * stops on SIGTERM), no docker networking (the pod network attaches its
 * netns; host-network pods use the node's), an IPC namespace the app
 * containers can join, the pod's hostname.
 */
export function sandboxOptions(o: { name: string; hostname: string; hostNetwork: boolean; labels: Record<string, string> }): Dockerode.ContainerCreateOptions {
  return {
    name: o.name,
    Image: LOCAL_IMAGES.pause,
    Cmd: ["sleep", "2147483647"],
    // docker refuses a hostname with the host's network namespace.
    Hostname: o.hostNetwork ? undefined : o.hostname,
    Labels: o.labels,
    HostConfig: {
      Init: true,
      NetworkMode: o.hostNetwork ? "host" : "none",
      IpcMode: "shareable",
      CapDrop: ["NET_RAW"],
      // As containerd sets it: unprivileged ICMP echo sockets (ping without
      // NET_RAW), for every process of the pod's network namespace. A
      // network sysctl: docker refuses it with the host's network.
      ...(o.hostNetwork ? {} : { Sysctls: { "net.ipv4.ping_group_range": "0 2147483647" } }),
    },
  };
}

/** What {@link runSandbox} needs from the runtime. */
export interface SandboxDeps {
  docker: Dockerode;
  network: PodNetwork;
  node: string;
  hostIp: string;
}

/** A started sandbox: its id, the pod's IP, when it started (RFC 3339). */
export interface SandboxRun {
  id: string;
  podIp: string;
  startedAt: string;
}

/**
 * Creates and starts the pod's sandbox and joins its netns to the pod
 * network (keeping `ip` when the pod had one: a recreated sandbox), then
 * writes the pod's hosts and ip files. The IP is known only once the netns
 * exists, after the sandbox's labels were fixed: app containers carry it as
 * a label and the pod directory as a file, for adoption.
 */
export async function runSandbox(d: SandboxDeps, ref: RuntimePod, pod: Pod, podDir: string, ip?: string): Promise<SandboxRun> {
  const hostNetwork = Boolean(pod.spec?.hostNetwork);
  const labels = podLabels({ node: d.node, pod: ref, container: SANDBOX, restartCount: 0, podIp: "" });
  const sandbox = await createOrTakeOver(d.docker, sandboxOptions({ name: sandboxName(ref), hostname: podHostname(pod), hostNetwork, labels }), ref.uid);
  await startQuietly(sandbox);
  const info = await sandbox.inspect();
  if (!info.State.Running || info.State.Pid <= 0) throw new Error(`pod sandbox ${info.Id} is not running: ${info.State.Error}`);
  const podIp = hostNetwork ? d.hostIp : await d.network.attach(ref.uid, `/proc/${info.State.Pid}/ns/net`, ip);
  await writeFile(path.join(podDir, "ip"), podIp);
  await writeHosts(podDir, hostNetwork ? "" : podIp, podHostname(pod));
  return { id: info.Id, podIp, startedAt: dockerTime(info.State.StartedAt) };
}
