import fs from "node:fs";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { etcHosts, resolvConf } from "../../dns/resolv-conf.js";
import { NAMES, type PodNetwork } from "../../net/types.js";
import { emptyDirPath, podHostname } from "../pod-spec.js";
import { ownVolumeDir } from "../security-context.js";
import { run } from "../../exec.js";
import { unmountBinds } from "../safe-binds.js";
import { HELPER } from "./helper.js";
import { mountedAmong } from "./proc.js";
import { podPaths } from "./state.js";

/** What the sandbox needs from the runtime. */
export interface SandboxEnv {
  stateDir: string;
  network: PodNetwork;
  dnsServer: string;
  clusterDomain?: string | undefined;
  /** hostNetwork pods' IP. */
  hostIp: string;
}

/** The netns file of a pod (a bind mount of its network namespace, as `ip netns add` makes). */
export function netnsPath(uid: string): string {
  return `/run/netns/${NAMES.netns(uid)}`;
}

/**
 * Brings up a pod's sandbox: its state dir and emptyDirs, then one `unshare`
 * making its persistent namespaces — network (bound on /run/netns/choreo-<uid>,
 * skipped for hostNetwork), IPC and UTS (bound on `ipc`/`uts` in the pod
 * dir) — and setting the pod's hostname in the UTS one (choreo-exec
 * hostname: the name on stdin, never an argument); then the network's
 * attach (veth, IP) and the pod's resolv.conf and hosts. A restarted agent
 * finishing a half-built sandbox makes only what is missing. Returns the
 * pod's IP.
 */
export async function createSandbox(env: SandboxEnv, pod: Pod): Promise<string> {
  const uid = pod.metadata?.uid ?? "";
  const p = podPaths(env.stateDir, uid);
  fs.mkdirSync(p.dir, { recursive: true });
  for (const v of pod.spec?.volumes ?? []) {
    if (v.hostPath) continue;
    const dir = emptyDirPath(p.dir, v.name);
    fs.mkdirSync(dir, { recursive: true });
    // 0777 as the kubelet's, or the pod's fsGroup's (setgid): a runAsUser container can write it.
    if (v.emptyDir) ownVolumeDir(dir, pod.spec?.securityContext?.fsGroup);
  }
  const hostNetwork = Boolean(pod.spec?.hostNetwork);
  const mounted = mountedAmong([netnsPath(uid), p.uts]);
  const newNet = !hostNetwork && !mounted.has(netnsPath(uid));
  const newUts = !mounted.has(p.uts);
  const bind = [...(newNet ? [netnsPath(uid)] : []), ...(newUts ? [p.ipc, p.uts] : [])];
  for (const f of bind) fs.writeFileSync(f, "");
  if (bind.length > 0) {
    // The hostname reaches sethostname(2) on stdin, verbatim: as an argument of hostname(1), `-F/etc/shadow` would be
    // an option. Without a new UTS namespace it would rename the host: then the command is `true`.
    const command = newUts ? [HELPER, "hostname"] : ["true"];
    const ns = [...(newNet ? [`--net=${netnsPath(uid)}`] : []), ...(newUts ? [`--ipc=${p.ipc}`, `--uts=${p.uts}`] : [])];
    await run("unshare", [...ns, "--", ...command], { input: newUts ? podHostname(pod) : "" });
  }
  const ip = hostNetwork ? env.hostIp : await env.network.attach(uid, netnsPath(uid));
  const dnsPolicy = pod.spec?.dnsPolicy || "ClusterFirst";
  const clusterDns = dnsPolicy === "ClusterFirstWithHostNet" || (dnsPolicy === "ClusterFirst" && !hostNetwork);
  fs.writeFileSync(
    p.resolvConf,
    clusterDns
      ? resolvConf({ namespace: pod.metadata?.namespace ?? "default", nameserver: env.dnsServer, clusterDomain: env.clusterDomain })
      : hostResolvConf(),
  );
  fs.writeFileSync(p.hosts, etcHosts({ podIp: ip, hostname: podHostname(pod) }));
  return ip;
}

/**
 * Makes /run/netns what `ip netns add` makes it (a shared mount, so
 * namespaces bound there later show in mount namespaces made before), once
 * per agent: sandboxes then bind their network namespaces there themselves.
 */
export async function prepareNetnsDir(node: string): Promise<void> {
  const probe = NAMES.netns(`setup-${node}`);
  await run("ip", ["netns", "add", probe]);
  await run("ip", ["netns", "delete", probe]);
}

function hostResolvConf(): string {
  try {
    return fs.readFileSync("/etc/resolv.conf", "utf8");
  } catch {
    return "";
  }
}

/** Whether a pod's namespaces still exist (a reboot takes them, and /run/netns with them). */
export function sandboxAlive(stateDir: string, uid: string, hostNetwork: boolean): boolean {
  const uts = podPaths(stateDir, uid).uts;
  const mounted = mountedAmong([uts, netnsPath(uid)]);
  return mounted.has(uts) && (hostNetwork || mounted.has(netnsPath(uid)));
}

/**
 * Frees what the sandbox holds, once its processes are gone: the veth and
 * IP, the network namespace, the IPC/UTS namespace mounts, the volume binds, the pod dir.
 * Safe to repeat and on half-built sandboxes.
 */
export async function destroySandbox(env: SandboxEnv, uid: string, ip: string, hostNetwork: boolean): Promise<void> {
  const p = podPaths(env.stateDir, uid);
  if (!hostNetwork) {
    if (ip) await env.network.detach(uid, ip);
    if (fs.existsSync(netnsPath(uid))) await run("ip", ["netns", "delete", NAMES.netns(uid)]);
  }
  const mounted = [...mountedAmong([p.ipc, p.uts])];
  if (mounted.length > 0) await run("umount", mounted);
  // The safe subPath and hostPath binds (a hostPath's files are the host's): `rm -r` must never descend into them.
  await unmountBinds(p.dir);
  fs.rmSync(p.dir, { recursive: true, force: true });
}
