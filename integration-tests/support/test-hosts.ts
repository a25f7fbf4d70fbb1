// Test hosts: machines for multi-host scenarios, made of network namespaces
// on one machine. Each host is a namespace with its own address on a test
// bridge (one L2 segment, as host-gw routing wants), its own default route,
// forwarding on, its own iptables — a node agent started in it (nsenter
// --net) makes its pod bridge, pods and rules there, as on a machine of its
// own. The control plane stays on this machine's namespace, reached at the
// bridge's address (nats-server listens there, with TLS).
//
//   this machine: ctb<tag> 172.30.K.1/24 ── cth<tag><i> (veth) ──┐
//   host i (netns cth<tag><i>): eth0 172.30.K.(11+i)/24 ─────────┘  default via 172.30.K.1
//
// Test files run two at a time: each set of hosts has its own tag, subnet
// and names; `destroy` removes every namespace, link and rule it made.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";

/** One test host. */
export interface TestHost {
  /** Its network namespace (under /run/netns): what `startActor`'s place names. */
  netns: string;
  /** Its address on the test bridge: a node's InternalIP. */
  address: string;
  /** The veth end on this machine's side: down = the host cut off. */
  link: string;
}

/** A set of test hosts on one test bridge. */
export interface TestHosts {
  /** The bridge's address on this machine: where the hosts reach the control plane. */
  gateway: string;
  subnet: string;
  hosts: TestHost[];
  /** Runs a command inside host i's network namespace. */
  exec(i: number, cmd: string, args: string[], opts?: { timeoutMs?: number }): string;
  /** Cuts host i off (its link down): a machine unplugged. */
  cut(i: number): void;
  /** Plugs host i back in. */
  restore(i: number): void;
  /** Kills what runs in the hosts, removes their namespaces, the bridge and the rule. */
  destroy(): void;
}

function ip(args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function tryRun(file: string, args: string[]): void {
  try {
    execFileSync(file, args, { stdio: "ignore" });
  } catch {
    // already gone
  }
}

/** A /24 of 172.30.0.0/16 no address or route on this machine uses. */
function freeSubnet(): number {
  const taken = ip(["-4", "route", "show"]) + ip(["-4", "addr", "show"]);
  for (let tries = 0; tries < 200; tries++) {
    const k = Math.floor(Math.random() * 256);
    if (!taken.includes(`172.30.${k}.`)) return k;
  }
  throw new Error("no free /24 in 172.30.0.0/16 for test hosts");
}

/** The rule letting bridged traffic between the hosts through this machine's FORWARD (Docker's policy is DROP with br_netfilter). */
function forwardRule(bridge: string): { chain: string; rule: string[] } {
  let chain = "FORWARD";
  try {
    execFileSync("iptables", ["-n", "-L", "DOCKER-USER"], { stdio: "ignore" });
    chain = "DOCKER-USER";
  } catch {
    // no Docker: FORWARD itself
  }
  return { chain, rule: ["-i", bridge, "-o", bridge, "-j", "ACCEPT"] };
}

/** Makes `count` test hosts (root: ip netns, bridges, iptables). */
export function createTestHosts(count: number): TestHosts {
  const tag = randomBytes(2).toString("hex");
  const k = freeSubnet();
  const bridge = `ctb${tag}`;
  const gateway = `172.30.${k}.1`;
  const hosts: TestHost[] = Array.from({ length: count }, (_, i) => ({ netns: `cth${tag}${i}`, address: `172.30.${k}.${11 + i}`, link: `cth${tag}${i}` }));
  const fwd = forwardRule(bridge);
  const destroy = (): void => {
    for (const h of hosts) {
      // Processes first: a namespace with live processes outlives its name.
      let pids: string[] = [];
      try {
        pids = ip(["netns", "pids", h.netns])
          .split("\n")
          .filter((p) => /^\d+$/.test(p.trim()));
      } catch {
        // no such namespace
      }
      for (const pid of pids) tryRun("kill", ["-9", pid]);
      tryRun("ip", ["netns", "del", h.netns]);
      tryRun("ip", ["link", "del", h.link]);
    }
    tryRun("ip", ["link", "del", bridge]);
    tryRun("iptables", ["-D", fwd.chain, ...fwd.rule]);
  };
  try {
    ip(["link", "add", bridge, "type", "bridge"]);
    ip(["addr", "add", `${gateway}/24`, "dev", bridge]);
    ip(["link", "set", bridge, "up"]);
    execFileSync("iptables", ["-I", fwd.chain, "1", ...fwd.rule]);
    for (const h of hosts) {
      const peer = `cti${tag}${hosts.indexOf(h)}`;
      ip(["netns", "add", h.netns]);
      ip(["link", "add", h.link, "type", "veth", "peer", "name", peer]);
      ip(["link", "set", peer, "netns", h.netns]);
      ip(["link", "set", h.link, "master", bridge, "up"]);
      const batch = [
        `link set ${peer} name eth0`,
        `addr add ${h.address}/24 dev eth0`,
        "link set eth0 up",
        "link set lo up",
        `route add default via ${gateway}`,
      ].join("\n");
      execFileSync("ip", ["-n", h.netns, "-batch", "-"], { input: batch + "\n" });
      // A machine routing pods forwards (the agent sets it too; a fresh namespace starts with it off).
      execFileSync("ip", ["netns", "exec", h.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    }
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    gateway,
    subnet: `172.30.${k}.0/24`,
    hosts,
    exec(i, cmd, args, opts = {}) {
      const h = hosts[i];
      if (!h) throw new Error(`no test host ${i}`);
      return execFileSync("nsenter", [`--net=${path.join("/run/netns", h.netns)}`, cmd, ...args], { encoding: "utf8", timeout: opts.timeoutMs ?? 10_000 });
    },
    cut: (i) => void ip(["link", "set", hosts[i]!.link, "down"]),
    restore: (i) => void ip(["link", "set", hosts[i]!.link, "up"]),
    destroy,
  };
}
