import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";

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
