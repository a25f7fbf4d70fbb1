import type { Endpoints, Service } from "@choreo/kit/gen/choreo/core/v1/core";

/**
 * The read side of a cache the responder looks names up in. A kit
 * `Informer` satisfies it, so the agent can share the informers of its
 * service proxy with the DNS responder.
 */
export interface Store<T> {
  /** The object with key `namespace/name`, if cached. */
  get(key: string): T | undefined;
  list(): T[];
  /** False while the first list is not in yet (then cluster names answer SERVFAIL). */
  hasSynced?(): boolean;
}

/** What `answer` needs to know about the cluster. */
export interface DnsSnapshot {
  service(namespace: string, name: string): Service | undefined;
  endpoints(namespace: string, name: string): Endpoints | undefined;
  /** Whether any Service lives in the namespace (`<ns>.svc.<domain>` exists). */
  hasNamespace(namespace: string): boolean;
}

/** A snapshot reading through to the Services and Endpoints caches. */
export function storeSnapshot(services: Store<Service>, endpoints: Store<Endpoints>): DnsSnapshot {
  return {
    service: (ns, name) => services.get(`${ns}/${name}`),
    endpoints: (ns, name) => endpoints.get(`${ns}/${name}`),
    hasNamespace: (ns) => services.list().some((s) => s.metadata?.namespace === ns),
  };
}

/** Whether both caches hold their first list (a store without `hasSynced` counts as synced). */
export function storesSynced(...stores: Store<unknown>[]): boolean {
  return stores.every((s) => s.hasSynced?.() ?? true);
}

/** A snapshot over plain arrays, for tests and tools. */
export function staticSnapshot(services: Service[], endpoints: Endpoints[] = []): DnsSnapshot {
  const key = (o: { metadata?: { namespace: string; name: string } }): string => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
  const svc = new Map(services.map((s) => [key(s), s]));
  const eps = new Map(endpoints.map((e) => [key(e), e]));
  return storeSnapshot({ get: (k) => svc.get(k), list: () => [...svc.values()] }, { get: (k) => eps.get(k), list: () => [...eps.values()] });
}
