import type { Event, Namespace, Node } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";
import { nowRfc3339 } from "@choreo/kit/apimachinery";
import type { Strategy } from "./strategy.js";
import { Errors } from "./validation.js";

/** Namespaces: Active at create; the registry purges their content on delete. */
export const namespaceStrategy: Strategy<Namespace> = {
  prepareCreate(ns) {
    ns.spec ??= { finalizers: [] };
    ns.status = { phase: "Active" };
    if (ns.metadata) ns.metadata.labels["kubernetes.io/metadata.name"] = ns.metadata.name;
  },
  prepareUpdate(ns, old) {
    ns.status = old.status;
    if (ns.metadata) ns.metadata.labels["kubernetes.io/metadata.name"] = ns.metadata.name;
  },
  validate: () => [],
};

/** Nodes: capacity and allocatable are quantities; taint effects are known. */
export const nodeStrategy: Strategy<Node> = {
  validate(node) {
    const e = new Errors();
    node.spec?.taints.forEach((t, i) => {
      e.required(`spec.taints[${i}].key`, t.key);
      e.oneOf(`spec.taints[${i}].effect`, t.effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"]);
    });
    for (const m of ["capacity", "allocatable"] as const) {
      for (const [k, q] of Object.entries(node.status?.[m] ?? {})) e.quantity(`status.${m}[${k}]`, q);
    }
    return e.causes;
  },
};

/** Leases: leader election and node heartbeats. */
export const leaseStrategy: Strategy<Lease> = {
  validate(lease) {
    const e = new Errors();
    const d = lease.spec?.leaseDurationSeconds;
    if (d !== undefined && d <= 0) e.invalid("spec.leaseDurationSeconds", d, "must be greater than 0");
    return e.causes;
  },
};

/** Events: timestamps and count defaulted, an involved object required. */
export const eventStrategy: Strategy<Event> = {
  prepareCreate(ev) {
    const now = nowRfc3339();
    ev.firstTimestamp ||= now;
    ev.lastTimestamp ||= ev.firstTimestamp;
    ev.count ||= 1;
    ev.type ||= "Normal";
  },
  validate(ev) {
    const e = new Errors();
    e.required("involvedObject", ev.involvedObject?.kind || ev.involvedObject?.name);
    e.oneOf("type", ev.type, ["Normal", "Warning"]);
    if (ev.involvedObject?.namespace && ev.metadata && ev.involvedObject.namespace !== ev.metadata.namespace) {
      e.invalid("involvedObject.namespace", ev.involvedObject.namespace, "does not match event.namespace");
    }
    return e.causes;
  },
};
