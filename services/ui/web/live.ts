// Live collections: a map kept by listWatch, and a hook that re-renders its
// component at most once per animation frame however many events arrive.
import { useEffect, useState } from "preact/hooks";
import { listWatch } from "./api.js";
import { keyOf, type KObject } from "./types.js";

/** The state of one watched collection. */
export class Collection<T extends KObject> {
  readonly items = new Map<string, T>();
  /** Set once the first list has arrived. */
  synced = false;
  error: string | undefined;
  /** Bumped on every change: what components compare. */
  version = 0;
  private readonly listeners = new Set<() => void>();
  private frame = 0;

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private changed(): void {
    this.version++;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      for (const fn of this.listeners) fn();
    });
  }

  /** Follows `path` until `signal` aborts. */
  follow(path: string, signal: AbortSignal): void {
    void listWatch<T>(
      path,
      {
        reset: (items, complete) => {
          if (items) {
            this.items.clear();
            for (const i of items) this.items.set(keyOf(i), i);
          }
          this.synced ||= complete;
          this.changed();
        },
        put: (i) => {
          this.items.set(keyOf(i), i);
          this.changed();
        },
        remove: (k) => {
          this.items.delete(k);
          this.changed();
        },
        error: (e) => {
          if (e === this.error) return;
          this.error = e;
          this.changed();
        },
      },
      signal,
    );
  }
}

/** A collection following `path` while the component is mounted (null path: none). */
export function useCollection<T extends KObject>(path: string | null): Collection<T> {
  const [c, setC] = useState(() => new Collection<T>());
  const [, setVersion] = useState(0);
  useEffect(() => {
    const fresh = new Collection<T>();
    setC(fresh);
    if (path === null) return;
    const ac = new AbortController();
    const off = fresh.subscribe(() => setVersion(fresh.version));
    fresh.follow(path, ac.signal);
    return () => {
      off();
      ac.abort();
    };
  }, [path]);
  return c;
}
