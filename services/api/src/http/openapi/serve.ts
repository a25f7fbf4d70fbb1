// Serving the OpenAPI documents as kube-openapi's handlers do: bytes and ETag
// computed once; `If-None-Match` → 304; the v3 index names each group-version
// document with `?hash=<ETag>`; a request with the current hash is immutable
// (cached a year), a stale hash is redirected (301) to the current one.
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ApiError, failure, Reason } from "@choreo/kit";
import { pathNotFound } from "../routes.js";
import { openapiV2, openapiV3, v3GroupVersions } from "./documents.js";
import { encodeV2Document } from "./gnostic.js";

/** The protobuf media type of swagger 2.0 (gnostic's openapi_v2.Document), what kubectl 1.20 asks for. */
export const V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const V2_PROTOBUF_ALT = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

interface Served {
  body: Buffer;
  etag: string;
}

/** kube-openapi's ETag: the upper-case hex SHA-512 of the bytes. */
function served(body: Buffer): Served {
  return { body, etag: createHash("sha512").update(body).digest("hex").toUpperCase() };
}

const cache = new Map<string, Served>();
function once(key: string, make: () => Buffer): Served {
  let s = cache.get(key);
  if (!s) {
    s = served(make());
    cache.set(key, s);
  }
  return s;
}

function notAcceptable(types: string[]): ApiError {
  return new ApiError(failure(406, Reason.NotAcceptable, `only the following media types are accepted: ${types.join(", ")}`));
}

/** The media types of an Accept header, in order, without parameters. */
function accepted(req: IncomingMessage): string[] {
  const accept = String(req.headers["accept"] ?? "").trim();
  if (!accept) return ["*/*"];
  return accept.split(",").map((e) => (e.split(";")[0] ?? "").trim().toLowerCase());
}

function send(req: IncomingMessage, res: ServerResponse, s: Served, contentType: string, headers: Record<string, string> = {}): void {
  const etag = `"${s.etag}"`;
  const common = { ETag: etag, Vary: "Accept", ...headers };
  const inm = String(req.headers["if-none-match"] ?? "");
  if (inm && inm.split(",").some((t) => t.trim() === etag || t.trim() === "*")) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  res.writeHead(200, { "Content-Type": contentType, "Content-Length": s.body.length, ...common });
  res.end(s.body);
}

/** GET /openapi/v2: JSON, or gnostic protobuf when asked for (first acceptable type wins). */
export function serveOpenApiV2(req: IncomingMessage, res: ServerResponse): void {
  for (const t of accepted(req)) {
    if (t === V2_PROTOBUF || t === V2_PROTOBUF_ALT) {
      return send(
        req,
        res,
        once("v2.pb", () => Buffer.from(encodeV2Document(openapiV2()))),
        V2_PROTOBUF_ALT,
      );
    }
    if (t === "application/json" || t === "*/*" || t === "application/*") {
      return send(
        req,
        res,
        once("v2.json", () => Buffer.from(JSON.stringify(openapiV2()))),
        "application/json",
      );
    }
  }
  throw notAcceptable(["application/json", V2_PROTOBUF]);
}

function v3Json(gv: string): Served | undefined {
  const doc = openapiV3(gv);
  return doc ? once(`v3:${gv}`, () => Buffer.from(JSON.stringify(doc))) : undefined;
}

// v3 in protobuf (`application/com.github.proto-openapi.spec.v3@v1.0+protobuf`) is not
// served: no kubectl asks for it; such an Accept alone is a 406.
function wantsJson(req: IncomingMessage): void {
  const types = accepted(req);
  if (!types.some((t) => t === "application/json" || t === "*/*" || t === "application/*")) throw notAcceptable(["application/json"]);
}

/** The v3 index: `{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=…"},…}}`. */
export function openapiV3Index(): Record<string, unknown> {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of v3GroupVersions()) {
    const s = v3Json(gv);
    if (s) paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${s.etag}` };
  }
  return { paths };
}

/** GET /openapi/v3 and /openapi/v3/<group-version> (`sub` is "" or e.g. `apis/apps/v1`). */
export function serveOpenApiV3(req: IncomingMessage, res: ServerResponse, sub: string): void {
  wantsJson(req);
  if (sub === "") {
    const s = once("v3", () => Buffer.from(JSON.stringify(openapiV3Index())));
    return send(req, res, s, "application/json");
  }
  const s = v3Json(sub);
  if (!s) throw pathNotFound();
  const hash = new URL(req.url ?? "/", "http://x").searchParams.get("hash");
  if (hash !== null && hash !== "") {
    if (hash !== s.etag) {
      const location = `/openapi/v3/${sub}?hash=${s.etag}`;
      res.writeHead(301, { Location: location, "Content-Length": 0, "Cache-Control": "no-cache, private" });
      res.end();
      return;
    }
    const expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
    return send(req, res, s, "application/json", { "Cache-Control": "public, immutable", Expires: expires });
  }
  return send(req, res, s, "application/json", { "Cache-Control": "no-cache, private" });
}
