import { randomInt } from "node:crypto";
import type { Allocations } from "../../storage/object-storage.js";

/** Kubernetes' default node port range. */
export const NODE_PORT_RANGE = { min: 30000, max: 32767 } as const;

/**
 * Allocates Service node ports, unique across api replicas: a port is claimed
 * in the storage's allocations (like ClusterIPs) and released on delete.
 */
export class NodePortAllocator {
  constructor(
    private readonly allocations: Allocations,
    private readonly range: { min: number; max: number } = NODE_PORT_RANGE,
  ) {}

  /** Whether `port` is inside the range. */
  contains(port: number): boolean {
    return Number.isInteger(port) && port >= this.range.min && port <= this.range.max;
  }

  /** The range as Kubernetes words it in errors: `30000-32767`. */
  describe(): string {
    return `${this.range.min}-${this.range.max}`;
  }

  /** Takes a free port for `owner` (namespace/name); throws when the range is full. */
  async allocate(owner: string): Promise<number> {
    const size = this.range.max - this.range.min + 1;
    const start = randomInt(size);
    for (let i = 0; i < size; i++) {
      const port = this.range.min + ((start + i) % size);
      if (await this.claim(port, owner)) return port;
    }
    throw new Error("range is full");
  }

  /** Takes a specific port; false when someone else holds it. */
  async claim(port: number, owner: string): Promise<boolean> {
    return this.allocations.claim("node-port", String(port), owner);
  }

  async release(port: number, owner: string): Promise<void> {
    await this.allocations.release("node-port", String(port), owner);
  }
}
