import { parseQuantity, quantityFromNano } from "@choreo/kit/apimachinery";

/** What a real node keeps for the system and itself (the kubelet's --system-reserved plus --kube-reserved). */
export interface Reserved {
  /** CPU in millicores. */
  cpuMilli: bigint;
  memoryBytes: bigint;
}

/** The default reserve: 100m of CPU and 256Mi of memory (for the agent, the control plane's share and the OS). */
export const DEFAULT_RESERVED = "cpu=100m,memory=256Mi";

/**
 * Parses a reserve as the kubelet's `--system-reserved` takes it
 * (`cpu=100m,memory=256Mi`; either may be left out: zero). Throws on an
 * unknown resource or a malformed quantity.
 */
export function parseReserved(s: string): Reserved {
  const out: Reserved = { cpuMilli: 0n, memoryBytes: 0n };
  for (const part of s.split(",").map((p) => p.trim())) {
    if (!part) continue;
    const [k, v] = part.split("=", 2).map((x) => x.trim());
    if (!v) throw new Error(`reserved resources are name=quantity pairs (cpu=100m,memory=256Mi), not ${JSON.stringify(part)}`);
    const q = parseQuantity(v);
    if (q.nano < 0n) throw new Error(`a reserved ${k ?? ""} cannot be negative`);
    if (k === "cpu") out.cpuMilli = q.milli;
    else if (k === "memory") out.memoryBytes = q.value;
    else throw new Error(`only cpu and memory can be reserved, not ${JSON.stringify(k)}`);
  }
  return out;
}

/** A node's capacity and allocatable cpu and memory as quantities. */
export interface MachineResources {
  capacity: { cpu: string; memory: string };
  allocatable: { cpu: string; memory: string };
}

/**
 * The machine's resources as the kubelet reports them: capacity is every
 * core and all memory (in Ki), allocatable is capacity less the reserve
 * (never below zero).
 */
export function machineResources(cores: number, memoryBytes: bigint, reserved: Reserved): MachineResources {
  const memKi = memoryBytes / 1024n;
  const allocMilli = BigInt(cores) * 1000n - reserved.cpuMilli;
  const allocKi = memKi - (reserved.memoryBytes + 1023n) / 1024n;
  const cpu = (milli: bigint): string => quantityFromNano((milli > 0n ? milli : 0n) * 1_000_000n).toString();
  const mem = (ki: bigint): string => (ki > 0n ? `${ki}Ki` : "0");
  return {
    capacity: { cpu: String(cores), memory: mem(memKi) },
    allocatable: { cpu: cpu(allocMilli), memory: mem(allocKi) },
  };
}
