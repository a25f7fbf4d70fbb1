import type { Allocations } from "../../storage/object-storage.js";
import { isIPv4 } from "../shared/ip.js";

/**
 * Node IPAM (Kubernetes' range allocator, `--allocate-node-cidrs`): every
 * node gets one block of the cluster CIDR (`/24` of `10.244.0.0/16` by
 * default) as its `spec.podCIDR`, unique across api replicas — a block is
 * claimed in the storage's allocations under the node's name and released
 * when the Node is deleted. A node that names its own block keeps it when it
 * is free; a block outside the cluster CIDR is not ours to track (hollow
 * nodes past the 256th use such blocks).
 */
export class PodCidrAllocator {
  private readonly base: number;
  private readonly blocks: number;
  private readonly blockSize: number;
  /** The next block to try first: allocation goes round the range, as Kubernetes' does. */
  private next = 0;

  constructor(
    private readonly allocations: Allocations,
    readonly clusterCidr: string,
    readonly maskSize = 24,
  ) {
    const parsed = parseCidr(clusterCidr);
    if (!parsed || parsed.prefix < 8) throw new Error(`invalid cluster CIDR ${clusterCidr}`);
    if (!Number.isInteger(maskSize) || maskSize < parsed.prefix || maskSize > 30) {
      throw new Error(`node CIDR mask size ${maskSize} must be between the cluster CIDR's prefix (${parsed.prefix}) and 30`);
    }
    this.base = parsed.base;
    this.blockSize = 2 ** (32 - maskSize);
    this.blocks = 2 ** (maskSize - parsed.prefix);
  }

  /** Whether `cidr` is one block of the range, exactly (network address and mask size). */
  isBlock(cidr: string): boolean {
    const c = parseCidr(cidr);
    if (!c || c.prefix !== this.maskSize || c.ip !== c.base) return false;
    return c.base >= this.base && c.base < this.base + this.blocks * this.blockSize;
  }

  /** Takes a free block for node `owner`; throws when every block is taken. */
  async allocate(owner: string): Promise<string> {
    for (let i = 0; i < this.blocks; i++) {
      const index = (this.next + i) % this.blocks;
      const cidr = `${toIp(this.base + index * this.blockSize)}/${this.maskSize}`;
      if (await this.claim(cidr, owner)) {
        this.next = (index + 1) % this.blocks;
        return cidr;
      }
    }
    throw new Error(`no pod CIDR left in ${this.clusterCidr}`);
  }

  /** Takes `cidr` for `owner`; false when another node holds it. */
  claim(cidr: string, owner: string): Promise<boolean> {
    return this.allocations.claim("pod-cidr", cidr, owner);
  }

  release(cidr: string, owner: string): Promise<void> {
    return this.allocations.release("pod-cidr", cidr, owner);
  }
}

/** An IPv4 CIDR: its address, network address and prefix length; undefined when `s` is none. */
export function parseCidr(s: string): { ip: number; base: number; prefix: number } | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return undefined;
  const addr = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  if (!isIPv4(addr) || !/^(?:[0-9]|[12][0-9]|3[0-2])$/.test(bits)) return undefined;
  const prefix = Number(bits);
  const ip = addr.split(".").reduce((n, p) => ((n << 8) | Number(p)) >>> 0, 0);
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return { ip, base: (ip & mask) >>> 0, prefix };
}

function toIp(n: number): string {
  return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}
