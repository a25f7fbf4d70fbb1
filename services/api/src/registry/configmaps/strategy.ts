import type { ConfigMap } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Strategy } from "../generic/strategy.js";
import { canonicalJson } from "../shared/canonical.js";
import { Errors } from "../shared/validation.js";

/** Kubernetes' MaxSecretSize: data and binaryData together, in bytes. */
export const MAX_CONFIG_MAP_BYTES = 1024 * 1024;

const KEY = /^[-._a-zA-Z0-9]+$/;
const KEY_MESSAGE =
  "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const IMMUTABLE = "field is immutable when `immutable` is set";

/** Kubernetes' IsConfigMapKey: a file name a volume can hold. */
export function validateConfigMapKey(key: string): string[] {
  const errs: string[] = [];
  if (key.length > 253) errs.push("must be no more than 253 characters");
  if (!KEY.test(key)) errs.push(KEY_MESSAGE);
  if (key === ".") errs.push("must not be '.'");
  else if (key === "..") errs.push("must not be '..'");
  else if (key.startsWith("..")) errs.push("must not start with '..'");
  return errs;
}

/**
 * ConfigMaps (Kubernetes' ValidateConfigMap and ValidateConfigMapUpdate):
 * keys, no key in both maps, at most 1 MiB of values, and nothing changes
 * once `immutable` is set. Stored only: pods reference them from issue 12.
 */
export const configMapStrategy: Strategy<ConfigMap> = {
  validate(cm, old) {
    const e = new Errors();
    let total = 0;
    for (const [k, v] of Object.entries(cm.data)) {
      e.messages(`data[${k}]`, k, validateConfigMapKey(k));
      if (k in cm.binaryData) e.invalid(`data[${k}]`, k, "duplicate of key present in binaryData");
      total += Buffer.byteLength(v);
    }
    for (const [k, v] of Object.entries(cm.binaryData)) {
      e.messages(`binaryData[${k}]`, k, validateConfigMapKey(k));
      total += v.length;
    }
    if (total > MAX_CONFIG_MAP_BYTES) e.tooLong("[]", MAX_CONFIG_MAP_BYTES);
    if (old?.immutable) {
      if (!cm.immutable) e.forbidden("immutable", IMMUTABLE);
      if (canonicalJson(cm.data) !== canonicalJson(old.data)) e.forbidden("data", IMMUTABLE);
      if (!sameBytes(cm.binaryData, old.binaryData)) e.forbidden("binaryData", IMMUTABLE);
    }
    return e.causes;
  },
};

/** Whether two byte maps hold the same keys and bytes. */
export function sameBytes(a: Record<string, Uint8Array>, b: Record<string, Uint8Array>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => {
    const y = b[k];
    return y !== undefined && Buffer.from(a[k] ?? []).equals(Buffer.from(y));
  });
}
