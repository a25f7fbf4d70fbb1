import { emptyMeta, isConflict, isNotFound, isAlreadyExists } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";

/** The namespace of node heartbeats. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** Kubernetes' MicroTime: RFC 3339 with microseconds. */
export function microTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * The node's heartbeat: `kube-node-lease/<node>`, held by the node, renewed
 * by `renew()`. The last written Lease is kept, so a renewal is one update
 * (no read); a conflict or a missing lease means read or create next time.
 */
export class NodeLease {
  private lease: Lease | undefined;
  /** Successful renewals (tests, metrics). */
  renewals = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly node: string,
    private readonly durationSeconds: number,
    private readonly nodeUid = "",
  ) {}

  async renew(): Promise<void> {
    const leases = this.client.typed("lease");
    const now = microTime();
    try {
      this.lease ??= await this.getOrCreate(now);
      const next = structuredClone(this.lease);
      next.spec = {
        ...next.spec,
        holderIdentity: this.node,
        leaseDurationSeconds: this.durationSeconds,
        renewTime: now,
        acquireTime: next.spec?.acquireTime || now,
      };
      this.lease = await leases.update(next);
      this.renewals++;
    } catch (err) {
      this.lease = undefined;
      if (!isConflict(err) && !isNotFound(err)) throw err;
    }
  }

  private async getOrCreate(now: string): Promise<Lease> {
    const leases = this.client.typed("lease");
    try {
      return await leases.get(NODE_LEASE_NAMESPACE, this.node);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const owner = this.nodeUid ? [{ apiVersion: "v1", kind: "Node", name: this.node, uid: this.nodeUid, controller: false, blockOwnerDeletion: false }] : [];
    try {
      return await leases.create({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: emptyMeta({ name: this.node, namespace: NODE_LEASE_NAMESPACE, ownerReferences: owner }),
        spec: { holderIdentity: this.node, leaseDurationSeconds: this.durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      return leases.get(NODE_LEASE_NAMESPACE, this.node);
    }
  }
}
