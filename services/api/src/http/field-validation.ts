// fieldValidation (Ignore | Warn | Strict) as the apiserver does it: unknown
// and duplicate fields become Warning headers, a 400, or nothing.
import type { ServerResponse } from "node:http";
import { isMap, isScalar, isSeq, parseDocument, type Node as YamlNode } from "yaml";
import { badRequest } from "@choreo/kit";

export type FieldValidation = "Ignore" | "Warn" | "Strict";

/** The `fieldValidation` query parameter; Warn when absent (Kubernetes' default), 400 when not one of the three. */
export function fieldValidationOf(url: URL): FieldValidation {
  const v = url.searchParams.get("fieldValidation") ?? "";
  if (v === "") return "Warn";
  if (v === "Ignore" || v === "Warn" || v === "Strict") return v;
  throw badRequest(`fieldValidation: Unsupported value: "${v}": supported values: "Ignore", "Strict", "Warn"`);
}

/** One problem per offending path, worded as Kubernetes' strict decoder does. */
export function fieldProblems(duplicates: readonly string[], unknown: readonly string[]): string[] {
  return [...duplicates.map((p) => `duplicate field "${p}"`), ...unknown.map((p) => `unknown field "${p}"`)];
}

/**
 * Acts on the problems: Strict → 400 (`<Kind> in version "<v>" cannot be
 * handled as a <Kind>: strict decoding error: …` when `kind` is given, as a
 * create or update says it), Warn → one `Warning: 299 - "…"` header each,
 * Ignore → nothing.
 */
export function reportFieldProblems(res: ServerResponse, mode: FieldValidation, problems: readonly string[], kind?: { kind: string; version: string }): void {
  if (problems.length === 0 || mode === "Ignore") return;
  if (mode === "Strict") {
    const strict = `strict decoding error: ${problems.join(", ")}`;
    throw badRequest(kind ? `${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${strict}` : strict);
  }
  addWarnings(res, problems);
}

/** Adds `Warning: 299 - "text"` headers (RFC 7234 form, agent "-"), after any already set. */
export function addWarnings(res: ServerResponse, texts: readonly string[]): void {
  if (texts.length === 0 || res.headersSent) return;
  const prev = res.getHeader("Warning");
  const list = prev === undefined ? [] : Array.isArray(prev) ? prev.map(String) : [String(prev)];
  for (const t of texts) list.push(`299 - ${quote(t)}`);
  res.setHeader("Warning", list);
}

// A quoted-string: backslash before `"` and `\`; control characters become spaces; anything past
// ASCII as \uXXXX (Node refuses a header string with a character past U+00FF: it was a 500).
function quote(text: string): string {
  const escaped = text
    .replace(/[\\"]/g, (c) => `\\${c}`)
    .replace(/[\u0000-\u001f\u007f]/g, " ")
    .replace(/[^\u0000-\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `"${escaped}"`;
}

// ---- duplicate keys: JSON.parse and yaml keep one; Kubernetes reports them ----

/** Paths of keys that occur twice in one JSON object (`metadata.name`, `spec.containers[0].image`), of valid JSON. */
export function duplicateJsonFields(text: string): string[] {
  const found: string[] = [];
  let i = 0;
  const ws = (): void => {
    while (i < text.length && (text[i] === " " || text[i] === "\n" || text[i] === "\r" || text[i] === "\t")) i++;
  };
  const str = (): string => {
    const start = i;
    i++; // opening quote
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (path: string): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const seen = new Set<string>();
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        const key = str();
        const p = path ? `${path}.${key}` : key;
        if (seen.has(key)) found.push(p);
        seen.add(key);
        ws();
        i++; // ':'
        value(p);
        ws();
        if (text[i++] === "}") return;
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (let n = 0; ; n++) {
        value(`${path}[${n}]`);
        ws();
        if (text[i++] === "]") return;
      }
    } else if (c === '"') str();
    else while (i < text.length && !",}] \n\r\t".includes(text[i]!)) i++;
  };
  try {
    value("");
  } catch {
    // not valid JSON: JSON.parse reports it
  }
  return found;
}

/** Paths of keys that occur twice in one YAML mapping (first document). */
export function duplicateYamlFields(text: string): string[] {
  const found: string[] = [];
  let doc;
  try {
    doc = parseDocument(text, { uniqueKeys: false });
  } catch {
    return found;
  }
  const walk = (node: unknown, path: string): void => {
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        const p = path ? `${path}.${key}` : key;
        if (seen.has(key)) found.push(p);
        seen.add(key);
        walk(pair.value, p);
      }
    } else if (isSeq(node)) node.items.forEach((item, n) => walk(item as YamlNode, `${path}[${n}]`));
  };
  walk(doc.contents, "");
  return found;
}
