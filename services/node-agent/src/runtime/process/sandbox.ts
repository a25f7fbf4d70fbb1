import fs from "node:fs";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { etcHosts, resolvConf } from "../../dns/resolv-conf.js";
import { NAMES, type PodNetwork } from "../../net/types.js";
import { emptyDirPath, podHostname } from "../pod-spec.js";
import { run } from "../../exec.js";
import { isMountPoint } from "./proc.js";
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

/** The netns file of a pod (`ip netns add` creates it). */
export function netnsPath(uid: string): string {
  return `/run/netns/${NAMES.netns(uid)}`;
}

/**
 * Brings up a pod's sandbox: its state dir and emptyDirs, a named network
 * namespace joined to the node's network (skipped for hostNetwork), and
 * persistent IPC and UTS namespaces (bind-mounted on `ipc`/`uts` in the pod
 * dir, hostname = the pod's) that all its containers join; then the pod's
 * resolv.conf and hosts. Three processes: `ip netns add`, the network's
 * own, `unshare … hostname`. Returns the pod's IP.
 */
export async function createSandbox(env: SandboxEnv, pod: Pod): Promise<string> {
  const uid = pod.metadata?.uid ?? "";
  const p = podPaths(env.stateDir, uid);
  fs.mkdirSync(p.dir, { recursive: true });
  for (const v of pod.spec?.volumes ?? []) if (!v.hostPath) fs.mkdirSync(emptyDirPath(p.dir, v.name), { recursive: true });
  for (const f of [p.ipc, p.uts]) if (!fs.existsSync(f)) fs.writeFileSync(f, "");
  const hostNetwork = Boolean(pod.spec?.hostNetwork);
  const namespaces = isMountPoint(p.uts) ? Promise.resolve("") : run("unshare", [`--ipc=${p.ipc}`, `--uts=${p.uts}`, "hostname", podHostname(pod)]);
  const network = hostNetwork ? Promise.resolve(env.hostIp) : joinNetwork(env, uid);
  const [ip] = await Promise.all([network, namespaces]);
  const dnsPolicy = pod.spec?.dnsPolicy || "ClusterFirst";
  const clusterDns = dnsPolicy === "ClusterFirstWithHostNet" || (dnsPolicy === "ClusterFirst" && !hostNetwork);
  fs.writeFileSync(p.resolvConf, clusterDns
    ? resolvConf({ namespace: pod.metadata?.namespace ?? "default", nameserver: env.dnsServer, clusterDomain: env.clusterDomain })
    : hostResolvConf());
  fs.writeFileSync(p.hosts, etcHosts({ podIp: ip, hostname: podHostname(pod) }));
  return ip;
}

async function joinNetwork(env: SandboxEnv, uid: string): Promise<string> {
  if (!fs.existsSync(netnsPath(uid))) await run("ip", ["netns", "add", NAMES.netns(uid)]);
  return env.network.attach(uid, netnsPath(uid));
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
  return isMountPoint(podPaths(stateDir, uid).uts) && (hostNetwork || fs.existsSync(netnsPath(uid)));
}

/**
 * Frees what the sandbox holds, once its processes are gone: the veth and
 * IP, the network namespace, the IPC/UTS namespace mounts, the pod dir.
 * Safe to repeat and on half-built sandboxes.
 */
export async function destroySandbox(env: SandboxEnv, uid: string, ip: string, hostNetwork: boolean): Promise<void> {
  const p = podPaths(env.stateDir, uid);
  if (!hostNetwork) {
    if (ip) await env.network.detach(uid, ip);
    if (fs.existsSync(netnsPath(uid))) await run("ip", ["netns", "delete", NAMES.netns(uid)]);
  }
  const mounted = [p.ipc, p.uts].filter(isMountPoint);
  if (mounted.length > 0) await run("umount", mounted);
  fs.rmSync(p.dir, { recursive: true, force: true });
}
