import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseYaml } from "yaml";
import { badRequest, statusOf, tooLarge, type ApiError } from "@choreo/kit";
import { statusToKubeJson } from "@choreo/kit/kube-json";

/** Request bodies above this are refused with 413 (Kubernetes' limit). */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** Reads the body, refusing more than MAX_BODY_BYTES. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > MAX_BODY_BYTES) {
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** The media type without parameters, lower case. */
export function mediaType(req: IncomingMessage): string {
  return String(req.headers["content-type"] ?? "application/json").split(";")[0]?.trim().toLowerCase() ?? "application/json";
}

/** Decodes a JSON or YAML body to a plain value; 400 when malformed, 415 for protobuf. */
export function decodeBody(req: IncomingMessage, body: Buffer): unknown {
  const type = mediaType(req);
  const text = body.toString("utf8");
  if (type === "application/vnd.kubernetes.protobuf") {
    throw Object.assign(badRequest("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"), {}) as ApiError;
  }
  if (text.trim() === "") throw badRequest("the request body is empty");
  try {
    if (type.includes("yaml")) return parseYaml(text) as unknown;
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`the body of the request could not be decoded: ${(err as Error).message.split("\n")[0]}`);
  }
}

/** Writes a JSON response. */
export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Writes any thrown value as a Kubernetes Status. */
export function sendError(res: ServerResponse, err: unknown): number {
  const status = statusOf(err);
  if (!res.headersSent) sendJson(res, status.code, statusToKubeJson(status));
  else res.end();
  return status.code;
}

/** Which Table the client asked for, if any (`as=Table;g=meta.k8s.io`). */
export function wantsTable(req: IncomingMessage): boolean {
  const accept = String(req.headers["accept"] ?? "");
  return accept.split(",").some((a) => /as=Table/.test(a) && /g=meta\.k8s\.io/.test(a));
}
