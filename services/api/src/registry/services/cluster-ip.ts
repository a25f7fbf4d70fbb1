import { randomInt } from "node:crypto";
import type { Allocations } from "../../storage/object-storage.js";

/**
 * Allocates Service ClusterIPs from a CIDR, unique across api replicas: an
 * address is claimed in the storage's allocations and released on delete.
 */
export class ClusterIpAllocator {
  private readonly base: number;
  private readonly size: number;

  constructor(
    private readonly allocations: Allocations,
    cidr: string,
  ) {
    const [ip, bits] = cidr.split("/");
    const prefix = Number(bits);
    if (!ip || !Number.isInteger(prefix) || prefix < 8 || prefix > 30) throw new Error(`invalid service CIDR ${cidr}`);
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    this.base = (toInt(ip) & mask) >>> 0;
    this.size = 2 ** (32 - prefix);
  }

  /** Whether `ip` is inside the range (network and broadcast excluded). */
  contains(ip: string): boolean {
    const n = toInt(ip);
    return n > this.base && n < this.base + this.size - 1;
  }

  /** Takes a free address for `owner` (namespace/name); throws when the range is full. */
  async allocate(owner: string): Promise<string> {
    const usable = this.size - 2;
    const start = randomInt(usable);
    // Random probing first (cheap while the range is sparse), then a scan.
    for (let i = 0; i < Math.min(usable, 64); i++) {
      const ip = toIp(this.base + 1 + ((start + i * 7919) % usable));
      if (await this.claim(ip, owner)) return ip;
    }
    for (let i = 0; i < usable; i++) {
      const ip = toIp(this.base + 1 + ((start + i) % usable));
      if (await this.claim(ip, owner)) return ip;
    }
    throw new Error("range is full");
  }

  /** Takes a specific address; false when someone else holds it. */
  async claim(ip: string, owner: string): Promise<boolean> {
    return this.allocations.claim("cluster-ip", ip, owner);
  }

  async release(ip: string, owner: string): Promise<void> {
    await this.allocations.release("cluster-ip", ip, owner);
  }
}

function toInt(ip: string): number {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return -1;
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function toIp(n: number): string {
  return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/**
 * Whether a string is a dotted IPv4 address in canonical form: `10.96.000.010`
 * would be a second spelling (a second allocation) of an allocated address.
 */
export { isIPv4 } from "../shared/ip.js";
