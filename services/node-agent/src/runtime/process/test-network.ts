import path from "node:path";
import type { PodNetwork } from "../../net/types.js";
import { IpPool } from "../ip-pool.js";
import { run } from "./proc.js";

/**
 * A PodNetwork test double without wiring: IPs from an IpPool, the
 * namespace's loopback up and the pod IP on it (so a pod reaches itself on
 * localhost and on its IP; other pods cannot reach it). Tests only.
 */
export class LoopbackNetwork implements PodNetwork {
  readonly gateway: string;
  private readonly pool: IpPool;
  /** Every attach, for the tests' assertions. */
  readonly attached = new Map<string, string>();

  constructor(readonly podCidr = "10.231.0.0/24") {
    this.pool = new IpPool(podCidr);
    this.gateway = podCidr.replace(/\.0\/\d+$/, ".1");
  }

  async init(): Promise<void> {}

  async attach(uid: string, netnsPath: string, ip?: string): Promise<string> {
    const addr = ip ?? this.attached.get(uid) ?? this.pool.allocate();
    const ns = path.basename(netnsPath);
    await run("ip", ["-n", ns, "link", "set", "lo", "up"]);
    await run("ip", ["-n", ns, "addr", "replace", `${addr}/32`, "dev", "lo"]);
    this.attached.set(uid, addr);
    return addr;
  }

  async detach(uid: string, ip: string): Promise<void> {
    this.attached.delete(uid);
    this.pool.release(ip);
  }

  reserve(ip: string): boolean {
    return this.pool.reserve(ip);
  }

  async destroy(): Promise<void> {}
}
