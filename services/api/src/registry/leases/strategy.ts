import type { Lease } from "@choreo/kit/gen/choreo/coordination/v1/coordination";
import type { Strategy } from "../generic/strategy.js";
import { Errors } from "../shared/validation.js";

/** Leases: leader election and node heartbeats. */
export const leaseStrategy: Strategy<Lease> = {
  validate(lease) {
    const e = new Errors();
    const d = lease.spec?.leaseDurationSeconds;
    if (d !== undefined && d <= 0) e.invalid("spec.leaseDurationSeconds", d, "must be greater than 0");
    return e.causes;
  },
};
