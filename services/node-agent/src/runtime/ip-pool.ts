/** An IPv4 address as a number. */
export function ipToNumber(ip: string): number {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: ${ip}`);
  return (((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!) >>> 0;
}

/** A number as an IPv4 address. */
export function numberToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

/**
 * Pod IPs from a node's pod CIDR: the network address and the first host
 * (the node's bridge, by convention) are never handed out, nor is broadcast.
 * Handed out round-robin, so an address is not reused right after its pod
 * went (a stale endpoint would then point at the wrong pod).
 */
export class IpPool {
  private readonly first: number;
  private readonly last: number;
  private readonly used = new Set<number>();
  private next: number;

  constructor(readonly cidr: string) {
    const [base, bits] = cidr.split("/");
    const prefix = Number(bits);
    if (!base || !Number.isInteger(prefix) || prefix < 8 || prefix > 30) throw new Error(`not an IPv4 CIDR between /8 and /30: ${cidr}`);
    const size = 2 ** (32 - prefix);
    const network = ipToNumber(base) - (ipToNumber(base) % size);
    this.first = network + 2;
    this.last = network + size - 2;
    this.next = this.first;
  }

  /** The number of addresses pods can get. */
  get capacity(): number {
    return this.last - this.first + 1;
  }

  get size(): number {
    return this.used.size;
  }

  /** Hands out a free address; throws when the CIDR is exhausted. */
  allocate(): string {
    const n = this.capacity;
    for (let i = 0; i < n; i++) {
      const candidate = this.first + ((this.next - this.first + i) % n);
      if (!this.used.has(candidate)) {
        this.used.add(candidate);
        this.next = candidate + 1 > this.last ? this.first : candidate + 1;
        return numberToIp(candidate);
      }
    }
    throw new Error(`pod CIDR ${this.cidr} is exhausted`);
  }

  /** Marks an address as used (adoption); false when it is outside the CIDR or taken. */
  reserve(ip: string): boolean {
    let n: number;
    try {
      n = ipToNumber(ip);
    } catch {
      return false;
    }
    if (n < this.first || n > this.last || this.used.has(n)) return false;
    this.used.add(n);
    return true;
  }

  release(ip: string): void {
    try {
      this.used.delete(ipToNumber(ip));
    } catch {
      // not one of ours
    }
  }
}
