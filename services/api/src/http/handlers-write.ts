// Writes: POST (create), PUT (update, update status), PATCH, DELETE, DELETE on a collection.
import { badRequest, emptyMeta, methodNotAllowed, statusOf, unwrap, type ApiObject, type DeleteOptions, type KindInfo } from "@choreo/kit";
import { fromKubeJson, kindOfKubeJson, listToKubeJson, messageFromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { APPLY_PATCH, decodeBody, mediaType, parseJsonText, parseYamlBody, patchTypeOf, readBody, YAML_TYPES } from "./body.js";
import { dryRunOf, fieldManagerOf, intParam, param, type RequestContext } from "./context.js";
import { addWarnings, duplicateJsonFields, duplicateYamlFields, fieldProblems, fieldValidationOf, reportFieldProblems } from "./field-validation.js";
import { admissionScope } from "../registry/generic/admission-context.js";
import type { RequestScope } from "../registry/generic/request-scope.js";
import { sendJson } from "./respond.js";

/**
 * Decodes an object body for `info`: JSON or YAML, apiVersion/kind defaulted
 * from the path when both are missing, 400 for another kind. Unknown and
 * duplicate fields per `fieldValidation`: dropped (Ignore), dropped with a
 * Warning header each (Warn, the default), or 400 listing them (Strict).
 */
export async function readObject(ctx: RequestContext, info: KindInfo): Promise<ApiObject> {
  const text = await readBody(ctx.req);
  const mode = fieldValidationOf(ctx.url);
  const json = decodeBody(ctx.req, text);
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw badRequest(`the request body must be a JSON object, not ${Array.isArray(json) ? "an array" : typeof json}`);
  const body = json as Record<string, unknown>;
  if (body["apiVersion"] === undefined && body["kind"] === undefined) {
    body["apiVersion"] = info.apiVersion;
    body["kind"] = info.kind;
  }
  const declared = kindOfKubeJson(body);
  if (declared !== info) {
    throw badRequest(`the body is a ${declared.kind} (${declared.apiVersion}) but the request is for ${info.resource} (${info.kind}, ${info.apiVersion})`);
  }
  const unknown: string[] = [];
  const obj = fromKubeJson(body, { unknownFields: unknown });
  reportFieldProblems(ctx.res, mode, fieldProblems(duplicatesOf(ctx, mode, text), unknown), { kind: info.kind, version: info.apiVersion.split("/").pop()! });
  return obj;
}

/** Duplicate keys of a JSON or YAML body (a protobuf body has none: its last field wins, as in Go). */
function duplicatesOf(ctx: RequestContext, mode: string, text: string): string[] {
  const type = mediaType(ctx.req);
  if (mode === "Ignore" || type.includes("protobuf")) return [];
  return YAML_TYPES.has(type) ? duplicateYamlFields(text) : duplicateJsonFields(text);
}

/** Checks (or defaults) the object's namespace against the path. */
function placeNamespace(ctx: RequestContext, obj: ApiObject): void {
  const v = unwrap(obj);
  v.metadata ??= emptyMeta();
  const { info, namespace } = ctx.route;
  if (!info.namespaced) {
    v.metadata.namespace = "";
    return;
  }
  if (v.metadata.namespace === "") v.metadata.namespace = namespace;
  else if (v.metadata.namespace !== namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
}

function requireNamespace(ctx: RequestContext, verb: string): void {
  if (ctx.route.info.namespaced && ctx.route.namespace === "") {
    throw methodNotAllowed(`${verb} on ${ctx.route.info.resource} needs a namespace: use /namespaces/NAMESPACE/${ctx.route.info.resource}`);
  }
}

/**
 * Runs a write with an admission context (the scope it hands the handlers):
 * the warnings of admission (Pod Security's `would violate PodSecurity …`)
 * become Warning headers, each once.
 */
function admitted<T>(ctx: RequestContext, write: (scope: RequestScope) => Promise<T>): Promise<T> {
  const seen = new Set<string>();
  const warn = (text: string): void => {
    if (seen.has(text)) return;
    seen.add(text);
    addWarnings(ctx.res, [text]);
  };
  return write(admissionScope({ warn, user: ctx.user.name, userInfo: ctx.user }));
}

/** POST .../pods → 201 with the created object. */
export async function createObject(ctx: RequestContext): Promise<void> {
  requireNamespace(ctx, "create");
  const dryRun = dryRunOf(ctx.url);
  const obj = await readObject(ctx, ctx.route.info);
  placeNamespace(ctx, obj);
  const created = await admitted(ctx, (scope) => ctx.handlers.create({ object: obj, dryRun, fieldManager: fieldManagerOf(ctx) }, scope));
  sendJson(ctx.res, 201, toKubeJson(created));
}

/** PUT .../pods/NAME or .../NAME/status → 200 with the stored object. */
export async function updateObject(ctx: RequestContext): Promise<void> {
  const dryRun = dryRunOf(ctx.url);
  const obj = await readObject(ctx, ctx.route.info);
  placeNamespace(ctx, obj);
  const meta = unwrap(obj).metadata!;
  if (meta.name === "") meta.name = ctx.route.name;
  if (meta.name !== ctx.route.name) {
    throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${ctx.route.name})`);
  }
  const req = { object: obj, dryRun, fieldManager: fieldManagerOf(ctx), subresource: "" };
  // ephemeralcontainers (pods): the handlers take only spec.ephemeralContainers from the object.
  const stored = await admitted(ctx, (scope) =>
    // A CSR's approval (kubectl certificate approve|deny) writes its conditions, as its status does.
    ctx.route.subresource === "status" || ctx.route.subresource === "approval"
      ? ctx.handlers.updateStatus(req, scope)
      : ctx.handlers.update({ ...req, subresource: ctx.route.subresource }, scope),
  );
  sendJson(ctx.res, 200, toKubeJson(stored));
}

/**
 * PATCH .../pods/NAME[/status] with a JSON, merge or strategic merge patch,
 * or a server-side apply (YAML; `fieldManager` required, `force`). Unknown
 * and duplicate fields of a merge patch or an apply configuration are
 * reported per `fieldValidation`.
 */
export async function patchObject(ctx: RequestContext): Promise<void> {
  const patchType = patchTypeOf(ctx.req);
  const dryRun = dryRunOf(ctx.url);
  const apply = patchType === APPLY_PATCH;
  const force = ctx.url.searchParams.get("force");
  if (force !== null && !apply) throw badRequest("force: Invalid value: true: may not be specified for non-apply patch");
  if (apply && !ctx.url.searchParams.get("fieldManager")) throw badRequest("PATCH, application/apply-patch+yaml: fieldManager is required for apply requests");
  const mode = fieldValidationOf(ctx.url);
  const text = await readBody(ctx.req);
  if (text.trim() === "") throw badRequest("the patch is empty");
  const doc = apply ? parseApplyText(text) : parseJsonText(text);
  if (patchType === "application/json-patch+json" ? !Array.isArray(doc) : typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw badRequest(patchType === "application/json-patch+json" ? "a JSON patch must be an array of operations" : "a merge patch must be a JSON object");
  }
  const { info, namespace, name, subresource } = ctx.route;
  if (patchType !== "application/json-patch+json" && mode !== "Ignore") {
    // The patch document is a partial object: its unknown fields are the result's (directives aside).
    const unknown: string[] = [];
    // A null is a deletion (`kubectl label pod x stage-` sends {"metadata":{"labels":{"stage":null}}}) and `$` keys
    // are directives: neither is a field. Wrong types are the patched object's to report, when it is decoded.
    const partial = { ...(fieldsOf(doc) as Record<string, unknown>), apiVersion: info.apiVersion, kind: info.kind };
    try {
      fromKubeJson(partial, { unknownFields: unknown });
    } catch {
      // reported by the patch itself
    }
    const duplicates = apply ? duplicateYamlFields(text) : duplicateJsonFields(text);
    reportFieldProblems(
      ctx.res,
      mode,
      fieldProblems(
        duplicates,
        unknown.filter((p) => !p.includes("$")),
      ),
    );
  }
  // An apply that creates answers 201, as Kubernetes does.
  const existed = apply
    ? await ctx.handlers.get({ resource: info.resource, namespace, name }).then(
        () => true,
        (err: unknown) => statusOf(err).code !== 404,
      )
    : true;
  const patched = await admitted(ctx, (scope) =>
    ctx.handlers.patch(
      {
        resource: info.resource,
        namespace,
        name,
        patchType,
        patch: apply ? JSON.stringify(doc) : text,
        subresource,
        fieldManager: fieldManagerOf(ctx),
        force: apply ? force === "true" : undefined,
        dryRun,
      },
      scope,
    ),
  );
  sendJson(ctx.res, existed ? 200 : 201, toKubeJson(patched));
}

/** A patch document without its nulls (deletions) and `$` directives: the fields it names. */
function fieldsOf(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(fieldsOf);
  if (typeof v !== "object" || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null && !k.startsWith("$")) out[k] = fieldsOf(x);
  return out;
}

function parseApplyText(text: string): unknown {
  return parseYamlBody(text, "error decoding YAML");
}

/** DeleteOptions from a JSON/YAML body and/or gracePeriodSeconds, propagationPolicy, dryRun query parameters. */
export async function deleteOptionsOf(ctx: RequestContext): Promise<DeleteOptions | undefined> {
  const text = await readBody(ctx.req);
  let opts: DeleteOptions | undefined;
  if (text.trim() !== "") {
    // Lenient: clients send fields we do not model (orphanDependents).
    opts = messageFromKubeJson<DeleteOptions>("choreo.meta.v1.DeleteOptions", decodeBody(ctx.req, text), { strict: false });
  }
  const grace = intParam(ctx.url, "gracePeriodSeconds");
  const policy = ctx.url.searchParams.get("propagationPolicy");
  const dryRun = dryRunOf(ctx.url);
  if (!opts && grace === undefined && !policy && !dryRun) return undefined;
  opts ??= { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [] };
  if (grace !== undefined) opts.gracePeriodSeconds = grace;
  if (policy) {
    if (!["Foreground", "Background", "Orphan"].includes(policy))
      throw badRequest(`invalid propagationPolicy "${policy}": must be Foreground, Background or Orphan`);
    opts.propagationPolicy = policy;
  }
  if (dryRun) opts.dryRun = ["All"];
  return opts;
}

/** DELETE .../pods/NAME → 200 with the object as last stored. */
export async function deleteObject(ctx: RequestContext): Promise<void> {
  const options = await deleteOptionsOf(ctx);
  const { info, namespace, name } = ctx.route;
  const deleted = await ctx.handlers.delete({ resource: info.resource, namespace, name, options });
  sendJson(ctx.res, 200, toKubeJson(deleted));
}

/** DELETE .../pods → 200 with the list of deleted objects. */
export async function deleteCollection(ctx: RequestContext): Promise<void> {
  const options = await deleteOptionsOf(ctx);
  const { info, namespace } = ctx.route;
  const list = await ctx.handlers.deleteCollection({
    resource: info.resource,
    namespace,
    labelSelector: param(ctx.url, "labelSelector"),
    fieldSelector: param(ctx.url, "fieldSelector"),
    options,
  });
  sendJson(ctx.res, 200, listToKubeJson(info, list));
}
