// Pod Security Admission: the checks (checks.ts), the namespace policy
// (policy.ts) and the admission of pods, workloads and namespaces (admission.ts).
import type { KindInfo } from "@choreo/kit";
import type { Strategies, Strategy } from "../../generic/strategy.js";
import { PodSecurityAdmission } from "./admission.js";
import type { PodSecurityConfig } from "./policy.js";

export { PodSecurityAdmission, AUDIT_VIOLATIONS } from "./admission.js";
export { DEFAULT_POD_SECURITY, podSecurityConfigFromEnv, type PodSecurityConfig } from "./policy.js";

/** `strategies` with Pod Security's admit hooks on pods, namespaces and workloads (copies: the shared strategies stay as they are). */
export function withPodSecurity(strategies: Strategies, config: PodSecurityConfig): Strategies {
  const out: Strategies = { ...strategies };
  for (const [kind, admit] of Object.entries(new PodSecurityAdmission(config).admitters())) {
    const s = out[kind as KindInfo["case"]];
    if (s) out[kind as KindInfo["case"]] = { ...s, admit: admit as Strategy["admit"] };
  }
  return out;
}
