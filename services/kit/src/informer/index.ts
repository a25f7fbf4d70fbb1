// The informer: list + event-log watch into a cache, with handlers and indexes.
export { Informer, byNamespace } from "./informer.js";
export type { EventHandler, InformerOptions } from "./informer.js";
