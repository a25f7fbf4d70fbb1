// TokenRequest (authentication.k8s.io/v1), the create-only subresource
// serviceaccounts/NAME/token, as Kubernetes' pkg/registry/core/serviceaccount/storage/token.go:
// a signed ServiceAccount token for the asked audiences and lifetime,
// optionally bound to a Pod or a Secret that must exist with the given uid.
import { ApiError, badRequest, conflict, failure, forbidden, isNotFound, notFound, Reason, unwrap, type StatusCause } from "@choreo/kit";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import { nodeOfUser } from "../../auth/node/node-authorizer.js";
import type { UserInfo } from "../../auth/types.js";
import type { TokenBinding, TokenClaims } from "../../auth/service-account-tokens.js";

/** A TokenRequest's or its answer's JSON. */
export type Json = Record<string, unknown>;

/** Signs tokens (auth/service-account-tokens.ts ServiceAccountTokens). */
export interface TokenIssuer {
  readonly apiAudiences: string[];
  issue(binding: TokenBinding, audiences: readonly string[], expirationSeconds: number): { token: string; claims: TokenClaims };
}

export const GROUP = "authentication.k8s.io";
/** Kubernetes' default lifetime (1 h), its minimum (10 min) and the longest a request may ask (2^32 s). */
export const DEFAULT_EXPIRATION_SECONDS = 3600;
export const MIN_EXPIRATION_SECONDS = 600;
const MAX_REQUESTABLE_SECONDS = 2 ** 32;
/** The longest lifetime this api issues (the apiserver's --service-account-max-token-expiration): longer asks are cut to it. */
export const MAX_EXPIRATION_SECONDS = 48 * 3600;

const rec = (v: unknown): Json | undefined => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined);

function str(o: Json, key: string, path: string): string {
  const v = o[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw badRequest(`${path}: expected a string, got ${typeof v}`);
  return v;
}

function invalidRequest(causes: StatusCause[]): ApiError {
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const body = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return new ApiError(failure(422, Reason.Invalid, `TokenRequest.${GROUP} "" is invalid: ${body}`, { name: "", group: GROUP, kind: "TokenRequest", causes }));
}

/** The spec of a TokenRequest body, defaulted and validated (400 for wrong types, 422 as ValidateTokenRequest). */
export function tokenRequestSpec(body: unknown): {
  audiences: string[];
  expirationSeconds: number;
  boundObjectRef?: { kind: string; apiVersion: string; name: string; uid: string };
} {
  const o = rec(body);
  if (!o) throw badRequest("the body must be an authentication.k8s.io/v1 TokenRequest object");
  const kind = o["kind"];
  const apiVersion = o["apiVersion"];
  if (kind !== undefined && kind !== "" && kind !== "TokenRequest") throw badRequest(`the body is a ${String(kind)}, but the request is for TokenRequest`);
  if (apiVersion !== undefined && apiVersion !== "" && apiVersion !== `${GROUP}/v1`)
    throw badRequest(`the API version in the data (${String(apiVersion)}) does not match the expected API version (${GROUP}/v1)`);
  const specRaw = o["spec"];
  const spec = specRaw === undefined || specRaw === null ? {} : rec(specRaw);
  if (!spec) throw badRequest("spec: expected an object");
  const audRaw = spec["audiences"];
  if (audRaw !== undefined && audRaw !== null && (!Array.isArray(audRaw) || audRaw.some((a) => typeof a !== "string")))
    throw badRequest("spec.audiences: expected an array of strings");
  const audiences = (audRaw as string[] | undefined | null) ?? [];
  const expRaw = spec["expirationSeconds"];
  let expirationSeconds = DEFAULT_EXPIRATION_SECONDS;
  if (expRaw !== undefined && expRaw !== null) {
    // int64 in JSON: a number, or a string from the protobuf transcoder.
    const n = typeof expRaw === "string" && /^-?\d+$/.test(expRaw) ? Number(expRaw) : expRaw;
    if (typeof n !== "number" || !Number.isInteger(n)) throw badRequest("spec.expirationSeconds: expected an integer");
    expirationSeconds = n;
  }
  const causes: StatusCause[] = [];
  if (expirationSeconds < MIN_EXPIRATION_SECONDS)
    causes.push({
      field: "spec.expirationSeconds",
      reason: "FieldValueInvalid",
      message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
    });
  if (expirationSeconds > MAX_REQUESTABLE_SECONDS)
    causes.push({
      field: "spec.expirationSeconds",
      reason: "FieldValueInvalid",
      message: `Invalid value: ${expirationSeconds}: may not specify a duration larger than 2^32 seconds`,
    });
  if (causes.length) throw invalidRequest(causes);
  const refRaw = spec["boundObjectRef"];
  if (refRaw === undefined || refRaw === null) return { audiences, expirationSeconds };
  const ref = rec(refRaw);
  if (!ref) throw badRequest("spec.boundObjectRef: expected an object");
  const p = "spec.boundObjectRef";
  return {
    audiences,
    expirationSeconds,
    boundObjectRef: {
      kind: str(ref, "kind", `${p}.kind`),
      apiVersion: str(ref, "apiVersion", `${p}.apiVersion`),
      name: str(ref, "name", `${p}.name`),
      uid: str(ref, "uid", `${p}.uid`),
    },
  };
}

async function getOrNotFound(handlers: Pick<ApiHandlers, "get">, resource: string, namespace: string, name: string): Promise<ReturnType<typeof unwrap>> {
  try {
    return unwrap(await handlers.get({ resource, namespace, name }));
  } catch (err) {
    if (isNotFound(err)) throw notFound(resource, name);
    throw err;
  }
}

/**
 * Answers POST /api/v1/namespaces/NS/serviceaccounts/NAME/token: 404 when the
 * ServiceAccount is missing; a bound object of kind Pod (v1) or Secret (v1)
 * must exist with the given uid (409 otherwise; a pod of another account
 * is a 400); the lifetime is cut to MAX_EXPIRATION_SECONDS. The answer is
 * the request with status.token and status.expirationTimestamp.
 *
 * `requester`, when a node's user (`system:node:<n>` in system:nodes), is
 * held to Kubernetes' NodeRestriction: only a token bound by uid to a Pod
 * whose spec.nodeName is `<n>` (403 Forbidden otherwise, nothing issued).
 */
export async function requestToken(
  handlers: Pick<ApiHandlers, "get">,
  issuer: TokenIssuer,
  namespace: string,
  name: string,
  body: unknown,
  requester?: UserInfo,
): Promise<Json> {
  const spec = tokenRequestSpec(body);
  const node = requester ? nodeOfUser({ user: requester }) : undefined;
  if (node !== undefined) {
    const ref = spec.boundObjectRef;
    const refuse = (why: string): never => {
      throw forbidden(`serviceaccounts "${name}" is forbidden: ${why}`);
    };
    if (!ref || ref.apiVersion !== "v1" || ref.kind !== "Pod" || ref.name === "") refuse("node requested token not bound to a pod");
    if (ref!.uid === "") refuse("node requested token with a pod binding without a uid");
  }
  const sa = await getOrNotFound(handlers, "serviceaccounts", namespace, name);
  const binding: TokenBinding = { namespace, serviceAccount: { name, uid: sa.metadata?.uid ?? "" } };
  const ref = spec.boundObjectRef;
  let boundUid = "";
  if (ref) {
    if ((ref.kind !== "Pod" && ref.kind !== "Secret") || (ref.apiVersion !== "v1" && ref.apiVersion !== ""))
      throw badRequest(`cannot bind token for serviceaccount "${name}" to object of kind "${ref.kind}" (${ref.apiVersion})`);
    if (ref.name === "") throw badRequest(`cannot bind token for serviceaccount "${name}": spec.boundObjectRef.name is required`);
    const resource = ref.kind === "Pod" ? "pods" : "secrets";
    const obj = await getOrNotFound(handlers, resource, namespace, ref.name);
    const uid = obj.metadata?.uid ?? "";
    boundUid = uid;
    if (ref.uid !== "" && ref.uid !== uid && node !== undefined)
      throw forbidden(
        `serviceaccounts "${name}" is forbidden: the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    if (ref.uid !== "" && ref.uid !== uid)
      throw conflict(
        resource,
        ref.name,
        `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    if (ref.kind === "Pod") {
      const podSpec = "spec" in obj && obj.spec && "serviceAccountName" in obj.spec ? obj.spec : undefined;
      const podSa = podSpec?.serviceAccountName ?? "";
      if (node !== undefined && (podSpec && "nodeName" in podSpec ? podSpec.nodeName : "") !== node)
        throw forbidden(`serviceaccounts "${name}" is forbidden: node requested token bound to a pod scheduled on a different node`);
      if (podSa !== "" && podSa !== name) throw badRequest(`cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`);
      binding.pod = { name: ref.name, uid };
    }
  }
  const lifetime = Math.min(spec.expirationSeconds, MAX_EXPIRATION_SECONDS);
  const { token, claims } = issuer.issue(binding, spec.audiences, lifetime);
  const o = rec(body) ?? {};
  const meta = rec(o["metadata"]) ?? {};
  return {
    kind: "TokenRequest",
    apiVersion: `${GROUP}/v1`,
    metadata: { ...meta, name, namespace },
    spec: {
      audiences: claims.aud,
      expirationSeconds: lifetime,
      ...(ref ? { boundObjectRef: { kind: ref.kind, apiVersion: "v1", name: ref.name, uid: boundUid } } : {}),
    },
    status: { token, expirationTimestamp: new Date(claims.exp * 1000).toISOString().replace(/\.\d{3}Z$/, "Z") },
  };
}
