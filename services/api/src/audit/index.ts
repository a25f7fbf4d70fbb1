export { openAuditLog, type AuditEntry, type AuditLog, type AuditLogOptions, type BeginOptions, type FinishOptions } from "./audit-log.js";
export type { AuditEvent } from "./event.js";
export {
  AuditPolicyError,
  DEFAULT_POLICY,
  evaluatePolicy,
  parsePolicy,
  validatePolicy,
  type Level,
  type Policy,
  type PolicyRule,
  type Stage,
} from "./policy.js";
