// Watch streams: one JSON line per event, chunked, headers flushed at once.
import { isExpired, statusOf, type WatchEvent } from "@choreo/kit";
import { statusToKubeJson, watchEventToKubeJson } from "@choreo/kit/kube-json";
import { negotiate } from "./body.js";
import { flag, intParam, param, type RequestContext } from "./context.js";
import { drained } from "./handlers-sub.js";
import { sendError } from "./respond.js";
import { encodeWatchFrame, protobufAsked, PROTOBUF_WATCH } from "./protobuf.js";
import { buildTable, includeObjectOf } from "./table.js";

/** Without timeoutSeconds a watch ends after a random 30–60 minutes (like kube-apiserver). */
export function defaultWatchTimeout(): number {
  return 1800 + Math.floor(Math.random() * 1800);
}

type Settled = { value: IteratorResult<WatchEvent> } | { error: unknown };

/**
 * GET ...?watch=true. A watch on one object (`.../pods/NAME?watch=true`) is a
 * watch of the collection by `metadata.name`.
 */
export async function watch(ctx: RequestContext): Promise<void> {
  const { info, namespace, name } = ctx.route;
  const want = negotiate(ctx.req);
  const includeObject = includeObjectOf(ctx.url);
  let fieldSelector = param(ctx.url, "fieldSelector");
  if (name) fieldSelector = [fieldSelector, `metadata.name=${name}`].filter(Boolean).join(",");
  const timeoutSeconds = intParam(ctx.url, "timeoutSeconds") || defaultWatchTimeout();
  const request = {
    resource: info.resource,
    namespace,
    labelSelector: param(ctx.url, "labelSelector"),
    fieldSelector,
    resourceVersion: param(ctx.url, "resourceVersion"),
    timeoutSeconds,
    allowBookmarks: flag(ctx.url, "allowWatchBookmarks"),
  };
  const stream = ctx.stream();
  const done = stream.done;
  // Our own deadline too, in case a handler overlooks timeoutSeconds.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutSeconds * 1000);
  timer.unref();
  const signal = AbortSignal.any([stream.signal, deadline.signal]);
  const res = ctx.res;
  try {
    const it = ctx.handlers.watch(request, signal)[Symbol.asyncIterator]();
    const settle = (p: Promise<IteratorResult<WatchEvent>>): Promise<Settled> =>
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
    // A watch the handler refuses at once (bad selector, unknown namespace…) gets its
    // Status code; 410 Expired is always a 200 with an ERROR event (clients relist on it).
    const first = settle(it.next());
    const early = await Promise.race([first, new Promise<undefined>((r) => setImmediate(() => r(undefined)))]);
    if (early && "error" in early && !isExpired(early.error)) {
      sendError(res, early.error);
      return;
    }
    // Protobuf: length-prefixed WatchEvent frames (Tables stay JSON).
    const proto = protobufAsked(res) && !want.table;
    res.writeHead(200, { "Content-Type": proto ? PROTOBUF_WATCH : "application/json", "Transfer-Encoding": "chunked", "Cache-Control": "no-cache, private" });
    res.flushHeaders();

    const line = async (ev: WatchEvent): Promise<void> => {
      let out: { type: string; object: unknown } = watchEventToKubeJson(ev);
      if (want.table && ev.type !== "ERROR" && ev.object) {
        const rv = String(
          ((out.object as Record<string, unknown>)["metadata"] as { resourceVersion?: string } | undefined)?.resourceVersion ?? ev.revision ?? "",
        );
        const objects = ev.type === "BOOKMARK" ? [] : [out.object];
        out = { type: out.type, object: await buildTable(info, objects, { includeObject, resourceVersion: rv }, want.table) };
      }
      const chunk = proto ? encodeWatchFrame(out.type, out.object as Record<string, unknown>) : `${JSON.stringify(out)}\n`;
      if (!res.write(chunk)) await drained(ctx, signal);
    };
    const errorLine = (err: unknown) => {
      const status = statusToKubeJson(statusOf(err));
      res.write(proto ? encodeWatchFrame("ERROR", status) : `${JSON.stringify({ type: "ERROR", object: status })}\n`);
    };

    try {
      let r = await first;
      while (!signal.aborted && !res.writableEnded) {
        if ("error" in r) {
          errorLine(r.error);
          break;
        }
        if (r.value.done) break;
        await line(r.value.value);
        if (r.value.value.type === "ERROR") break;
        r = await settle(it.next());
      }
    } finally {
      void it.return?.().catch(() => undefined);
    }
    if (!res.writableEnded) res.end();
  } catch (err) {
    if (!res.headersSent) sendError(res, err);
    else if (!res.writableEnded) res.end();
    ctx.log.debug({ err, resource: info.resource }, "watch failed");
  } finally {
    clearTimeout(timer);
    done();
  }
}
