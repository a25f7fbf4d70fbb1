import { NodeSpec, type Node } from "@choreo/kit/gen/choreo/core/v1/core";
import { invalid } from "@choreo/kit";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";
import { parseCidr, type PodCidrAllocator } from "./pod-cidr.js";

/** The pod CIDR a node holds in the allocations, or undefined (none, or outside the cluster CIDR). */
function heldBlock(node: Node, cidrs: PodCidrAllocator): string | undefined {
  const cidr = node.spec?.podCidr;
  return cidr && cidrs.isBlock(cidr) ? cidr : undefined;
}

/**
 * Nodes: capacity and allocatable are quantities; taint effects are known;
 * `spec.podCIDR` is allocated on create (node IPAM, `pod-cidr.ts`) unless the
 * node names its own, and may not change once set — Kubernetes' rule, and a
 * node's pods live in it.
 */
export function nodeStrategy(cidrs: PodCidrAllocator): Strategy<Node> {
  /** Creates whose block this api took (a create of an existing node takes nothing, so its abort gives nothing back). */
  const claimed = new WeakSet<Node>();
  return {
    async prepareCreate(node, store) {
      const name = node.metadata?.name ?? "";
      if (!name) return;
      // A Node created with no spec at all (a manifest with only a name) gets one, and with it a block.
      const spec = (node.spec ??= NodeSpec.fromPartial({}));
      // A create of a node that exists fails as AlreadyExists: its block is the stored node's, not ours to take or give back.
      if (store && (await store.storage.get("nodes", "", name))) return;
      if (!spec.podCidr) {
        if (spec.podCidrs.length > 0) return; // validate refuses podCIDRs without podCIDR
        spec.podCidr = await cidrs.allocate(name).catch((err: unknown) => {
          throw invalid("Node", name, [
            { field: "spec.podCIDR", reason: "FieldValueInvalid", message: `failed to allocate a pod CIDR: ${(err as Error).message}` },
          ]);
        });
        spec.podCidrs = [spec.podCidr];
        claimed.add(node);
        return;
      }
      if (spec.podCidrs.length === 0) spec.podCidrs = [spec.podCidr];
      if (!heldBlock(node, cidrs)) return; // invalid (validate says so) or outside the cluster CIDR: not tracked
      if (!(await cidrs.claim(spec.podCidr, name))) {
        throw invalid("Node", name, [
          {
            field: "spec.podCIDR",
            reason: "FieldValueInvalid",
            message: `Invalid value: ${JSON.stringify(spec.podCidr)}: is already allocated to another node`,
          },
        ]);
      }
      claimed.add(node);
    },
    prepareUpdate(node, old) {
      // An update that leaves the pod CIDR out keeps it (an agent's registration written before it knew its block).
      if (node.spec && old.spec?.podCidr && !node.spec.podCidr) {
        node.spec.podCidr = old.spec.podCidr;
        if (node.spec.podCidrs.length === 0) node.spec.podCidrs = [...old.spec.podCidrs];
      }
    },
    validate(node, old) {
      const e = new Errors();
      node.spec?.taints.forEach((t, i) => {
        e.required(`spec.taints[${i}].key`, t.key);
        e.oneOf(`spec.taints[${i}].effect`, t.effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"]);
      });
      for (const m of ["capacity", "allocatable"] as const) {
        for (const [k, q] of Object.entries(node.status?.[m] ?? {})) e.quantity(`status.${m}[${k}]`, q);
      }
      const spec = node.spec;
      if (spec) {
        if (spec.podCidr && !parseCidr(spec.podCidr)) e.invalid("spec.podCIDR", spec.podCidr, "must be a valid CIDR (e.g. 10.244.1.0/24)");
        if (spec.podCidrs.length > 1) e.invalid("spec.podCIDRs", spec.podCidrs, "may specify no more than one CIDR (choreo serves IPv4 single-stack)");
        if (spec.podCidrs.length > 0 && spec.podCidrs[0] !== spec.podCidr) e.invalid("spec.podCIDRs[0]", spec.podCidrs[0], "must match `podCIDR`");
        const was = old?.spec?.podCidr;
        if (was && spec.podCidr !== was) e.invalid("spec.podCIDR", spec.podCidr, 'node updates may not change podCIDR except from "" to valid');
      }
      return e.causes;
    },
    async abortCreate(node) {
      if (claimed.has(node) && node.spec?.podCidr) await cidrs.release(node.spec.podCidr, node.metadata?.name ?? "");
    },
    async afterDelete(node) {
      const cidr = heldBlock(node, cidrs);
      if (cidr) await cidrs.release(cidr, node.metadata?.name ?? "");
    },
    async restored(node) {
      // The allocation went with the store's lost tail: the node holds its block again.
      const cidr = heldBlock(node, cidrs);
      if (cidr) await cidrs.claim(cidr, node.metadata?.name ?? "");
    },
  };
}
