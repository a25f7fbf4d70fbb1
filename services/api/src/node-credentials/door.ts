// The HTTP door of the node credential exchange: POST NODE_CREDENTIAL_PATH
// with {"nodeName": "..."} (JSON), answered with the NodeCredential JSON.
// Authentication and authorization (RBAC's non-resource rule `post` on the
// path, system:node-bootstrapper) happened in the gateway before.
import type { IncomingMessage, ServerResponse } from "node:http";
import { badRequest, methodNotAllowed, unavailable } from "@choreo/kit";
import type { UserInfo } from "../auth/types.js";
import { readBody } from "../http/body.js";
import { sendJson } from "../http/respond.js";
import { NODE_CREDENTIAL_PATH, type NodeCredential } from "./issuer.js";

export { NODE_CREDENTIAL_PATH };

/** What the door needs of the issuer. */
export interface NodeCredentialSource {
  issue(user: UserInfo, nodeName: unknown): Promise<NodeCredential>;
}

export function isNodeCredentialPath(pathname: string): boolean {
  return pathname === NODE_CREDENTIAL_PATH;
}

export async function serveNodeCredential(req: IncomingMessage, res: ServerResponse, user: UserInfo, issuer: NodeCredentialSource | undefined): Promise<void> {
  if (req.method !== "POST") throw methodNotAllowed(`${req.method ?? ""} is not supported on ${NODE_CREDENTIAL_PATH}: POST {"nodeName": …}`);
  if (!issuer) throw unavailable("this api issues no node credentials");
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req, 4096));
  } catch {
    throw badRequest(`the body of ${NODE_CREDENTIAL_PATH} is JSON: {"nodeName": "…"}`);
  }
  const nodeName = body && typeof body === "object" ? (body as { nodeName?: unknown }).nodeName : undefined;
  sendJson(res, 201, await issuer.issue(user, nodeName));
}
