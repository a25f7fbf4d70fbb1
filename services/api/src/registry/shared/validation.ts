import { fieldError, type ObjectMeta, type StatusCause } from "@choreo/kit";
import {
  validateAnnotations,
  validateDns1035Label,
  validateDns1123Label,
  validateDns1123Subdomain,
  validateLabels,
  validateLabelKey,
  validateLabelValue,
  parseQuantity,
} from "@choreo/kit/apimachinery";

/** Values longer than this are cut in messages: a 3 MiB value is not echoed (twice) in the Status. */
const MAX_SHOWN = 256;

/** A value as a message shows it: JSON, cut after MAX_SHOWN characters with the length told. */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length <= MAX_SHOWN ? json : `${json.slice(0, MAX_SHOWN)}... (${json.length} characters)`;
}

/** Collects field errors with a path prefix. */
export class Errors {
  readonly causes: StatusCause[] = [];
  required(field: string, ok: unknown): void {
    if (ok === undefined || ok === null || ok === "" || (Array.isArray(ok) && ok.length === 0))
      this.causes.push(fieldError(field, "FieldValueRequired", "Required value"));
  }
  invalid(field: string, value: unknown, why: string): void {
    this.causes.push(fieldError(field, "FieldValueInvalid", `Invalid value: ${shown(value)}: ${why}`));
  }
  notSupported(field: string, value: unknown, allowed: readonly string[]): void {
    this.causes.push(
      fieldError(field, "FieldValueNotSupported", `Unsupported value: ${shown(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(", ")}`),
    );
  }
  duplicate(field: string, value: unknown): void {
    this.causes.push(fieldError(field, "FieldValueDuplicate", `Duplicate value: ${shown(value)}`));
  }
  forbidden(field: string, why: string): void {
    this.causes.push(fieldError(field, "FieldValueForbidden", `Forbidden: ${why}`));
  }
  tooLong(field: string, maxBytes: number): void {
    this.causes.push(fieldError(field, "FieldValueTooLong", `Too long: must have at most ${maxBytes} bytes`));
  }
  messages(field: string, value: unknown, msgs: string[]): void {
    for (const m of msgs) this.invalid(field, value, m);
  }
  oneOf(field: string, value: string, allowed: readonly string[]): void {
    if (!allowed.includes(value)) this.notSupported(field, value, allowed);
  }
  port(field: string, p: number): void {
    if (!Number.isInteger(p) || p < 1 || p > 65535) this.invalid(field, p, "must be between 1 and 65535, inclusive");
  }
  nonNegative(field: string, n: number | undefined): void {
    if (n !== undefined && n < 0) this.invalid(field, n, "must be greater than or equal to 0");
  }
  quantity(field: string, q: string): void {
    try {
      parseQuantity(q);
    } catch (err) {
      this.invalid(field, q, (err as Error).message);
    }
  }
  labelMap(field: string, labels: Record<string, string>): void {
    for (const [k, v] of Object.entries(labels)) {
      for (const m of validateLabelKey(k)) this.invalid(field, k, m);
      for (const m of validateLabelValue(v)) this.invalid(`${field}`, v, m);
    }
  }
}

/**
 * How a kind's names are validated. "path": Kubernetes' path segment names
 * (RBAC kinds: `system:node` has a colon), less what a bus subject token
 * cannot hold (whitespace, `*`, `>`, `~`).
 */
export type NameRule = "subdomain" | "label" | "dns1035" | "path";

/** Kubernetes' IsValidPathSegmentName, and no character a NATS subject token cannot carry. */
export function validatePathSegmentName(name: string): string[] {
  if (name === "." || name === "..") return [`may not be '${name}'`];
  const errs: string[] = [];
  for (const c of ["/", "%"]) if (name.includes(c)) errs.push(`may not contain '${c}'`);
  if (/[\s*>~]/.test(name)) errs.push("may not contain whitespace, '*', '>' or '~'");
  if (name.length > 253) errs.push("must be no more than 253 characters");
  return errs;
}

/** Validates metadata common to every kind. */
export function validateMeta(e: Errors, meta: ObjectMeta, namespaced: boolean, rule: NameRule): void {
  e.required("metadata.name", meta.name);
  if (meta.name) {
    const check =
      rule === "label"
        ? validateDns1123Label
        : rule === "dns1035"
          ? validateDns1035Label
          : rule === "path"
            ? validatePathSegmentName
            : validateDns1123Subdomain;
    e.messages("metadata.name", meta.name, check(meta.name));
  }
  if (namespaced) {
    e.required("metadata.namespace", meta.namespace);
    if (meta.namespace) e.messages("metadata.namespace", meta.namespace, validateDns1123Label(meta.namespace));
  } else if (meta.namespace) {
    e.forbidden("metadata.namespace", "not allowed on this type");
  }
  for (const m of validateLabels(meta.labels)) e.causes.push(fieldError("metadata.labels", "FieldValueInvalid", m));
  for (const m of validateAnnotations(meta.annotations)) e.causes.push(fieldError("metadata.annotations", "FieldValueInvalid", m));
  meta.finalizers.forEach((f, i) => {
    if (!f.includes("/") && f !== "kubernetes" && f !== "orphan" && f !== "foregroundDeletion") {
      e.invalid(`metadata.finalizers[${i}]`, f, "name is neither a standard finalizer name nor is it fully qualified");
    }
  });
}
