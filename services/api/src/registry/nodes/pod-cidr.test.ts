// Node IPAM: a node without spec.podCIDR gets a free block of the cluster
// CIDR; a named block is kept when free and refused when another node holds
// it; a create of an existing node takes and gives back nothing; a deleted
// node's block is free again; the block never changes once set.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, unwrap, wrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { createRegistry, type Registry } from "../index.js";
import { MemoryStore } from "../../storage/memory-store.js";
import { PodCidrAllocator, parseCidr } from "./pod-cidr.js";

function node(name: string, podCIDR?: string): Node {
  return unwrap(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name }, spec: podCIDR ? { podCIDR } : {} })) as Node;
}

async function create(r: Registry, n: Node): Promise<Node> {
  return unwrap(await r.create({ object: wrap("node", n), dryRun: false })) as Node;
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, `refused with an ApiError, got ${String(err)}`);
  return err;
}

function registry(store = new MemoryStore(), clusterCidr = "10.244.0.0/16", nodeCidrMaskSize = 24): Registry {
  return createRegistry({ store, serviceCidr: "10.96.0.0/16", clusterCidr, nodeCidrMaskSize, log: silentLogger() });
}

describe("node IPAM", () => {
  it("gives each new node its own block, round the range, unique across api replicas sharing a store", async () => {
    const store = new MemoryStore();
    const [a, b] = [registry(store), registry(store)];
    const cidrs = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const n = await create(i % 2 ? a : b, node(`n${i}`));
      assert.match(n.spec!.podCidr, /^10\.244\.\d+\.0\/24$/);
      assert.deepEqual(n.spec!.podCidrs, [n.spec!.podCidr]);
      cidrs.add(n.spec!.podCidr);
    }
    assert.equal(cidrs.size, 6, "no block twice");
  });

  it("gives a block to a node created with no spec at all (a manifest with only a name)", async () => {
    const r = registry();
    const bare = unwrap(fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "bare" } })) as Node;
    const n = await create(r, bare);
    assert.match(n.spec!.podCidr, /^10\.244\.\d+\.0\/24$/);
    assert.deepEqual(n.spec!.podCidrs, [n.spec!.podCidr]);
  });

  it("keeps a free block a node names, refuses one another node holds (422, nothing written), ignores one outside the range", async () => {
    const r = registry();
    assert.equal((await create(r, node("a", "10.244.7.0/24"))).spec!.podCidr, "10.244.7.0/24");
    const err = await refusal(create(r, node("b", "10.244.7.0/24")));
    assert.equal(err.status.code, 422);
    assert.match(err.status.message, /spec\.podCIDR.*already allocated to another node/);
    await refusal(r.get({ resource: "nodes", namespace: "", name: "b" }));
    assert.equal((await create(r, node("c", "10.250.0.0/24"))).spec!.podCidr, "10.250.0.0/24", "outside the cluster CIDR: not tracked");
    const bad = await refusal(create(r, node("d", "10.244.300.0/24")));
    assert.equal(bad.status.code, 422);
    assert.match(bad.status.message, /spec\.podCIDR.*valid CIDR/);
  });

  it("a create of an existing node (an agent's restart) keeps the stored node's block; a deleted node's block is free again", async () => {
    const r = registry(new MemoryStore(), "10.244.0.0/29", 30);
    const first = await create(r, node("a"));
    const again = await refusal(create(r, node("a", first.spec!.podCidr)));
    assert.equal(again.status.reason, "AlreadyExists");
    // The range holds two blocks: the second node must not get a's.
    const b = await create(r, node("b"));
    assert.notEqual(b.spec!.podCidr, first.spec!.podCidr, "a's block was not given back by the failed create");
    const full = await refusal(create(r, node("c")));
    assert.match(full.status.message, /no pod CIDR left in 10\.244\.0\.0\/29/);
    await r.delete({ resource: "nodes", namespace: "", name: "a", options: undefined });
    assert.equal((await create(r, node("c"))).spec!.podCidr, first.spec!.podCidr);
  });

  it("an update without the block keeps it; one that changes it is refused", async () => {
    const r = registry();
    const n = await create(r, node("a"));
    const blank = structuredClone(n);
    blank.spec!.podCidr = "";
    blank.spec!.podCidrs = [];
    const kept = unwrap(await r.update({ object: wrap("node", blank), dryRun: false })) as Node;
    assert.equal(kept.spec!.podCidr, n.spec!.podCidr);
    const moved = structuredClone(kept);
    moved.spec!.podCidr = "10.244.99.0/24";
    moved.spec!.podCidrs = ["10.244.99.0/24"];
    const err = await refusal(r.update({ object: wrap("node", moved), dryRun: false }));
    assert.match(err.status.message, /may not change podCIDR/);
  });

  it("parses CIDRs strictly", () => {
    assert.deepEqual(parseCidr("10.244.1.0/24"), { ip: 0x0af40100, base: 0x0af40100, prefix: 24 });
    for (const bad of ["10.244.1.0", "10.244.1.0/33", "010.244.1.0/24", "10.244.1.0/+4", "a/24"]) assert.equal(parseCidr(bad), undefined, bad);
    assert.throws(() => new PodCidrAllocator(new MemoryStore(), "10.244.0.0/16", 12), /mask size/);
    const alloc = new PodCidrAllocator(new MemoryStore(), "10.244.0.0/16");
    assert.equal(alloc.isBlock("10.244.3.0/24"), true);
    assert.equal(alloc.isBlock("10.244.3.1/24"), false, "not a network address");
    assert.equal(alloc.isBlock("10.245.3.0/24"), false);
  });
});
