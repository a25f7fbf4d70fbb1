import { IpPool } from "../runtime/ip-pool.js";
import type { PodNetwork } from "./types.js";

/**
 * A PodNetwork test double for runtime tests: IPs from an IpPool, no
 * bridge; `wire` does what the test needs inside the pod's namespace (or
 * only checks the path). Tests only: the real one is BridgeNetwork.
 */
export class TestPodNetwork implements PodNetwork {
  readonly gateway: string;
  readonly pool: IpPool;
  /** Every attach (uid → IP), for the tests' assertions. */
  readonly attached = new Map<string, string>();

  constructor(
    readonly podCidr: string,
    private readonly wire: (netnsPath: string, ip: string) => Promise<void> = async () => undefined,
  ) {
    this.pool = new IpPool(podCidr);
    this.gateway = podCidr.replace(/\.0\/\d+$/, ".1");
  }

  async init(): Promise<void> {}

  async attach(uid: string, netnsPath: string, ip?: string): Promise<string> {
    const addr = this.attached.get(uid) ?? ip ?? this.pool.allocate();
    await this.wire(netnsPath, addr);
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
