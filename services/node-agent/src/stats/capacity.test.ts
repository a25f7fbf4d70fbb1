import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RESERVED, machineResources, parseReserved } from "./capacity.js";

describe("a real node's capacity and allocatable", () => {
  it("parses the kubelet's reserve format", () => {
    assert.deepEqual(parseReserved(DEFAULT_RESERVED), { cpuMilli: 100n, memoryBytes: 256n * 1024n * 1024n });
    assert.deepEqual(parseReserved("memory=1Gi"), { cpuMilli: 0n, memoryBytes: 1n << 30n });
    assert.deepEqual(parseReserved(""), { cpuMilli: 0n, memoryBytes: 0n });
    assert.throws(() => parseReserved("gpu=1"), /only cpu and memory/);
    assert.throws(() => parseReserved("cpu"), /name=quantity/);
    assert.throws(() => parseReserved("cpu=lots"), /regular expression/);
  });

  it("capacity is the machine; allocatable keeps the reserve back", () => {
    const r = machineResources(2, 24n * 1024n * 1024n * 1024n, parseReserved("cpu=100m,memory=256Mi"));
    assert.deepEqual(r.capacity, { cpu: "2", memory: `${24 * 1024 * 1024}Ki` });
    assert.deepEqual(r.allocatable, { cpu: "1900m", memory: `${24 * 1024 * 1024 - 256 * 1024}Ki` });
  });

  it("no reserve: allocatable equals capacity; a reserve larger than the machine leaves zero", () => {
    const none = machineResources(4, 8n << 30n, parseReserved(""));
    assert.deepEqual(none.allocatable, { cpu: "4", memory: none.capacity.memory });
    assert.deepEqual(machineResources(1, 1n << 20n, parseReserved("cpu=2,memory=1Gi")).allocatable, { cpu: "0", memory: "0" });
  });
});
