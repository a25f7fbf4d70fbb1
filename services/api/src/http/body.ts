// Request bodies: bounded reading, media types, JSON/YAML decoding.
import type { IncomingMessage } from "node:http";
import { Lexer, parse as parseYaml } from "yaml";
import { ApiError, badRequest, failure, Reason, tooLarge, unsupportedMediaType } from "@choreo/kit";
import { keepProtobufBody, protobufBodyToJson } from "./protobuf.js";

/** Largest request body accepted (Kubernetes' limit): 3 MiB. */
export const MAX_BODY = 3 * 1024 * 1024;
// After the limit, what is still drained (so the client reads the 413) before the socket is cut.
const MAX_DRAIN = 16 * 1024 * 1024;

export const PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"] as const;
export const APPLY_PATCH = "application/apply-patch+yaml";
const PROTOBUF = "application/vnd.kubernetes.protobuf";
export const YAML_TYPES = new Set(["application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"]);

/** The media type of the request body, lower case, without parameters ("" when absent). */
export function mediaType(req: IncomingMessage): string {
  return String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
}

/**
 * Reads the whole body as text; 413 when it passes MAX_BODY (the rest is
 * drained up to a bound, not kept; then the connection is cut).
 */
/** Request bodies as read, for the audit log's Request level (JSON bodies are written, others left out). */
const bodies = new WeakMap<IncomingMessage, Buffer>();

/** The body `readBody` read from `req` (not protobuf), if any. */
export function bodyRead(req: IncomingMessage): Buffer | undefined {
  return bodies.get(req);
}

export function readBody(req: IncomingMessage, limit = MAX_BODY): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? "0");
  return new Promise((resolve, reject) => {
    if (req.readableEnded) {
      resolve("");
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const fail = (err: ApiError) => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      reject(err);
    };
    if (Number.isFinite(declared) && declared > limit) fail(tooLarge(`Request entity too large: limit is ${limit}`));
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (failed) {
        if (size > limit + MAX_DRAIN) req.destroy();
        return;
      }
      if (size > limit) {
        fail(tooLarge(`Request entity too large: limit is ${limit}`));
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (failed) return;
      const bytes = Buffer.concat(chunks);
      if (mediaType(req) === PROTOBUF) keepProtobufBody(req, bytes);
      else bodies.set(req, bytes);
      resolve(bytes.toString("utf8"));
    });
    req.on("error", (err) => fail(badRequest(`reading the request body: ${err.message}`)));
    req.on("aborted", () => fail(badRequest("the client aborted the request")));
  });
}

/**
 * Resolves once the request body is read to its end (readBody keeps
 * draining it after a 413), its socket is closed, or after `ms`. A 413
 * written before then would close the connection under a client still
 * sending, which then sees EPIPE instead of the answer.
 */
export function bodyDrained(req: IncomingMessage, ms: number): Promise<void> {
  if (req.readableEnded || req.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      req.off("end", done);
      req.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    req.once("end", done);
    req.once("close", done);
  });
}

/** Parses a JSON or YAML body by its Content-Type; 415 for protobuf and unknown types, 400 when malformed. */
export function decodeBody(req: IncomingMessage, text: string): unknown {
  const type = mediaType(req);
  // Protobuf: the envelope transcoded to Kubernetes JSON (readBody kept the bytes).
  if (type === PROTOBUF) return protobufBodyToJson(req);
  if (text.trim() === "") throw badRequest("the request body is empty");
  if (YAML_TYPES.has(type)) return parseYamlText(text);
  if (type === "" || type === "application/json" || type === "*/*" || PATCH_TYPES.includes(type as (typeof PATCH_TYPES)[number])) return parseJsonText(text);
  throw unsupportedMediaType(
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, ${PROTOBUF}`,
  );
}

/**
 * Deepest nesting of objects and lists accepted in a JSON or YAML body (no
 * kind nests past ~15). Deeper bodies are refused before parsing: the YAML
 * parser recurses and, near the stack's end, could take the process down
 * (out of memory compiling a RegExp), and the patch and decoding code recurse too.
 */
export const MAX_DEPTH = 100;

const tooDeep = () => badRequest(`the request body nests deeper than ${MAX_DEPTH} levels`);

/** 400 when JSON text nests deeper than MAX_DEPTH (`[` and `{` outside strings). */
export function checkJsonNesting(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) throw tooDeep();
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
}

/**
 * 400 when YAML text nests deeper than MAX_DEPTH, from the yaml package's
 * Lexer (iterative; it knows quotes, comments and block scalars): flow
 * collections by their brackets, block ones by a line's indentation and its
 * leading `- ` / `? ` indicators (two columns a level).
 */
export function checkYamlNesting(text: string): void {
  let flow = 0;
  let lineStart = true;
  let column = 0;
  for (const tok of new Lexer().lex(text)) {
    if (tok === "\n") {
      lineStart = true;
      column = 0;
      continue;
    }
    if (lineStart) {
      // The Lexer's one-character control tokens (document, scalar, flow error) mark no content.
      if (tok.length === 1 && tok.charCodeAt(0) < 0x20) continue;
      if (/^[ \t]+$/.test(tok)) column += tok.length;
      else if (tok === "-" || tok === "?") column += 1;
      else lineStart = false;
      if (column > 2 * MAX_DEPTH) throw tooDeep();
    }
    if (tok === "[" || tok === "{") {
      if (++flow > MAX_DEPTH) throw tooDeep();
    } else if ((tok === "]" || tok === "}") && flow > 0) flow--;
  }
}

/** JSON.parse with Kubernetes-like 400 wording. */
export function parseJsonText(text: string): unknown {
  checkJsonNesting(text);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`the request body is not valid JSON: ${(err as Error).message}`);
  }
}

function parseYamlText(text: string): unknown {
  return parseYamlBody(text, "the request body is not valid YAML");
}

/**
 * A client's YAML document as JSON values; a 400 starting with `what` when it
 * nests too deep, does not parse, or holds an alias to its own ancestor
 * (`a: &a [*a]` parses to a cycle, which no JSON can carry; Kubernetes
 * refuses it too: "anchor value contains itself").
 */
export function parseYamlBody(text: string, what: string): unknown {
  checkYamlNesting(text);
  let doc: unknown;
  try {
    // Duplicate keys are fieldValidation's business (field-validation.ts), not a syntax error.
    // logLevel error: the parser's warnings about a client's YAML (ambiguous anchors, collection
    // keys) would go to the process's stderr through process.emitWarning, one per request.
    doc = parseYaml(text, { maxAliasCount: 100, uniqueKeys: false, logLevel: "error" }) as unknown;
  } catch (err) {
    throw badRequest(`${what}: ${(err as Error).message}`);
  }
  try {
    JSON.stringify(doc);
  } catch {
    throw badRequest(`${what}: an anchor's value contains itself`);
  }
  return doc;
}

/** The patch type of a PATCH (server-side apply included); 415 for anything else. */
export function patchTypeOf(req: IncomingMessage): (typeof PATCH_TYPES)[number] | typeof APPLY_PATCH {
  const type = mediaType(req);
  if (type === APPLY_PATCH) return APPLY_PATCH;
  if (!PATCH_TYPES.includes(type as (typeof PATCH_TYPES)[number])) {
    throw new ApiError(
      failure(
        415,
        Reason.UnsupportedMediaType,
        `the body of the request was in an unknown format - accepted media types include: ${[...PATCH_TYPES, APPLY_PATCH].join(", ")}`,
      ),
    );
  }
  return type as (typeof PATCH_TYPES)[number];
}

/** What the client accepts: a Table (v1 or v1beta1) or plain JSON. */
export interface Negotiated {
  table?: "v1" | "v1beta1";
}

/** Reads Accept: `application/json;as=Table;v=v1;g=meta.k8s.io` (first acceptable entry wins); 406 for protobuf-only. */
export function negotiate(req: IncomingMessage): Negotiated {
  const accept = String(req.headers["accept"] ?? "").trim();
  if (accept === "") return {};
  let jsonOk = false;
  for (const entry of accept.split(",")) {
    const [type, ...params] = entry.split(";").map((s) => s.trim());
    const p = new Map(
      params.map((kv) => {
        const i = kv.indexOf("=");
        return [kv.slice(0, i).trim().toLowerCase(), kv.slice(i + 1).trim()] as const;
      }),
    );
    const t = (type ?? "").toLowerCase();
    // Plain protobuf is answered (protobuf.ts); a protobuf Table is not.
    if (t === PROTOBUF && !p.has("as")) {
      jsonOk = true;
      break;
    }
    if (t !== "application/json" && t !== "*/*" && t !== "application/*" && !YAML_TYPES.has(t)) continue;
    const as = p.get("as");
    if (as === undefined) {
      jsonOk = true;
      break;
    }
    if (as === "Table" && p.get("g") === "meta.k8s.io" && (p.get("v") === "v1" || p.get("v") === "v1beta1")) {
      return { table: p.get("v") as "v1" | "v1beta1" };
    }
  }
  if (!jsonOk)
    throw new ApiError(
      failure(
        406,
        Reason.NotAcceptable,
        `only the following media types are accepted: application/json, ${PROTOBUF}, application/json;as=Table;v=v1;g=meta.k8s.io`,
      ),
    );
  return {};
}
