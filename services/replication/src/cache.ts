// What the replication controllers need of an informer. An `Informer` fits;
// unit tests pass small in-memory fakes.
import type { EventHandler } from "@choreo/kit/informer";

export interface Cache<T> {
  get(key: string): T | undefined;
  list(): T[];
  byIndex(name: string, value: string): T[];
  addIndexer(name: string, fn: (obj: T) => string[]): void;
  addEventHandler(h: EventHandler<T>): void;
  waitForSync(signal?: AbortSignal): Promise<void>;
}

/** Index name: objects by namespace. */
export const BY_NAMESPACE = "namespace";
export const namespaceOf = (o: { metadata?: { namespace: string } }): string[] => [o.metadata?.namespace ?? ""];

/** Index name: objects by the uids of their owners. */
export const BY_OWNER = "owner-uid";
export const ownerUidsOf = (o: { metadata?: { ownerReferences: { uid: string }[] } }): string[] => (o.metadata?.ownerReferences ?? []).map((r) => r.uid);
