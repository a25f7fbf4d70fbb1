import { MAX_SELECTOR_LENGTH } from "./labels.js";

/** A field selector is malformed or names a field the resource does not support. */
export class FieldSelectorError extends Error {
  override name = "FieldSelectorError";
  /** The resource whose field was refused, when known. */
  resource?: string;
}

/** One requirement of a field selector. */
export interface FieldRequirement {
  readonly field: string;
  readonly operator: "=" | "!=";
  readonly value: string;
}

/** A parsed field selector. */
export interface FieldSelector {
  readonly requirements: readonly FieldRequirement[];
  /** True when every requirement holds; a missing field reads as "". */
  matches(get: (field: string) => string | undefined): boolean;
  /** The fields named, in order. */
  fields(): string[];
  isEverything(): boolean;
  /** Canonical form: terms sorted, values escaped; parses back to an equal selector. */
  toString(): string;
}

/** Splits on commas that are not escaped (`\,`), keeping escapes for later. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === ",") {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  out.push(s.slice(start));
  return out;
}

/** The first operator in a term (`!=` before `==` before `=` at each position), like Kubernetes. */
function splitTerm(term: string): [string, "=" | "==" | "!=", string] | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ["!=", "==", "="] as const) {
      if (term.startsWith(op, i)) return [term.slice(0, i), op, term.slice(i + op.length)];
    }
  }
  return undefined;
}

/** Undoes `\\`, `\,` and `\=`; any other escape or a bare `,`/`=` is an error. */
function unescapeValue(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === "\\") {
      const n = s[i + 1];
      if (n === undefined) throw new FieldSelectorError("invalid field selector: invalid escape sequence: \\");
      if (n !== "\\" && n !== "," && n !== "=") throw new FieldSelectorError(`invalid field selector: invalid escape sequence: \\${n}`);
      out += n;
      i++;
    } else if (c === "," || c === "=") {
      throw new FieldSelectorError(`invalid field selector: unescaped character in value: ${c}`);
    } else {
      out += c;
    }
  }
  return out;
}

/** Escapes `\`, `,` and `=` in a value (Kubernetes' fields.EscapeValue). */
export function escapeFieldValue(s: string): string {
  return s.replace(/[\\,=]/g, (c) => `\\${c}`);
}

/** Builds a field selector from requirements (sorted like Kubernetes prints them). */
export function makeFieldSelector(reqs: readonly FieldRequirement[]): FieldSelector {
  const text = (r: FieldRequirement): string => `${r.field}${r.operator}${escapeFieldValue(r.value)}`;
  const sorted = [...reqs].sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
  return {
    requirements: sorted,
    matches: (get) => sorted.every((r) => ((get(r.field) ?? "") === r.value) === (r.operator === "=")),
    fields: () => sorted.map((r) => r.field),
    isEverything: () => sorted.length === 0,
    toString: () => sorted.map(text).join(","),
  };
}

/**
 * Parses Kubernetes' field selector syntax: `a=b,c!=d,e==f`; values may escape
 * `\,` `\=` `\\`. Empty terms are skipped; the empty string selects everything.
 * Spaces around field names are trimmed (values are kept as written).
 * Longer than MAX_SELECTOR_LENGTH: FieldSelectorError before any parsing.
 */
export function parseFieldSelector(s: string): FieldSelector {
  if (s.length > MAX_SELECTOR_LENGTH) throw new FieldSelectorError(`invalid field selector: must be no more than ${MAX_SELECTOR_LENGTH} characters`);
  const reqs: FieldRequirement[] = [];
  for (const part of splitTerms(s)) {
    if (part.trim() === "") continue;
    const split = splitTerm(part);
    const field = split?.[0].trim() ?? "";
    if (!split || field === "") throw new FieldSelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
    reqs.push({ field, operator: split[1] === "!=" ? "!=" : "=", value: unescapeValue(split[2]) });
  }
  return makeFieldSelector(reqs);
}

/**
 * Throws FieldSelectorError (`field label not supported: spec.foo`) for a field
 * outside `supported`; `resource` (e.g. "pods") is kept on the error for callers.
 */
export function assertSupportedFields(sel: FieldSelector, supported: readonly string[], resource: string): void {
  for (const f of sel.fields()) {
    if (!supported.includes(f)) {
      const err = new FieldSelectorError(`field label not supported: ${f}`);
      err.resource = resource;
      throw err;
    }
  }
}
