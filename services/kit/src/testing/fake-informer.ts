// An informer stand-in for unit tests of actors (pure logic, no bus): a map
// with indexes and event handlers behind the informer's `Cache<T>` contract.
// `put` and `remove` play the event log; a transform, given, is applied to
// what they get, as the real informer's.
import { keyOf } from "../api/kinds.js";
import type { Cache } from "../informer/cache.js";
import type { EventHandler } from "../informer/informer.js";
import type { Transform } from "../informer/transform.js";

type Meta = { metadata?: { namespace: string; name: string } | undefined };

export class FakeInformer<T extends Meta> implements Cache<T> {
  readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, (o: T) => string[]>();
  readonly handlers: EventHandler<T>[] = [];

  /** `transform`: what the cache keeps of each object put or removed (the actor's informer transform). */
  constructor(protected readonly transform: Transform<T> = (o) => o) {}

  get(key: string): T | undefined {
    return this.items.get(key);
  }
  list(): T[] {
    return [...this.items.values()];
  }
  keys(): string[] {
    return [...this.items.keys()];
  }
  byIndex(name: string, value: string): T[] {
    const fn = this.indexers.get(name);
    return [...this.items.values()].filter((o) => fn?.(o).includes(value));
  }
  addIndexer(name: string, fn: (o: T) => string[]): void {
    this.indexers.set(name, fn);
  }
  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
  }
  hasSynced(): boolean {
    return true;
  }
  waitForSync(): Promise<void> {
    return Promise.resolve();
  }
  /** Adds or replaces an object, calling onAdd or onUpdate. */
  put(whole: T): void {
    const o = this.transform(whole);
    const k = keyOf(o.metadata ?? { namespace: "", name: "" });
    const old = this.items.get(k);
    this.items.set(k, o);
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, o);
      else h.onAdd?.(o);
    }
  }
  /** Removes an object (by key or by value), calling onDelete with the last state. */
  remove(keyOrObject: string | T): void {
    const k = typeof keyOrObject === "string" ? keyOrObject : keyOf(keyOrObject.metadata ?? { namespace: "", name: "" });
    const old = this.items.get(k) ?? (typeof keyOrObject === "string" ? undefined : this.transform(keyOrObject));
    this.items.delete(k);
    if (old) for (const h of this.handlers) h.onDelete?.(old);
  }
}
