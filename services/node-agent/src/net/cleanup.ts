// What `choreo down` and the tests use to leave nothing behind: bridges,
// veths, iptables chains with their jumps, and named network namespaces.
import { CommandError, run } from "../exec.js";
import { removalScript, restore, saveRules } from "./iptables.js";
import { releaseLocalnet } from "./localnet.js";
import { NAMES } from "./types.js";
import { removeRoutes } from "./routes.js";
import { removeVxlan } from "./vxlan.js";

interface IpLink {
  ifname: string;
}

/** Interface names from `ip -j link show ...` output. */
export function parseLinkNames(json: string): string[] {
  if (json.trim() === "") return [];
  return (JSON.parse(json) as IpLink[]).map((l) => l.ifname);
}

/** Names of `ip netns list` output (`NAME (id: 3)` lines). */
export function parseNetnsList(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim().split(" ")[0] ?? "")
    .filter((n) => n !== "");
}

async function deleteLink(name: string): Promise<void> {
  try {
    await run("ip", ["link", "del", name]);
  } catch (err) {
    if (!(err instanceof CommandError) || !/Cannot find device/.test(err.stderr)) throw err;
  }
}

/** Deletes a bridge and every veth enslaved to it; a missing bridge is fine. */
async function deleteBridge(bridge: string): Promise<void> {
  let ports: string[] = [];
  try {
    ports = parseLinkNames(await run("ip", ["-j", "link", "show", "master", bridge]));
  } catch {
    return; // no such bridge
  }
  for (const p of ports) await deleteLink(p.split("@")[0]!);
  await deleteLink(bridge);
}

/** Removes every iptables chain whose name starts with `prefix` and every jump to them. */
export async function removeChains(prefix: string): Promise<void> {
  await restore(removalScript(await saveRules(), (_t, chain) => chain.startsWith(prefix)));
}

/**
 * Removes what a node's agent made: the veths on its bridge, the bridge, its
 * chains (the loopback guard among them) and their jumps; `route_localnet`
 * goes back to 0 when no node's guard is left.
 */
export async function cleanupNode(node: string): Promise<void> {
  await deleteBridge(NAMES.bridge(node));
  await removeChains(NAMES.chainPrefix(node));
  await releaseLocalnet();
}

/**
 * Removes what any choreo agent on this machine made: every `cb-*` bridge
 * with its veths, every `CHO-*` chain and jump, every `choreo-*` network
 * namespace after killing the processes in it, the routes to other nodes'
 * pods (`proto 199`) and the VXLAN device `choreo.vx`.
 */
export async function cleanupAll(): Promise<void> {
  for (const b of parseLinkNames(await run("ip", ["-j", "link", "show", "type", "bridge"]))) {
    if (b.startsWith("cb-")) await deleteBridge(b);
  }
  await removeChains("CHO-");
  await releaseLocalnet();
  await removeNamespaces();
  await removeRoutes();
  // The overlay device; its neighbour and FDB entries (and any route through it) go with it.
  await removeVxlan();
}

/**
 * Kills the processes in choreo's named network namespaces (process-runtime
 * pods) — all of them, or those named in `only` — then deletes the
 * namespaces (processes first: a namespace with live processes outlives
 * its name). Returns how many processes were killed.
 */
export async function removeNamespaces(only?: ReadonlySet<string>): Promise<number> {
  const names = parseNetnsList(await run("ip", ["netns", "list"])).filter((ns) => ns.startsWith(NAMES.netns("")) && (!only || only.has(ns)));
  let killed = 0;
  for (const ns of names) {
    const pids = (await run("ip", ["netns", "pids", ns]).catch(() => "")).split("\n").filter((p) => /^\d+$/.test(p.trim()));
    for (const pid of pids) {
      try {
        process.kill(Number(pid), "SIGKILL");
        killed++;
      } catch {
        // exited meanwhile
      }
    }
  }
  if (killed) await new Promise((r) => setTimeout(r, 200));
  for (const ns of names) await run("ip", ["netns", "del", ns]).catch(() => undefined);
  return killed;
}
