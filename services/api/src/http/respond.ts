// Writing responses: JSON bodies, Status errors, the success Status.
import type { ServerResponse } from "node:http";
import { statusOf, type Status } from "@choreo/kit";
import { statusToKubeJson } from "@choreo/kit/kube-json";
import { inProtobuf, sendProtobuf } from "./protobuf.js";

/** Writes a JSON body with its length (protobuf when the request asked for it and the kind has a protobuf form). */
export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (inProtobuf(res, body)) return sendProtobuf(res, code, body as Record<string, unknown>);
  const text = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-cache, private" });
  res.end(text);
}

/** The HTTP code of a Status (500 when unset). */
export function codeOf(status: Status): number {
  return status.code >= 100 && status.code <= 599 ? status.code : 500;
}

/** Writes any error as a Kubernetes Status with its code. */
export function sendError(res: ServerResponse, err: unknown, extraHeaders: Record<string, string> = {}): number {
  const status = statusOf(err);
  const code = codeOf(status);
  if (res.headersSent) {
    res.end();
    return code;
  }
  for (const [k, v] of Object.entries(extraHeaders)) res.setHeader(k, v);
  // As the apiserver: a Status saying when to try again (429 of flow control, 503 of the store away) says it in Retry-After too (client-go waits that long).
  if ((status.details?.retryAfterSeconds ?? 0) > 0) res.setHeader("Retry-After", String(status.details!.retryAfterSeconds));
  sendJson(res, code, statusToKubeJson({ ...status, code }));
  return code;
}

/** `{"kind":"Status","status":"Success","code":N}`, as Kubernetes answers a binding. */
export function successStatus(code: number): Record<string, unknown> {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code };
}
