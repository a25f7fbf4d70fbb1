// Kubernetes' apimachinery for choreo: selectors, quantities, names, patches, durations.
export {
  parseLabelSelector,
  makeSelector,
  selectorFromSet,
  selectorFromLabelSelector,
  validateLabelKey,
  validateLabelValue,
  validateLabels,
  validateAnnotations,
  TOTAL_ANNOTATION_SIZE_LIMIT,
  MAX_SELECTOR_LENGTH,
  SelectorParseError,
} from "./labels.js";
export type { LabelSelector, Requirement, Operator } from "./labels.js";
export { parseFieldSelector, makeFieldSelector, escapeFieldValue, assertSupportedFields, FieldSelectorError } from "./fields.js";
export type { FieldSelector, FieldRequirement } from "./fields.js";
export { parseQuantity, quantityFromNano, compareQuantities, addQuantities, milliCpu, bytes, QuantityParseError, MAX_QUANTITY_LENGTH } from "./quantity.js";
export type { Quantity, QuantityFormat } from "./quantity.js";
export { validateDns1123Subdomain, validateDns1123Label, validateDns1035Label, validateQualifiedName, generateName } from "./names.js";
export { applyMergePatch, applyJsonPatch, applyStrategicMergePatch, kubeStrategicSchema, PatchError } from "./patch.js";
export type { JsonValue, JsonPatchOperation, StrategicSchema } from "./patch.js";
export { humanDuration, ageOf, nowRfc3339 } from "./duration.js";
export { parseCronSchedule, timeZoneError, localZone, wallClock, zonedDate, zoneOffset, CronParseError } from "./cron.js";
export type { CronSchedule, Wall } from "./cron.js";
