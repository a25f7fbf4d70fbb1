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
  if (value.length > 63) return ["must be no more than 63 characters"]; // the regex runs on capped input only
  if (!labelValueRe.test(value)) {
    errs.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '${LABEL_VALUE}')`,
    );
  }
  return errs;
}

/** Every problem of a label map, as `Invalid value: "k": message`. */
export function validateLabels(labels: Readonly<Record<string, string>> | undefined): string[] {
  const errs: string[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const m of validateLabelKey(k)) errs.push(`Invalid value: ${JSON.stringify(k)}: ${m}`);
    for (const m of validateLabelValue(v)) errs.push(`Invalid value: ${JSON.stringify(v)}: ${m}`);
  }
  return errs;
}

/** Kubernetes' limit on all annotations of one object together (keys + values, bytes). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** Annotation keys follow label key rules (case-insensitively); all annotations together ≤ 256 KiB. */
export function validateAnnotations(annotations: Readonly<Record<string, string>> | undefined): string[] {
  const errs: string[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    for (const m of validateQualifiedName(k.toLowerCase())) errs.push(`Invalid value: ${JSON.stringify(k)}: ${m}`);
    size += Buffer.byteLength(k, "utf8") + Buffer.byteLength(v, "utf8");
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) errs.push(`Too long: must have at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes`);
  return errs;
}

const EMPTY_FOR_EXISTS = "values set must be empty for exists and does not exist";

function matchesReq(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = has ? labels[r.key] : undefined;
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
      return `${r.key} ${r.operator} (${r.values.join(",")})`;
    default:
      return `${r.key}${r.operator}${r.values[0]}`;
  }
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Builds a selector from requirements, validating keys and values like
 * Kubernetes' NewRequirement. Set values are de-duplicated and sorted;
 * requirements are sorted by key (stable), as Kubernetes prints them.
 */
export function makeSelector(reqs: readonly Requirement[]): LabelSelector {
  const clean: Requirement[] = [];
  for (const r of reqs) {
    const keyErrs = validateLabelKey(r.key);
    if (keyErrs.length) throw new SelectorParseError(`unable to parse requirement: invalid label key ${JSON.stringify(r.key)}: ${keyErrs.join("; ")}`);
    for (const v of r.values) {
      const valErrs = validateLabelValue(v);
      if (valErrs.length)
        throw new SelectorParseError(
          `unable to parse requirement: invalid label value: ${JSON.stringify(v)}: at key: ${JSON.stringify(r.key)}: ${valErrs.join("; ")}`,
        );
    }
    switch (r.operator) {
      case "in":
      case "notin":
        if (r.values.length === 0) throw new SelectorParseError(`unable to parse requirement: for 'in', 'notin' operators, values set can't be empty`);
        break;
      case "=":
      case "!=":
        if (r.values.length !== 1) throw new SelectorParseError(`unable to parse requirement: exact-match compatibility requires one single value`);
        break;
      case "exists":
      case "!":
        if (r.values.length !== 0) throw new SelectorParseError(`unable to parse requirement: ${EMPTY_FOR_EXISTS}`);
        break;
      default:
        throw new SelectorParseError(`unable to parse requirement: operator ${JSON.stringify(r.operator)} is not recognized`);
    }
    clean.push({ key: r.key, operator: r.operator, values: [...new Set(r.values)].sort(byString) });
  }
  const sorted = clean.sort((a, b) => byString(a.key, b.key));
  return {
    requirements: sorted,
    matches: (labels) => sorted.every((r) => matchesReq(r, labels ?? {})),
    isEverything: () => sorted.length === 0,
    toString: () => sorted.map(reqString).join(","),
  };
}

// ---- the string syntax (k8s.io/apimachinery/pkg/labels/selector.go) -------

type Tok = { t: "id" | "op" | "(" | ")" | "," | "!" | "end"; v: string };

const SYMBOLS = ["!=", "==", "=", "!", "(", ")", ",", ">", "<"] as const;
const isSpace = (c: string): boolean => c === " " || c === "\t" || c === "\r" || c === "\n";
const isSymbol = (c: string): boolean => "=!(),<>".includes(c);

function lex(s: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i] as string;
    if (isSpace(c)) {
      i++;
    } else if (isSymbol(c)) {
      const sym = SYMBOLS.find((x) => s.startsWith(x, i)) as string;
      const t = sym === "(" || sym === ")" || sym === "," || sym === "!" ? sym : "op";
      out.push({ t, v: sym });
      i += sym.length;
    } else {
      let j = i;
      while (j < s.length && !isSpace(s[j] as string) && !isSymbol(s[j] as string)) j++;
      out.push({ t: "id", v: s.slice(i, j) });
      i = j;
    }
  }
  out.push({ t: "end", v: "" });
  return out;
}

/** Recursive descent over the tokens, as Kubernetes' parser does it. */
class Parser {
  private i = 0;
  constructor(private readonly toks: Tok[]) {}

  private peek(): Tok {
    return this.toks[this.i] as Tok;
  }

  /** Consumes a token; the end token is never passed. */
  private next(): Tok {
    const tok = this.toks[this.i] as Tok;
    if (tok.t !== "end") this.i++;
    return tok;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const tok = this.peek();
      if (tok.t === "end") return reqs;
      if (tok.t !== "id" && tok.t !== "!") throw new SelectorParseError(`found '${tok.v}', expected: !, identifier, or 'end of string'`);
      try {
        reqs.push(this.requirement());
      } catch (err) {
        if (err instanceof SelectorParseError) throw new SelectorParseError(`unable to parse requirement: ${err.message}`);
        throw err;
      }
      const sep = this.next();
      if (sep.t === "end") return reqs;
      if (sep.t !== ",") throw new SelectorParseError(`found '${sep.v}', expected: ',' or 'end of string'`);
      const after = this.peek();
      if (after.t !== "id" && after.t !== "!") throw new SelectorParseError(`found '${after.v}', expected: identifier after ','`);
    }
  }

  private requirement(): Requirement {
    let tok = this.next();
    const negated = tok.t === "!";
    if (negated) tok = this.next();
    if (tok.t !== "id") throw new SelectorParseError(`found '${tok.v}', expected: identifier`);
    const key = tok.v;
    const la = this.peek();
    if (la.t === "end" || la.t === ",") return { key, operator: negated ? "!" : "exists", values: [] };
    if (negated) throw new SelectorParseError(`found '${la.v}', expected: ',' or 'end of string'`);
    const op = this.next();
    if (op.t === "id" && (op.v === "in" || op.v === "notin")) return { key, operator: op.v, values: this.values() };
    if (op.t === "op" && (op.v === "=" || op.v === "==" || op.v === "!=")) {
      return { key, operator: op.v === "!=" ? "!=" : "=", values: [this.exactValue()] };
    }
    if (op.t === "op" && (op.v === ">" || op.v === "<")) throw new SelectorParseError(`operator '${op.v}' is not supported in label selectors here`);
    throw new SelectorParseError(`found '${op.v}', expected: '=', '!=', '==', 'in', notin'`);
  }

  private exactValue(): string {
    const la = this.peek();
    if (la.t === "end" || la.t === ",") return "";
    const tok = this.next();
    if (tok.t !== "id") throw new SelectorParseError(`found '${tok.v}', expected: identifier`);
    return tok.v;
  }

  /** `(a,b)`; empty elements are the empty value, `()` is `("")`. */
  private values(): string[] {
    const open = this.next();
    if (open.t !== "(") throw new SelectorParseError(`found '${open.v}' expected: '('`);
    const first = this.peek();
    if (first.t === ")") {
      this.next();
      return [""];
    }
    if (first.t !== "id" && first.t !== ",") throw new SelectorParseError(`found '${first.v}', expected: ',', ')' or identifier`);
    const set = new Set<string>();
    for (;;) {
      const tok = this.next();
      if (tok.t === "id") {
        set.add(tok.v);
        const la = this.peek();
        if (la.t === ")") break;
        if (la.t !== ",") throw new SelectorParseError(`found '${la.v}', expected: ',' or ')'`);
      } else if (tok.t === ",") {
        if (set.size === 0) set.add("");
        const la = this.peek();
        if (la.t === ")") {
          set.add("");
          break;
        }
        if (la.t === ",") {
          this.next();
          set.add("");
        }
      } else {
        throw new SelectorParseError(`found '${tok.v}', expected: ',', or identifier`);
      }
    }
    this.next(); // ')'
    return [...set];
  }
}

/**
 * The longest selector string parsed (label and field selectors alike).
 * Kubernetes caps them only by its URL limit; the parsers are linear, the
 * cap bounds the work of one request (a list over NATS is not bound by the
 * HTTP header limit).
 */
export const MAX_SELECTOR_LENGTH = 64 * 1024;

/**
 * Parses Kubernetes' label selector syntax: `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
 * The empty string selects everything. Throws SelectorParseError (also over MAX_SELECTOR_LENGTH).
 */
export function parseLabelSelector(s: string): LabelSelector {
  if (s.length > MAX_SELECTOR_LENGTH) throw new SelectorParseError(`invalid label selector: must be no more than ${MAX_SELECTOR_LENGTH} characters`);
  return makeSelector(new Parser(lex(s)).parse());
}

/** The selector `k=v,…` of a label map (ReplicationController's selector). */
export function selectorFromSet(set: Readonly<Record<string, string>>): LabelSelector {
  return makeSelector(Object.entries(set).map(([key, v]) => ({ key, operator: "=", values: [v] })));
}

/** The selector of a metav1.LabelSelector (matchLabels + matchExpressions). */
export function selectorFromLabelSelector(
  sel:
    { matchLabels?: Readonly<Record<string, string>>; matchExpressions?: readonly { key: string; operator: string; values?: readonly string[] }[] } | undefined,
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
        if (values.length) throw new SelectorParseError(EMPTY_FOR_EXISTS);
        reqs.push({ key: e.key, operator: "exists", values: [] });
        break;
      case "DoesNotExist":
        if (values.length) throw new SelectorParseError(EMPTY_FOR_EXISTS);
        reqs.push({ key: e.key, operator: "!", values: [] });
        break;
      default:
        throw new SelectorParseError(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    }
  }
  return makeSelector(reqs);
}
