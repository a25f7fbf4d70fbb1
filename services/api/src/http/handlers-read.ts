// GET of one object or of a collection, as JSON or as a Table.
import { toKubeJson, listToKubeJson } from "@choreo/kit/kube-json";
import { negotiate } from "./body.js";
import { intParam, param, type RequestContext } from "./context.js";
import { sendJson } from "./respond.js";
import { buildTable, includeObjectOf } from "./table.js";

/** GET .../pods/NAME (or .../NAME/status: the same object). */
export async function getObject(ctx: RequestContext): Promise<void> {
  const { info, namespace, name } = ctx.route;
  const want = negotiate(ctx.req);
  const o = toKubeJson(await ctx.handlers.get({ resource: info.resource, namespace, name, resourceVersion: param(ctx.url, "resourceVersion") }));
  if (want.table) {
    const rv = String((o["metadata"] as { resourceVersion?: string } | undefined)?.resourceVersion ?? "");
    sendJson(ctx.res, 200, await buildTable(info, [o], { includeObject: includeObjectOf(ctx.url), resourceVersion: rv }, want.table));
    return;
  }
  sendJson(ctx.res, 200, o);
}

/** GET .../pods (paged by limit/continue; selectors passed on). */
export async function listObjects(ctx: RequestContext): Promise<void> {
  const { info, namespace } = ctx.route;
  const want = negotiate(ctx.req);
  const list = await ctx.handlers.list({
    resource: info.resource,
    namespace,
    labelSelector: param(ctx.url, "labelSelector"),
    fieldSelector: param(ctx.url, "fieldSelector"),
    limit: intParam(ctx.url, "limit") ?? 0,
    continue: param(ctx.url, "continue"),
    resourceVersion: param(ctx.url, "resourceVersion"),
    resourceVersionMatch: param(ctx.url, "resourceVersionMatch"),
  });
  const json = listToKubeJson(info, list);
  if (want.table) {
    const opts = {
      includeObject: includeObjectOf(ctx.url),
      resourceVersion: list.metadata?.resourceVersion ?? "",
      ...(list.metadata?.continue ? { continue: list.metadata.continue } : {}),
    };
    sendJson(ctx.res, 200, await buildTable(info, json["items"] as unknown[], opts, want.table));
    return;
  }
  sendJson(ctx.res, 200, json);
}
