import { writeFile } from "node:fs/promises";
import type { Logger } from "@choreo/kit/log";
import { IpPool, ipToNumber, numberToIp } from "../runtime/ip-pool.js";
import { CommandError, run, succeeds } from "../exec.js";
import { hasRule, removalScript, restore, ruleTarget, saveRules, type SavedRules } from "./iptables.js";
import { localnetChain, releaseLocalnet } from "./localnet.js";
import { NAMES, type PodNetwork } from "./types.js";

/** Options of a node's bridge network. */
export interface BridgeNetworkOptions {
  node: string;
  /** The node's pod CIDR, e.g. 10.244.1.0/24. */
  podCidr: string;
  /** Every node's pod CIDRs together: traffic leaving it is masqueraded. */
  clusterCidr?: string;
  log: Logger;
}

/**
 * The node's pod network as a Linux bridge in the host's network namespace
 * (the CNI bridge plugin's layout): pods are network namespaces joined by
 * veth pairs, routed to other nodes' bridges by the host, masqueraded when
 * leaving the cluster CIDR. Its iptables rules live in two chains of its own,
 * jumped from DOCKER-USER (Docker's FORWARD policy is DROP) or, without
 * Docker, FORWARD ({@link forwardRules}), and nat POSTROUTING. `destroy`
 * also removes the node's loopback guard (`localnet.ts`, written by the
 * service proxy).
 */
export class BridgeNetwork implements PodNetwork {
  readonly gateway: string;
  readonly podCidr: string;
  private readonly prefixLen: number;
  private readonly clusterCidr: string;
  private readonly bridge: string;
  private readonly forwardChain: string;
  private readonly natChain: string;
  private readonly pool: IpPool;
  private readonly attached = new Map<string, string>();
  /** Attaches under way: a second call for the same pod waits for the first. */
  private readonly attaching = new Map<string, Promise<string>>();

  constructor(private readonly opts: BridgeNetworkOptions) {
    this.pool = new IpPool(opts.podCidr);
    const [base, bits] = opts.podCidr.split("/");
    this.prefixLen = Number(bits);
    const size = 2 ** (32 - this.prefixLen);
    const network = ipToNumber(base ?? "") - (ipToNumber(base ?? "") % size);
    this.podCidr = `${numberToIp(network)}/${this.prefixLen}`;
    this.gateway = numberToIp(network + 1);
    this.clusterCidr = opts.clusterCidr ?? "10.244.0.0/16";
    this.bridge = NAMES.bridge(opts.node);
    const prefix = NAMES.chainPrefix(opts.node);
    this.forwardChain = `${prefix}FORWARD`;
    this.natChain = `${prefix}POSTROUTING`;
  }

  async init(): Promise<void> {
    if (!(await succeeds("ip", ["link", "show", "dev", this.bridge]))) {
      await run("ip", ["link", "add", "name", this.bridge, "type", "bridge"]);
    }
    await run("ip", ["-batch", "-"], { input: `addr replace ${this.gateway}/${this.prefixLen} dev ${this.bridge}\nlink set ${this.bridge} up\n` });
    await writeFile("/proc/sys/net/ipv4/ip_forward", "1");
    await this.bridgeNetfilter();
    const saved = await saveRules();
    const { filter, forwardParent } = forwardRules(saved, this.forwardChain, this.podCidr);
    const natJump = `-A POSTROUTING -j ${this.natChain}`;
    // Declaring a chain under --noflush creates or empties it, so a restart
    // rewrites the rules instead of duplicating them; jumps are added once.
    const script = [
      "*filter",
      ...filter,
      "COMMIT",
      "*nat",
      `:${this.natChain} - [0:0]`,
      `-A ${this.natChain} -s ${this.podCidr} ! -d ${this.clusterCidr} -j MASQUERADE`,
      ...(hasRule(saved, "nat", natJump) ? [] : [`-I POSTROUTING 1 -j ${this.natChain}`]),
      "COMMIT",
      "",
    ].join("\n");
    await restore(script);
    this.opts.log.info({ node: this.opts.node, bridge: this.bridge, podCidr: this.podCidr, forwardParent }, "pod network ready");
  }

  /**
   * Pods of one bridge reaching each other through a Service VIP need bridged
   * frames to pass iptables: otherwise the reply skips the host's conntrack,
   * is not un-DNATed, and the client drops it. Docker loads br_netfilter;
   * without Docker we try modprobe.
   */
  private async bridgeNetfilter(): Promise<void> {
    const knob = "/proc/sys/net/bridge/bridge-nf-call-iptables";
    try {
      await writeFile(knob, "1");
      return;
    } catch {
      // module not loaded
    }
    await run("modprobe", ["br_netfilter"]).catch(() => undefined);
    await writeFile(knob, "1").catch((err: unknown) => {
      this.opts.log.warn({ err, node: this.opts.node }, "br_netfilter unavailable; pods reaching a Service backed by a pod on their own node may fail");
    });
  }

  attach(uid: string, netnsPath: string, ip?: string): Promise<string> {
    const known = this.attached.get(uid);
    if (known) return Promise.resolve(known);
    let pending = this.attaching.get(uid);
    if (!pending) {
      pending = this.join(uid, netnsPath, ip).finally(() => this.attaching.delete(uid));
      this.attaching.set(uid, pending);
    }
    return pending;
  }

  private async join(uid: string, netnsPath: string, ip?: string): Promise<string> {
    let address: string;
    if (ip) {
      this.pool.reserve(ip); // false when adopted twice: the address is this pod's anyway
      address = ip;
    } else {
      address = this.pool.allocate();
    }
    const veth = NAMES.veth(uid);
    const hostSide = [`link set ${veth} master ${this.bridge}`, `link set ${veth} type bridge_slave hairpin on`, `link set ${veth} up`];
    try {
      try {
        await run("ip", ["-batch", "-"], { input: [`link add ${veth} type veth peer name eth0 netns ${netnsPath}`, ...hostSide, ""].join("\n") });
      } catch (err) {
        // An earlier agent attached it already (adoption): finish the host side.
        if (!(err instanceof CommandError) || !(await succeeds("ip", ["link", "show", "dev", veth]))) throw err;
        await run("ip", ["-batch", "-"], { input: [...hostSide, ""].join("\n") });
      }
      const inside = [
        `addr replace ${address}/${this.prefixLen} dev eth0`,
        "link set eth0 up",
        "link set lo up",
        `route replace default via ${this.gateway} dev eth0`,
        "",
      ].join("\n");
      // A named namespace: ip enters it itself (one program fewer than nsenter + ip).
      const named = /^\/run\/netns\/([^/]+)$/.exec(netnsPath)?.[1];
      await run(named ? "ip" : "nsenter", named ? ["-n", named, "-batch", "-"] : [`--net=${netnsPath}`, "ip", "-batch", "-"], { input: inside });
    } catch (err) {
      this.pool.release(address);
      await run("ip", ["link", "del", veth]).catch(() => undefined);
      throw err;
    }
    this.attached.set(uid, address);
    this.opts.log.debug({ node: this.opts.node, uid, ip: address, veth }, "pod attached");
    return address;
  }

  async detach(uid: string, ip: string): Promise<void> {
    try {
      await run("ip", ["link", "del", NAMES.veth(uid)]);
    } catch (err) {
      // Gone already: the namespace was deleted first, which takes the pair with it.
      if (!(err instanceof CommandError) || !/Cannot find device/.test(err.stderr)) throw err;
    }
    this.attached.delete(uid);
    if (ip) this.pool.release(ip);
  }

  reserve(ip: string): boolean {
    return this.pool.reserve(ip);
  }

  async destroy(): Promise<void> {
    await run("ip", ["link", "del", this.bridge]).catch((err: unknown) => {
      if (!(err instanceof CommandError) || !/Cannot find device/.test(err.stderr)) throw err;
    });
    const mine = new Set([this.forwardChain, this.natChain, localnetChain(NAMES.chainPrefix(this.opts.node))]);
    await restore(removalScript(await saveRules(), (_table, chain) => mine.has(chain)));
    await releaseLocalnet();
    this.attached.clear();
    this.opts.log.info({ node: this.opts.node, bridge: this.bridge }, "pod network removed");
  }
}

/** Docker's bridges: the default one and every user-defined network's (compose's among them). */
export const DOCKER_BRIDGES = ["docker0", "br-+"] as const;

/**
 * The filter-table lines declaring and filling the node's forwarding chain,
 * and the jump to it. Pods may talk to pods (any node's: they are routed
 * here) and go out (masqueraded), but not open connections into Docker's
 * bridges, whose containers (a compose bring-up's NATS and Redis among
 * them) would otherwise be one hop away and, for published ports, accepted
 * by Docker's own DOCKER chain; replies to connections opened from there
 * still pass. Anything else to the pods (host-gw routes, node ports from
 * outside) is accepted; what the chain does not decide returns.
 *
 * With Docker, the chain hangs off DOCKER-USER, the one chain Docker leaves
 * to others and jumps first, so Docker's isolation chains still apply to
 * everything we return, and a restarted dockerd (which re-inserts its own
 * jumps at the top of FORWARD) keeps ours in place. Without Docker it hangs
 * off FORWARD. A jump from anywhere else (the other parent, or an older
 * agent's FORWARD position 1) is deleted.
 */
export function forwardRules(saved: SavedRules, chain: string, podCidr: string): { filter: string[]; forwardParent: string } {
  const parent = saved.get("filter")?.chains.includes("DOCKER-USER") ? "DOCKER-USER" : "FORWARD";
  const jump = `-A ${parent} -j ${chain}`;
  const stray = (saved.get("filter")?.rules ?? []).filter((r) => ruleTarget(r) === chain && !r.startsWith(`-A ${chain} `) && r !== jump);
  const filter = [
    `:${chain} - [0:0]`,
    ...DOCKER_BRIDGES.map((o) => `-A ${chain} -s ${podCidr} -o ${o} -m conntrack ! --ctstate RELATED,ESTABLISHED -j DROP`),
    `-A ${chain} -s ${podCidr} -j ACCEPT`,
    `-A ${chain} -d ${podCidr} -j ACCEPT`,
    ...stray.map((r) => `-D${r.slice(2)}`),
    ...(hasRule(saved, "filter", jump) ? [] : [`-I ${parent} 1 -j ${chain}`]),
  ];
  return { filter, forwardParent: parent };
}
