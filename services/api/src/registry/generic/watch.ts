import { badRequest, expired, unwrap, type ApiError } from "@choreo/kit";
import { consumeEvents, resourceFilter } from "@choreo/kit/bus";
import type { WatchEvent, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { WatchCache } from "../../storage/watch-cache.js";
import { changeOf, parseSelection, selectChange, type Selection } from "./selection.js";
import type { GenericStore } from "./store.js";

/** Where watches read changes: the watch cache, then the event log. */
export interface WatchSource {
  cache: WatchCache;
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** Told when a watch on a resource opens (+1) and ends (-1): the watchers gauge. */
  watchers?: { inc(labels: { resource: string }): void; dec(labels: { resource: string }): void };
}

/** See ApiHandlers.watch: a list first (no resourceVersion or "0"), then the changes after it. */
export async function* watchObjects(store: GenericStore, source: WatchSource | undefined, req: WatchRequest, signal: AbortSignal): AsyncGenerator<WatchEvent> {
  const info = store.resolve(req.resource);
  const sel = parseSelection(info, req.namespace, req.labelSelector, req.fieldSelector);
  if (!source) throw new Error("watch is not attached");
  const labels = { resource: info.resource };
  source.watchers?.inc(labels);
  try {
    yield* watchFrom(store, source, sel, req, signal);
  } finally {
    source.watchers?.dec(labels);
  }
}

async function* watchFrom(store: GenericStore, source: WatchSource, sel: Selection, req: WatchRequest, signal: AbortSignal): AsyncGenerator<WatchEvent> {
  const rv = req.resourceVersion;
  if (rv && !/^\d+$/.test(rv)) throw badRequest(`invalid resource version "${rv}"`);
  const timeout = req.timeoutSeconds > 0 ? AbortSignal.timeout(Number(req.timeoutSeconds) * 1000) : undefined;
  const stop = timeout ? AbortSignal.any([signal, timeout]) : signal;
  let from: number;
  if (!rv || rv === "0") {
    const list = await store.list({
      resource: req.resource,
      namespace: req.namespace,
      labelSelector: req.labelSelector,
      fieldSelector: req.fieldSelector,
      limit: 0,
      continue: "",
      // "0": the initial state from the object cache, at its revision (Kubernetes' watch from the cacher); "": a consistent list.
      resourceVersion: rv === "0" ? "0" : undefined,
    });
    for (const o of list.items)
      yield {
        type: "ADDED",
        object: o,
        status: undefined,
        revision: Number(unwrap(o).metadata?.resourceVersion ?? 0),
        prevLabels: {},
        prevFields: {},
        hasPrev: false,
      };
    from = Number(list.metadata?.resourceVersion ?? 0);
  } else {
    from = Number(rv);
  }
  // The log and the cache hold stored forms (sealed Secrets): opened for the client.
  for await (const ev of changesAfter(source, sel, from, stop)) yield store.openEvent(ev);
}

async function* changesAfter(source: WatchSource, sel: Selection, from: number, stop: AbortSignal): AsyncGenerator<WatchEvent> {
  if (source.cache.canServe(from)) {
    // Only this resource's changes (and namespace's, when the watch has one) are handed over: the other kinds'
    // are skipped in the cache's loop instead of going through this generator, each a promise, for every watcher.
    const it = source.cache.since(from, stop, { resource: sel.info.resource, ...(sel.namespace ? { namespace: sel.namespace } : {}) });
    for (;;) {
      const r = await it.next();
      if (r.done) {
        if (r.value === "expired") yield errorEvent(expired(`too old resource version: ${from} (watcher fell behind)`));
        return;
      }
      const ev = selectChange(sel, r.value);
      if (ev) yield ev;
    }
  }
  // Older than memory holds: read the event log itself (410 if it is gone there too).
  for await (const raw of consumeEvents({
    nc: source.nc,
    jsm: source.jsm,
    filter: resourceFilter(sel.info.resource, sel.namespace),
    fromRevision: from,
    signal: stop,
  })) {
    const c = changeOf(raw);
    const ev = c && selectChange(sel, c);
    if (ev) yield ev;
  }
}

function errorEvent(err: ApiError): WatchEvent {
  return { type: "ERROR", object: undefined, status: err.status, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false };
}
