// The api as the page sees it: every call carries the bearer token kept in
// sessionStorage; a collection is listed then watched (chunked JSON lines)
// from the list's resourceVersion, relisted on 410 Gone, retried on errors.
import { keyOf, type KObject } from "./types.js";

const TOKEN_KEY = "choreo.token";
/** Objects per list page. */
const PAGE = 500;

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** A failed call: its HTTP code and the Status message. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Fires when the api answers 401: the page shows the sign-in form again. */
export const unauthorized = new EventTarget();

export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const t = token();
  if (t) headers.set("Authorization", `Bearer ${t}`);
  headers.set("Accept", headers.get("Accept") ?? "application/json");
  const res = await fetch(path, { ...init, headers });
  if (!res.ok) {
    let message = res.statusText;
    try {
      const body = (await res.json()) as { message?: string };
      message = body.message ?? message;
    } catch {
      // not a Status body
    }
    if (res.status === 401) unauthorized.dispatchEvent(new Event("unauthorized"));
    throw new ApiError(res.status, message);
  }
  return res;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  return (await (await apiFetch(path, signal ? { signal } : {})).json()) as T;
}

/** Lines of a streamed body as they arrive. */
export async function* lines(res: Response, signal: AbortSignal): AsyncGenerator<string> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        yield buf.slice(0, nl);
        buf = buf.slice(nl + 1);
      }
    }
    if (buf) yield buf;
  } finally {
    signal.removeEventListener("abort", stop);
  }
}

/** What a live collection tells its owner. */
export interface CollectionSink<T> {
  /** `items`: the first page of a (re)list, replacing all; `complete`: the list is whole (undefined items: just that). */
  reset(items: T[] | undefined, complete: boolean): void;
  put(item: T): void;
  remove(key: string): void;
  /** An error to show (undefined: all is well again). */
  error(message: string | undefined): void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * Lists `path` (a collection URL, with a query or not) and follows it with
 * a watch until `signal` aborts; list again after 410 or a broken stream.
 */
export async function listWatch<T extends KObject>(path: string, sink: CollectionSink<T>, signal: AbortSignal): Promise<void> {
  const sep = path.includes("?") ? "&" : "?";
  let backoff = 500;
  while (!signal.aborted) {
    try {
      // In pages: the first one drawn at once, the rest added as they come; the watch starts from the first page's revision
      // (a later page is of the same snapshot, or newer: the watch's events replayed over it are idempotent puts and removes).
      type Page = { items: T[]; metadata: { resourceVersion: string; continue?: string } };
      const first = await getJson<Page>(`${path}${sep}limit=${PAGE}`, signal);
      sink.reset(first.items, !first.metadata.continue);
      for (let cont = first.metadata.continue; cont;) {
        const page = await getJson<Page>(`${path}${sep}limit=${PAGE}&continue=${encodeURIComponent(cont)}`, signal);
        for (const i of page.items) sink.put(i);
        cont = page.metadata.continue;
        if (!cont) sink.reset(undefined, true);
      }
      sink.error(undefined);
      let rv = first.metadata.resourceVersion;
      for (;;) {
        const res = await apiFetch(`${path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`, { signal });
        let gone = false;
        for await (const line of lines(res, signal)) {
          if (!line) continue;
          const ev = JSON.parse(line) as { type: string; object: T & { code?: number } };
          if (ev.type === "ERROR") {
            gone = ev.object.code === 410;
            break;
          }
          rv = ev.object.metadata?.resourceVersion ?? rv;
          if (ev.type === "ADDED" || ev.type === "MODIFIED") sink.put(ev.object);
          else if (ev.type === "DELETED") sink.remove(keyOf(ev.object));
        }
        backoff = 500;
        if (gone || signal.aborted) break;
      }
    } catch (err) {
      if (signal.aborted) return;
      sink.error(err instanceof Error ? err.message : String(err));
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, 10_000);
    }
  }
}

/** The URL of a kind's collection: core (`/api/v1`) or a group's. */
export function collectionPath(groupVersion: string, resource: string, namespace = ""): string {
  const base = groupVersion === "v1" ? "/api/v1" : `/apis/${groupVersion}`;
  return namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource}` : `${base}/${resource}`;
}
