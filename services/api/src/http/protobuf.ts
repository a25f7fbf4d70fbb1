// Kubernetes protobuf on the wire: which requests want it, protobuf request
// bodies, protobuf responses. Transcoded through Kubernetes JSON by
// @choreo/kit/kube-proto, so the rest of the gateway only sees JSON.
import type { IncomingMessage, ServerResponse } from "node:http";
import { badRequest } from "@choreo/kit";
import { decodeObject, encodeObject, hasProtobuf, PROTOBUF, type KubeJson } from "@choreo/kit/kube-proto";

export { PROTOBUF, PROTOBUF_WATCH, encodeWatchFrame } from "@choreo/kit/kube-proto";

const JSON_LIKE = new Set(["application/json", "application/yaml", "application/*", "*/*"]);

/**
 * Whether the first acceptable Accept entry (by q, then order) is plain
 * protobuf, as the apiserver negotiates: kubectl's typed commands send
 * `application/vnd.kubernetes.protobuf,application/json`. Entries with
 * `as=` (Tables) are not plain protobuf.
 */
export function wantsProtobuf(req: IncomingMessage): boolean {
  const accept = String(req.headers["accept"] ?? "").trim();
  if (accept === "") return false;
  const entries = accept.split(",").map((entry, i) => {
    const [type, ...params] = entry.split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    return { type: type ?? "", as: params.some((p) => p.startsWith("as=")), q: q ? Number(q.slice(2)) : 1, i };
  });
  entries.sort((a, b) => b.q - a.q || a.i - b.i);
  for (const e of entries) {
    if (e.q <= 0 || Number.isNaN(e.q)) continue;
    if (e.type === PROTOBUF) {
      if (!e.as) return true;
      continue; // protobuf Tables are not served; the next entry decides
    }
    if (JSON_LIKE.has(e.type) || e.type.endsWith("yaml")) return false;
  }
  return false;
}

// Responses whose request asked for protobuf (set once the route is known).
const protobufResponses = new WeakSet<ServerResponse>();

/** Marks a response as wanting protobuf bodies (objects, lists, Status). */
export function answerInProtobuf(res: ServerResponse): void {
  protobufResponses.add(res);
}

/** Whether `body` should be written as protobuf: asked for, and a kind with a protobuf form (not a Table). */
export function inProtobuf(res: ServerResponse, body: unknown): boolean {
  return protobufResponses.has(res) && hasProtobuf(body);
}

/** Whether the request asked for protobuf (for watch framing). */
export function protobufAsked(res: ServerResponse): boolean {
  return protobufResponses.has(res);
}

/** Writes Kubernetes JSON as a protobuf envelope with its length. */
export function sendProtobuf(res: ServerResponse, code: number, body: KubeJson): void {
  const bytes = encodeObject(body);
  res.writeHead(code, { "Content-Type": PROTOBUF, "Content-Length": bytes.length, "Cache-Control": "no-cache, private" });
  res.end(bytes);
}

// Raw protobuf request bodies, kept by readBody until decodeBody asks for them.
const rawBodies = new WeakMap<IncomingMessage, Buffer>();

/** Keeps the bytes of a protobuf request body (readBody's text would lose them). */
export function keepProtobufBody(req: IncomingMessage, bytes: Buffer): void {
  rawBodies.set(req, bytes);
}

/** The protobuf request body as Kubernetes JSON (apiVersion and kind from the envelope); 400 when malformed. */
export function protobufBodyToJson(req: IncomingMessage): KubeJson {
  const bytes = rawBodies.get(req);
  if (!bytes || bytes.length === 0) throw badRequest("the request body is empty");
  return decodeObject(bytes);
}
