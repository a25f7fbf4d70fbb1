// What an actor reads from an informer: the contract between a controller
// and its cache. `Informer` implements it against the bus; the kit's
// `FakeInformer` (testing) implements it in memory, so a controller that takes
// `Cache<T>` is unit-tested without nats or redis.
import type { EventHandler } from "./informer.js";

/**
 * A cache of one kind: reads (objects are shared — copy before changing
 * them), indexes, change callbacks and the first-sync barrier.
 */
export interface Cache<T> {
  get(key: string): T | undefined;
  list(): T[];
  keys(): string[];
  /** Objects whose indexer `name` returned `value` (after {@link Cache.addIndexer}). */
  byIndex(name: string, value: string): T[];
  addIndexer(name: string, fn: (obj: T) => string[]): void;
  addEventHandler(h: EventHandler<T>): void;
  hasSynced(): boolean;
  /** Resolves once the first list is in the cache. */
  waitForSync(signal?: AbortSignal): Promise<void>;
}

/** Index name: objects by namespace. */
export const BY_NAMESPACE = "namespace";
/** Indexer for {@link BY_NAMESPACE}. */
export const namespaceOf = (o: { metadata?: { namespace: string } | undefined }): string[] => [o.metadata?.namespace ?? ""];

/** Index name: objects by the uids of their owners. */
export const BY_OWNER = "owner-uid";
/** Indexer for {@link BY_OWNER}. */
export const ownerUidsOf = (o: { metadata?: { ownerReferences: { uid: string }[] } | undefined }): string[] =>
  (o.metadata?.ownerReferences ?? []).map((r) => r.uid);
