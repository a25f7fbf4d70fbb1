// The kit's root: the object model (kinds table, wrap/unwrap) and the api's
// errors. Other areas are imported by subpath: @choreo/kit/bus, /client, …
export {
  KINDS,
  GC_OWNER_KINDS,
  kindByResource,
  kindByCase,
  kindByApiVersionKind,
  kindByUserName,
  unwrap,
  wrap,
  kindOf,
  metaOf,
  emptyMeta,
  keyOf,
  splitKey,
} from "./api/kinds.js";
export { selectableFields } from "./api/fields.js";
export type { KindCase, KindValue, AnyObject, KindInfo } from "./api/kinds.js";
export {
  ApiError,
  Reason,
  failure,
  notFound,
  alreadyExists,
  conflict,
  invalid,
  fieldError,
  badRequest,
  expired,
  unauthorized,
  forbidden,
  tooLarge,
  methodNotAllowed,
  unsupportedMediaType,
  timeout,
  unavailable,
  internal,
  statusOf,
  isNotFound,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isExpired,
  BindingRefusal,
  bindingRefused,
  bindingRefusalOf,
} from "./api/errors.js";
export type { Object as ApiObject, ObjectList, WatchEvent } from "./gen/choreo/api/v1/api.js";
export type { Status, StatusCause, ObjectMeta, ListMeta, OwnerReference, LabelSelector, DeleteOptions } from "./gen/choreo/meta/v1/meta.js";
export { tolerates, untoleratedTaints, matchesNodeSelector } from "./api/scheduling.js";
export { DISRUPTION_TARGET, setPodCondition, withPodCondition } from "./api/pod-conditions.js";
export type { ConditionChange } from "./api/pod-conditions.js";
