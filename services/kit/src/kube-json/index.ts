// Kubernetes JSON for choreo's protobuf objects: exact field names, omitted
// zero values, int-or-string, strict decoding with Kubernetes' wording.
export {
  toKubeJson,
  fromKubeJson,
  listToKubeJson,
  statusToKubeJson,
  watchEventToKubeJson,
  messageToKubeJson,
  messageFromKubeJson,
  kindOfKubeJson,
} from "./codec.js";
export type { KubeJson, DecodeOptions } from "./codec.js";
export { planOf } from "./schema.js";
export type { FieldPlan, MessagePlan } from "./schema.js";
