// The host's loopback, guarded. Node ports answer on 127.0.0.1 because
// `route_localnet=1` lets the kernel route loopback addresses off `lo`; that
// same knob lets anything on a bridge (a pod, a Docker container with
// NET_RAW or its own routes) send to 127.0.0.1 through the host and reach
// what listens there (CVE-2020-8558). kube-proxy's fix, in a chain of the
// node's own: drop packets to 127.0.0.0/8 that do not come from it, unless
// they belong to a connection already there or were DNATed (a node port).
import { readFile, writeFile } from "node:fs/promises";
import { hasRule, restore, saveRules, type SavedRules } from "./iptables.js";

/** The knob node ports on 127.0.0.1 need. */
export const ROUTE_LOCALNET = "/proc/sys/net/ipv4/conf/all/route_localnet";

/** The guard's chain: `<prefix>LOCALNET`. */
export function localnetChain(prefix: string): string {
  return `${prefix}LOCALNET`;
}

/** The one rule of the guard, as iptables-save prints it. */
export function localnetRule(prefix: string): string {
  return `-A ${localnetChain(prefix)} ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`;
}

/**
 * The `iptables-restore --noflush` script writing the guard (declaring the
 * chain empties it, so rewriting never duplicates) and the jumps from INPUT
 * and OUTPUT (as kube-proxy's KUBE-FIREWALL) not there yet, at the top.
 */
export function localnetScript(saved: SavedRules, prefix: string): string {
  const chain = localnetChain(prefix);
  const jumps = ["INPUT", "OUTPUT"].filter((c) => !hasRule(saved, "filter", `-A ${c} -j ${chain}`)).map((c) => `-I ${c} 1 -j ${chain}`);
  return ["*filter", `:${chain} - [0:0]`, localnetRule(prefix), ...jumps, "COMMIT", ""].join("\n");
}

/** Writes the guard, then (only then) turns `route_localnet` on. Idempotent. */
export async function guardLocalnet(prefix: string): Promise<void> {
  await restore(localnetScript(await saveRules(), prefix));
  await writeFile(ROUTE_LOCALNET, "1");
}

/**
 * Turns `route_localnet` off again when no choreo guard (`CHO-*LOCALNET`) is
 * left: the last node's clean-up does not leave loopback routable unguarded.
 * Returns whether it did.
 */
export async function releaseLocalnet(): Promise<boolean> {
  if (await anyGuard()) return false;
  const now = (await readFile(ROUTE_LOCALNET, "utf8").catch(() => "0")).trim();
  if (now === "0") return true;
  await writeFile(ROUTE_LOCALNET, "0");
  // Another agent guarded and switched it on meanwhile: its node ports need it back.
  if (await anyGuard()) {
    await writeFile(ROUTE_LOCALNET, "1");
    return false;
  }
  return true;
}

async function anyGuard(): Promise<boolean> {
  const chains = (await saveRules()).get("filter")?.chains ?? [];
  return chains.some((c) => c.startsWith("CHO-") && c.endsWith("-LOCALNET"));
}
