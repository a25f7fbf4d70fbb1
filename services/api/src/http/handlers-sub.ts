// Subresources other than status: scale (autoscaling/v1 Scale), binding, eviction, log, serviceaccounts/token.
import { ApiError, badRequest, failure, isConflict, methodNotAllowed, statusOf, unsupportedMediaType } from "@choreo/kit";
import { applyJsonPatch, applyMergePatch, PatchError, type JsonValue } from "@choreo/kit/apimachinery";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { Binding } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Eviction } from "@choreo/kit/gen/choreo/policy/v1/policy";
import { messageFromKubeJson, messageToKubeJson } from "@choreo/kit/kube-json";
import { APPLY_PATCH, decodeBody, parseJsonText, patchTypeOf, readBody } from "./body.js";
import { dryRunOf, fieldManagerOf, flag, intParam, param, type RequestContext } from "./context.js";
import { codeOf, sendError, sendJson, successStatus } from "./respond.js";
import { requestToken, type TokenIssuer } from "../registry/serviceaccounts/tokenrequest.js";

const SCALE = "choreo.autoscaling.v1.Scale";

/** A Scale as autoscaling/v1 JSON. */
export function scaleToJson(s: Scale): Record<string, unknown> {
  return { ...messageToKubeJson(SCALE, s), kind: "Scale", apiVersion: "autoscaling/v1" };
}

function scaleFromJson(json: unknown): Scale {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw badRequest("the body must be an autoscaling/v1 Scale object");
  const { kind, apiVersion } = json as Record<string, unknown>;
  if ((kind !== undefined && kind !== "Scale") || (apiVersion !== undefined && apiVersion !== "autoscaling/v1")) {
    throw badRequest(`the body must be an autoscaling/v1 Scale, not ${String(kind)} (${String(apiVersion)})`);
  }
  const s = messageFromKubeJson<Scale>(SCALE, json);
  s.kind = "Scale";
  s.apiVersion = "autoscaling/v1";
  return s;
}

/** GET, PUT, PATCH .../replicationcontrollers/NAME/scale. */
export async function scale(ctx: RequestContext): Promise<void> {
  const { info, namespace, name } = ctx.route;
  const h = ctx.handlers;
  const ref = { resource: info.resource, namespace, name };
  const method = ctx.req.method;
  if (method === "GET") {
    sendJson(ctx.res, 200, scaleToJson(await h.getScale(ref)));
    return;
  }
  if (method === "PUT") {
    const s = scaleFromJson(decodeBody(ctx.req, await readBody(ctx.req)));
    if (s.metadata?.name && s.metadata.name !== name)
      throw badRequest(`the name of the object (${s.metadata.name}) does not match the name on the URL (${name})`);
    sendJson(ctx.res, 200, scaleToJson(await h.updateScale({ ...ref, scale: s, fieldManager: fieldManagerOf(ctx) })));
    return;
  }
  if (method === "PATCH") {
    const type = patchTypeOf(ctx.req);
    if (type === APPLY_PATCH) throw unsupportedMediaType(`server-side apply to ${info.resource}/scale is not supported: apply to the ${info.kind}`);
    const patch = parseJsonText(await readBody(ctx.req)) as JsonValue;
    const pinned = JSON.stringify(patch).includes('"resourceVersion"');
    // Patch the current Scale; retry on a lost race unless the patch pinned a resourceVersion.
    for (let attempt = 0; ; attempt++) {
      const current = scaleToJson(await h.getScale(ref)) as JsonValue;
      let next: JsonValue;
      try {
        next = type === "application/json-patch+json" ? applyJsonPatch(current, patch) : applyMergePatch(current, patch);
      } catch (err) {
        if (err instanceof PatchError) throw badRequest(err.message);
        throw err;
      }
      try {
        sendJson(ctx.res, 200, scaleToJson(await h.updateScale({ ...ref, scale: scaleFromJson(next), fieldManager: fieldManagerOf(ctx) })));
        return;
      } catch (err) {
        if (!isConflict(err) || pinned || attempt >= 4) throw err;
      }
    }
  }
  throw methodNotAllowed(`${method ?? ""} is not supported on ${info.resource}/scale`);
}

/** POST .../pods/NAME/binding → 201 Status Success. */
export async function binding(ctx: RequestContext): Promise<void> {
  const { namespace, name } = ctx.route;
  if (ctx.req.method !== "POST") throw methodNotAllowed(`${ctx.req.method ?? ""} is not supported on pods/binding`);
  const json = decodeBody(ctx.req, await readBody(ctx.req));
  const b = messageFromKubeJson<Binding>("choreo.core.v1.Binding", json);
  if (b.metadata?.name && b.metadata.name !== name)
    throw badRequest(`the name of the binding (${b.metadata.name}) does not match the name on the URL (${name})`);
  if (b.metadata?.namespace && b.metadata.namespace !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  b.apiVersion = "v1";
  b.kind = "Binding";
  await ctx.handlers.bind({ namespace, name, binding: b });
  sendJson(ctx.res, 201, successStatus(201));
}

/**
 * POST .../pods/NAME/eviction (policy/v1 or v1beta1 Eviction, what kubectl
 * drain sends) → 201 Status Success once the pod is deleted with the
 * eviction's deleteOptions (grace period, preconditions, dryRun); 429
 * TooManyRequests when its PodDisruptionBudget allows no disruption. The
 * registry decides (registry/pods/eviction.ts), for every transport.
 */
export async function eviction(ctx: RequestContext): Promise<void> {
  const { namespace, name } = ctx.route;
  if (ctx.req.method !== "POST") throw methodNotAllowed(`${ctx.req.method ?? ""} is not supported on pods/eviction`);
  const json = decodeBody(ctx.req, await readBody(ctx.req));
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw badRequest("the body must be a policy/v1 Eviction object");
  const { kind, apiVersion } = json as Record<string, unknown>;
  if ((kind !== undefined && kind !== "Eviction") || (apiVersion !== undefined && apiVersion !== "policy/v1" && apiVersion !== "policy/v1beta1")) {
    throw badRequest(`the body must be a policy/v1 Eviction, not ${String(kind)} (${String(apiVersion)})`);
  }
  const ev = messageFromKubeJson<Eviction>("choreo.policy.v1.Eviction", { ...json, apiVersion: "policy/v1" });
  if (ev.metadata?.name && ev.metadata.name !== name) throw badRequest("name in URL does not match name in Eviction object");
  if (ev.metadata?.namespace && ev.metadata.namespace !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  ev.kind = "Eviction";
  // dryRun=All in the query counts as in the body's deleteOptions (the create of an Eviction is dry).
  if (dryRunOf(ctx.url)) {
    ev.deleteOptions ??= DeleteOptions.fromPartial({});
    if (!ev.deleteOptions.dryRun.includes("All")) ev.deleteOptions.dryRun.push("All");
  }
  await ctx.handlers.evict({ namespace, name, eviction: ev });
  sendJson(ctx.res, 201, successStatus(201));
}

/**
 * POST .../serviceaccounts/NAME/token (authentication.k8s.io/v1 TokenRequest,
 * what kubectl create token sends) → 201 with status.token
 * (registry/serviceaccounts/tokenrequest.ts).
 */
export async function serviceAccountToken(ctx: RequestContext, issuer: TokenIssuer | undefined): Promise<void> {
  const { namespace, name } = ctx.route;
  if (ctx.req.method !== "POST") throw methodNotAllowed(`${ctx.req.method ?? ""} is not supported on serviceaccounts/token`);
  const json = decodeBody(ctx.req, await readBody(ctx.req));
  if (!issuer) throw new ApiError(failure(501, "NotImplemented", "this api server issues no ServiceAccount tokens"));
  sendJson(ctx.res, 201, await requestToken(ctx.handlers, issuer, namespace, name, json, ctx.user));
}

/** GET .../pods/NAME/log: text/plain, streamed while following. */
export async function podLog(ctx: RequestContext): Promise<void> {
  const { namespace, name } = ctx.route;
  if (ctx.req.method !== "GET") throw methodNotAllowed(`${ctx.req.method ?? ""} is not supported on pods/log`);
  await ctx.handlers.get({ resource: "pods", namespace, name });
  if (!ctx.logs) throw new ApiError(failure(501, "NotImplemented", `logs of pod "${name}" are not available: this api server has no log source`));
  const follow = flag(ctx.url, "follow");
  const container = param(ctx.url, "container");
  const tailLines = intParam(ctx.url, "tailLines");
  const sinceSeconds = intParam(ctx.url, "sinceSeconds");
  const { signal, done } = ctx.stream();
  try {
    const it = ctx.logs
      .logs(
        {
          namespace,
          name,
          follow,
          timestamps: flag(ctx.url, "timestamps"),
          previous: flag(ctx.url, "previous"),
          ...(container ? { container } : {}),
          ...(tailLines !== undefined ? { tailLines } : {}),
          ...(sinceSeconds !== undefined ? { sinceSeconds } : {}),
        },
        signal,
      )
      [Symbol.asyncIterator]();
    let first: IteratorResult<string>;
    try {
      first = await it.next();
    } catch (err) {
      if (signal.aborted) return;
      sendError(ctx.res, err);
      return;
    }
    ctx.res.writeHead(200, { "Content-Type": "text/plain", "Cache-Control": "no-cache, private" });
    if (follow) ctx.res.flushHeaders();
    try {
      for (let r = first; !r.done; r = await it.next()) {
        if (signal.aborted) break;
        if (!ctx.res.write(r.value)) await drained(ctx, signal);
      }
    } catch (err) {
      if (!signal.aborted) ctx.log.debug({ err, code: codeOf(statusOf(err)), pod: `${namespace}/${name}` }, "log stream failed");
    } finally {
      await it.return?.().catch(() => undefined);
    }
    ctx.res.end();
  } finally {
    done();
  }
}

/** Resolves when the response can take more, or the stream is aborted. */
export function drained(ctx: RequestContext, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const finish = () => {
      ctx.res.off("drain", finish);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    ctx.res.once("drain", finish);
    signal.addEventListener("abort", finish, { once: true });
  });
}
