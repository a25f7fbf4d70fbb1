import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { MAX_CONFIG_MAP_BYTES, sameBytes, validateConfigMapKey } from "../configmaps/strategy.js";
import { Errors } from "../shared/validation.js";
import type { SecretSealer } from "./seal.js";

/** Kubernetes' MaxSecretSize: the values of data together, in bytes. */
export const MAX_SECRET_BYTES = MAX_CONFIG_MAP_BYTES;

/** Kubernetes' Secret types with rules (core.SecretType*) and the keys they need. */
export const SecretType = {
  opaque: "Opaque",
  serviceAccountToken: "kubernetes.io/service-account-token",
  dockercfg: "kubernetes.io/dockercfg",
  dockerConfigJson: "kubernetes.io/dockerconfigjson",
  basicAuth: "kubernetes.io/basic-auth",
  sshAuth: "kubernetes.io/ssh-auth",
  tls: "kubernetes.io/tls",
} as const;

const SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name";
const IMMUTABLE = "field is immutable when `immutable` is set";
// What Kubernetes shows instead of a malformed docker config's value.
const REDACTED = "<secret contents redacted>";

/**
 * Secrets (Kubernetes' pkg/registry/core/secret strategy, ValidateSecret and
 * ValidateSecretUpdate). `stringData` is a write-only convenience: merged
 * into `data` (its values win) before validation, never stored or returned.
 * The type defaults to Opaque, and an update without a type keeps the old
 * one. Encryption at rest: `sealedSecretStrategy`.
 */
export const secretStrategy: Strategy<Secret> = {
  prepareCreate(s) {
    mergeStringData(s);
    if (!s.type) s.type = SecretType.opaque;
  },
  prepareUpdate(s, old) {
    mergeStringData(s);
    if (!s.type) s.type = old.type;
  },
  validate(s, old) {
    const e = new Errors();
    if (old) {
      if (s.type !== old.type) e.invalid("type", s.type, "field is immutable");
      if (old.immutable) {
        if (!s.immutable) e.forbidden("immutable", IMMUTABLE);
        if (!sameBytes(s.data, old.data)) e.forbidden("data", IMMUTABLE);
      }
    }
    let total = 0;
    for (const [k, v] of Object.entries(s.data)) {
      e.messages(`data[${k}]`, k, validateConfigMapKey(k));
      total += v.length;
    }
    if (total > MAX_SECRET_BYTES) e.tooLong("data", MAX_SECRET_BYTES);
    validateType(e, s);
    return e.causes;
  },
};

/** The Secret strategy with encryption at rest: Redis and the event log hold the sealed form (seal.ts). */
export function sealedSecretStrategy(sealer: SecretSealer): Strategy<Secret> {
  return { ...secretStrategy, toStorage: (s) => sealer.seal(s), fromStorage: (s) => sealer.unseal(s) };
}

/** Moves stringData into data (Kubernetes does it when decoding a v1 Secret). */
export function mergeStringData(s: Secret): void {
  for (const [k, v] of Object.entries(s.stringData)) s.data[k] = Buffer.from(v, "utf8");
  s.stringData = {};
}

function validateType(e: Errors, s: Secret): void {
  const has = (k: string): boolean => k in s.data;
  switch (s.type) {
    case SecretType.serviceAccountToken:
      if (!s.metadata?.annotations[SERVICE_ACCOUNT_NAME]) e.required(`metadata.annotations[${SERVICE_ACCOUNT_NAME}]`, "");
      break;
    case SecretType.dockercfg:
      jsonObjectKey(e, s, ".dockercfg");
      break;
    case SecretType.dockerConfigJson:
      jsonObjectKey(e, s, ".dockerconfigjson");
      break;
    case SecretType.basicAuth:
      // Either may be empty, but one of the two must be there.
      if (!has("username") && !has("password")) {
        e.required("data[username]", "");
        e.required("data[password]", "");
      }
      break;
    case SecretType.sshAuth:
      if (!s.data["ssh-privatekey"]?.length) e.required("data[ssh-privatekey]", "");
      break;
    case SecretType.tls:
      if (!has("tls.crt")) e.required("data[tls.crt]", "");
      if (!has("tls.key")) e.required("data[tls.key]", "");
      break;
    default:
      // Opaque and any other type: no rules.
      break;
  }
}

/** A key that must hold a JSON object (a docker config). */
function jsonObjectKey(e: Errors, s: Secret, key: string): void {
  const v = s.data[key];
  if (v === undefined) {
    e.required(`data[${key}]`, "");
    return;
  }
  const why = jsonObjectError(Buffer.from(v).toString("utf8"));
  if (why) e.invalid(`data[${key}]`, REDACTED, why);
}

/** Why text is not a JSON object, in the words of Go's encoding/json; undefined when it is one. */
export function jsonObjectError(text: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    // V8 names the offending position; Go names the character there and what it expected.
    const message = (err as Error).message;
    if (/end of JSON input/i.test(message)) return "unexpected end of JSON input";
    const at = /position (\d+)/.exec(message);
    const pos = at ? Number(at[1]) : text.length - text.trimStart().length;
    const c = text[pos];
    if (c === undefined || pos >= text.trimEnd().length) return "unexpected end of JSON input";
    const before = text.slice(0, pos).trimEnd().at(-1);
    const expecting = before === "{" || (before === "," && text.lastIndexOf("{") > text.lastIndexOf("[")) ? "object key string" : "value";
    return `invalid character '${c}' looking for beginning of ${expecting}`;
  }
  if (parsed === null || (typeof parsed === "object" && !Array.isArray(parsed))) return undefined;
  const kind = Array.isArray(parsed) ? "array" : typeof parsed === "boolean" ? "bool" : typeof parsed;
  return `json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`;
}
