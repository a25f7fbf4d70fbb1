/** A field selector is malformed or names a field the resource does not support. */
export class FieldSelectorError extends Error {
  override name = "FieldSelectorError";
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
  matches(get: (field: string) => string | undefined): boolean;
  fields(): string[];
  isEverything(): boolean;
  toString(): string;
}

function splitUnescaped(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === "\\" && i + 1 < s.length) {
      cur += c + (s[i + 1] as string);
      i++;
    } else if (c === sep) {
      out.push(cur);
      cur = "";
    } else {
      cur += c;
    }
  }
  out.push(cur);
  return out;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}

function escape(s: string): string {
  return s.replace(/([\\,=])/g, "\\$1");
}

/** Parses `a=b,c!=d,e==f` (values may escape `\,` `\=` `\\`). */
export function parseFieldSelector(s: string): FieldSelector {
  const reqs: FieldRequirement[] = [];
  if (s.trim() !== "") {
    for (const part of splitUnescaped(s, ",")) {
      const m = /^([^=!]*?)\s*(==|!=|=)\s*(.*)$/s.exec(part.trim());
      if (!m) throw new FieldSelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
      const field = (m[1] ?? "").trim();
      if (!field) throw new FieldSelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
      const raw = m[3] ?? "";
      if (/(^|[^\\])=/.test(raw)) throw new FieldSelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
      reqs.push({ field, operator: m[2] === "!=" ? "!=" : "=", value: unescape(raw) });
    }
  }
  return {
    requirements: reqs,
    matches: (get) => reqs.every((r) => ((get(r.field) ?? "") === r.value) === (r.operator === "=")),
    fields: () => reqs.map((r) => r.field),
    isEverything: () => reqs.length === 0,
    toString: () => reqs.map((r) => `${r.field}${r.operator}${escape(r.value)}`).join(","),
  };
}

/** Throws FieldSelectorError (Kubernetes' wording) for a field outside `supported`. */
export function assertSupportedFields(sel: FieldSelector, supported: readonly string[], resource: string): void {
  for (const f of sel.fields()) {
    if (!supported.includes(f)) throw new FieldSelectorError(`field label not supported: ${f}`);
  }
  void resource;
}
