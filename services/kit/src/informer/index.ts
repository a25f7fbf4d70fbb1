// The informer: list + event-log watch into a cache, with handlers and indexes.
export { Informer } from "./informer.js";
export type { EventHandler, InformerOptions } from "./informer.js";
export { BY_NAMESPACE, BY_OWNER, namespaceOf, ownerUidsOf } from "./cache.js";
export type { Cache } from "./cache.js";
export { Interner, sharePod, stripPod, withoutManagedFields } from "./transform.js";
export type { PodKeep, Transform } from "./transform.js";
