import { validateQualifiedName } from "./names.js";

/** A selector string could not be parsed or holds invalid keys/values. */
export class SelectorParseError extends Error {
  override name = "SelectorParseError";
}

/** Operators of a label requirement. */
export type Operator = "=" | "!=" | "in" | "notin" | "exists" | "!";

/** One requirement of a label selector. */
export interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  readonly values: readonly string[];
}

/** A parsed label selector. */
export interface LabelSelector {
  readonly requirements: readonly Requirement[];
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  isEverything(): boolean;
  toString(): string;
}

const LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const labelValueRe = new RegExp(`^${LABEL_VALUE}$`);

/** Kubernetes' label key rules; messages, empty when valid. */
export function validateLabelKey(key: string): string[] {
  return validateQualifiedName(key);
}

/** Kubernetes' label value rules; messages, empty when valid. */
export function validateLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push("must be no more than 63 characters");
  if (!labelValueRe.test(value)) {
    errs.push(`a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`);
  }
  return errs;
}

/** Every problem of a label map, as `key: message`. */
export function validateLabels(labels: Readonly<Record<string, string>> | undefined): string[] {
  const errs: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const m of validateLabelKey(k)) errs.push(`Invalid value: ${JSON.stringify(k)}: ${m}`);
    for (const m of validateLabelValue(v)) errs.push(`Invalid value: ${JSON.stringify(v)}: ${m}`);
  }
  return errs;
}

/** Annotation keys follow label key rules; all annotations together ≤ 256 KiB. */
export function validateAnnotations(annotations: Readonly<Record<string, string>> | undefined): string[] {
  const errs: string[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    for (const m of validateQualifiedName(k.toLowerCase())) errs.push(`Invalid value: ${JSON.stringify(k)}: ${m}`);
    size += k.length + v.length;
  }
  if (size > 256 * 1024) errs.push(`Too long: must have at most ${256 * 1024} bytes`);
  return errs;
}

function matchesReq(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  const v = labels[r.key];
  switch (r.operator) {
    case "=":
      return has && v === r.values[0];
    case "!=":
      return !has || v !== r.values[0];
    case "in":
      return has && r.values.includes(v as string);
    case "notin":
      return !has || !r.values.includes(v as string);
    case "exists":
      return has;
    case "!":
      return !has;
  }
}

function reqString(r: Requirement): string {
  switch (r.operator) {
    case "exists":
      return r.key;
    case "!":
      return `!${r.key}`;
    case "in":
    case "notin":
      return `${r.key} ${r.operator} (${[...r.values].sort().join(",")})`;
    default:
      return `${r.key}${r.operator}${r.values[0]}`;
  }
}

/** Builds a selector from requirements, validating keys and values. */
export function makeSelector(reqs: Requirement[]): LabelSelector {
  for (const r of reqs) {
    const keyErrs = validateLabelKey(r.key);
    if (keyErrs.length) throw new SelectorParseError(`unable to parse requirement: invalid label key ${JSON.stringify(r.key)}: ${keyErrs.join("; ")}`);
    for (const v of r.values) {
      const valErrs = validateLabelValue(v);
      if (valErrs.length) throw new SelectorParseError(`unable to parse requirement: invalid label value: ${JSON.stringify(v)}: at key: ${JSON.stringify(r.key)}: ${valErrs.join("; ")}`);
    }
    if ((r.operator === "in" || r.operator === "notin") && r.values.length === 0) {
      throw new SelectorParseError(`unable to parse requirement: for 'in', 'notin' operators, values set can't be empty`);
    }
  }
  const sorted = [...reqs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    requirements: sorted,
    matches: (labels) => sorted.every((r) => matchesReq(r, labels ?? {})),
    isEverything: () => sorted.length === 0,
    toString: () => sorted.map(reqString).join(","),
  };
}

// ---- the string syntax ----------------------------------------------------

type Tok = { t: "id" | "op" | "(" | ")" | "," | "!"; v: string };

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "(" || c === ")" || c === ",") {
      out.push({ t: c, v: c });
      i++;
    } else if (c === "!" && s[i + 1] === "=") {
      out.push({ t: "op", v: "!=" });
      i += 2;
    } else if (c === "!") {
      out.push({ t: "!", v: "!" });
      i++;
    } else if (c === "=") {
      if (s[i + 1] === "=") {
        out.push({ t: "op", v: "==" });
        i += 2;
      } else {
        out.push({ t: "op", v: "=" });
        i++;
      }
    } else {
      let j = i;
      while (j < s.length && !/[\s(),!=]/.test(s[j] as string)) j++;
      out.push({ t: "id", v: s.slice(i, j) });
      i = j;
    }
  }
  return out;
}

/** Parses Kubernetes' label selector syntax: `a=b,c!=d,e in (f,g),h notin (i),j,!k`. */
export function parseLabelSelector(s: string): LabelSelector {
  const toks = lex(s);
  const reqs: Requirement[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new SelectorParseError(`unable to parse requirement: ${why}`);
  };
  while (i < toks.length) {
    let tok = toks[i];
    if (tok?.t === "!") {
      const key = toks[i + 1];
      if (key?.t !== "id") fail(`found '${key?.v ?? "EOS"}', expected: identifier after '!'`);
      reqs.push({ key: key?.v as string, operator: "!", values: [] });
      i += 2;
    } else if (tok?.t === "id") {
      const key = tok.v;
      i++;
      tok = toks[i];
      if (!tok || tok.t === ",") {
        reqs.push({ key, operator: "exists", values: [] });
      } else if (tok.t === "op") {
        const val = toks[i + 1];
        let value = "";
        if (val?.t === "id") {
          value = val.v;
          i += 2;
        } else {
          i += 1; // empty value: `a=`
        }
        reqs.push({ key, operator: tok.v === "!=" ? "!=" : "=", values: [value] });
      } else if (tok.t === "id" && (tok.v === "in" || tok.v === "notin")) {
        const op = tok.v;
        if (toks[i + 1]?.t !== "(") fail(`found '${toks[i + 1]?.v ?? "EOS"}', expected: '('`);
        i += 2;
        const values: string[] = [];
        for (;;) {
          const v = toks[i];
          if (!v) fail("found 'EOS', expected: ')'");
          if (v?.t === ")") {
            i++;
            break;
          }
          if (v?.t === ",") {
            // empty element between commas is an empty value
            if (toks[i - 1]?.t === "," || toks[i - 1]?.t === "(") values.push("");
            i++;
            continue;
          }
          if (v?.t !== "id") fail(`found '${v?.v}', expected: ',', ')' or identifier`);
          values.push(v?.v as string);
          i++;
        }
        reqs.push({ key, operator: op, values });
      } else {
        fail(`found '${tok.v}', expected: in, notin, =, ==, !=, gt, lt`);
      }
    } else {
      fail(`found '${tok?.v}', expected: !, identifier, or 'end of string'`);
    }
    const sep = toks[i];
    if (sep) {
      if (sep.t !== ",") fail(`found '${sep.v}', expected: ',' or 'end of string'`);
      i++;
      if (i >= toks.length) fail("found 'EOS', expected: identifier");
    }
  }
  return makeSelector(reqs);
}

/** The selector `k=v,…` of a label map (ReplicationController's selector). */
export function selectorFromSet(set: Readonly<Record<string, string>>): LabelSelector {
  return makeSelector(Object.entries(set).map(([key, v]) => ({ key, operator: "=", values: [v] })));
}

/** The selector of a metav1.LabelSelector (matchLabels + matchExpressions). */
export function selectorFromLabelSelector(
  sel: { matchLabels?: Readonly<Record<string, string>>; matchExpressions?: readonly { key: string; operator: string; values?: readonly string[] }[] } | undefined,
): LabelSelector {
  const reqs: Requirement[] = Object.entries(sel?.matchLabels ?? {}).map(([key, v]) => ({ key, operator: "=" as const, values: [v] }));
  for (const e of sel?.matchExpressions ?? []) {
    const values = [...(e.values ?? [])];
    switch (e.operator) {
      case "In":
        reqs.push({ key: e.key, operator: "in", values });
        break;
      case "NotIn":
        reqs.push({ key: e.key, operator: "notin", values });
        break;
      case "Exists":
        if (values.length) throw new SelectorParseError(`values must be empty for operator Exists`);
        reqs.push({ key: e.key, operator: "exists", values: [] });
        break;
      case "DoesNotExist":
        if (values.length) throw new SelectorParseError(`values must be empty for operator DoesNotExist`);
        reqs.push({ key: e.key, operator: "!", values: [] });
        break;
      default:
        throw new SelectorParseError(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    }
  }
  return makeSelector(reqs);
}
