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
// Two L2 segments (`segments: [0, 0, 1]`, host i on segment segments[i]):
// segment 1 is a second bridge ctb<tag>s1 with a subnet of its own
// (172.30.M.1/24); this machine routes between the two (ip_forward on, the
// FORWARD accepts between the bridges), so a host on one reaches a host on
// the other through a router — what VXLAN is for — and both reach the
// control plane at segment 0's gateway.
//
// Test files run two at a time: each set of hosts has its own tag, subnet
// and names; `destroy` removes every namespace, link and rule it made.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";

/** One test host. */
export interface TestHost {
  /** Its network namespace (under /run/netns): what `startActor`'s place names. */
  netns: string;
  /** Its address on the test bridge: a node's InternalIP. */
  address: string;
  /** The veth end on this machine's side: down = the host cut off. */
  link: string;
  /** Its L2 segment (index into `segments`). */
  segment: number;
  /** Its default gateway: its segment's bridge address. */
  gateway: string;
}

/** One L2 segment: a test bridge with a /24 of its own. */
export interface TestSegment {
  bridge: string;
  gateway: string;
  subnet: string;
}

/** Options of {@link createTestHosts}. */
export interface TestHostsOptions {
  /** Host i's segment (default: every host on segment 0); segments are numbered from 0 without gaps. */
  segments?: readonly number[];
}

/** A set of test hosts on one test bridge (or several: `segments`). */
export interface TestHosts {
  /** Segment 0's bridge address on this machine: where the hosts reach the control plane. */
  gateway: string;
  /** Segment 0's subnet. */
  subnet: string;
  segments: TestSegment[];
  hosts: TestHost[];
  /** Runs a command inside host i's network namespace. */
  exec(i: number, cmd: string, args: string[], opts?: { timeoutMs?: number }): string;
  /** Cuts host i off (its link down): a machine unplugged. */
  cut(i: number): void;
  /** Plugs host i back in. */
  restore(i: number): void;
  /** Kills what runs in the hosts, removes their namespaces, the bridges and the rules. */
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

/** A /24 of 172.30.0.0/16 no address or route on this machine uses (nor `also`). */
function freeSubnet(also: readonly number[] = []): number {
  const taken = ip(["-4", "route", "show"]) + ip(["-4", "addr", "show"]);
  for (let tries = 0; tries < 200; tries++) {
    const k = Math.floor(Math.random() * 256);
    if (!taken.includes(`172.30.${k}.`) && !also.includes(k)) return k;
  }
  throw new Error("no free /24 in 172.30.0.0/16 for test hosts");
}

/** The chain letting traffic between the hosts through this machine's FORWARD (Docker's policy is DROP with br_netfilter). */
function forwardChain(): string {
  try {
    execFileSync("iptables", ["-n", "-L", "DOCKER-USER"], { stdio: "ignore" });
    return "DOCKER-USER";
  } catch {
    return "FORWARD"; // no Docker: FORWARD itself
  }
}

/** Makes `count` test hosts (root: ip netns, bridges, iptables), on one segment or on those `opts.segments` names. */
export function createTestHosts(count: number, opts: TestHostsOptions = {}): TestHosts {
  const tag = randomBytes(2).toString("hex");
  const segmentOf = (i: number): number => opts.segments?.[i] ?? 0;
  const nSegments = Math.max(0, ...Array.from({ length: count }, (_, i) => segmentOf(i))) + 1;
  const ks: number[] = [];
  for (let s = 0; s < nSegments; s++) ks.push(freeSubnet(ks));
  const segments: TestSegment[] = ks.map((k, s) => ({
    bridge: s === 0 ? `ctb${tag}` : `ctb${tag}s${s}`,
    gateway: `172.30.${k}.1`,
    subnet: `172.30.${k}.0/24`,
  }));
  const gateway = segments[0]!.gateway;
  const hosts: TestHost[] = Array.from({ length: count }, (_, i) => ({
    netns: `cth${tag}${i}`,
    address: `172.30.${ks[segmentOf(i)]!}.${11 + i}`,
    link: `cth${tag}${i}`,
    segment: segmentOf(i),
    gateway: segments[segmentOf(i)]!.gateway,
  }));
  // Within a bridge, and (several segments) from each bridge to each other one: this machine is their router.
  const chain = forwardChain();
  const rules = segments.flatMap((a) => segments.map((b) => ["-i", a.bridge, "-o", b.bridge, "-j", "ACCEPT"]));
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
    for (const seg of segments) tryRun("ip", ["link", "del", seg.bridge]);
    for (const rule of rules) tryRun("iptables", ["-D", chain, ...rule]);
  };
  try {
    for (const seg of segments) {
      ip(["link", "add", seg.bridge, "type", "bridge"]);
      ip(["addr", "add", `${seg.gateway}/24`, "dev", seg.bridge]);
      ip(["link", "set", seg.bridge, "up"]);
    }
    for (const rule of rules) execFileSync("iptables", ["-I", chain, "1", ...rule]);
    // Routing between segments needs forwarding on this machine (Docker turns it on; it is left on).
    if (segments.length > 1) writeFileSync("/proc/sys/net/ipv4/ip_forward", "1");
    for (const h of hosts) {
      const peer = `cti${tag}${hosts.indexOf(h)}`;
      ip(["netns", "add", h.netns]);
      ip(["link", "add", h.link, "type", "veth", "peer", "name", peer]);
      ip(["link", "set", peer, "netns", h.netns]);
      ip(["link", "set", h.link, "master", segments[h.segment]!.bridge, "up"]);
      const batch = [
        `link set ${peer} name eth0`,
        `addr add ${h.address}/24 dev eth0`,
        "link set eth0 up",
        "link set lo up",
        `route add default via ${h.gateway}`,
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
    subnet: segments[0]!.subnet,
    segments,
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
