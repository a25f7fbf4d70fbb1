// What every resource handler gets: the request, the parsed route, the api.
import type { IncomingMessage, ServerResponse } from "node:http";
import { badRequest, invalid } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import type { ApiHandlers, LogsHandler } from "../handlers/api-handlers.js";
import type { ResourceRoute } from "./routes.js";
import type { UserInfo } from "../auth/types.js";

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  route: ResourceRoute;
  /** Who the request acts as (after impersonation), already authorized for the route. */
  user: UserInfo;
  handlers: ApiHandlers;
  logs?: LogsHandler;
  log: Logger;
  /**
   * A signal for a long-running response (watch, followed log): aborted when
   * the client goes away or the gateway closes. Call `done` when finished.
   */
  stream(): { signal: AbortSignal; done: () => void };
}

/** A query parameter, "" when absent. */
export function param(url: URL, name: string): string {
  return url.searchParams.get(name) ?? "";
}

/** A boolean query parameter (true as Go reads it: 1, t, T, TRUE, true, True). */
export function flag(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  // Go's strconv.ParseBool, as the apiserver: the Python client sends `watch=True`.
  return v !== null && ["1", "t", "T", "TRUE", "true", "True"].includes(v);
}

/** An integer query parameter; undefined when absent, 400 when not an integer. */
export function intParam(url: URL, name: string, min = 0): number | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === "") return undefined;
  if (!/^-?\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) throw badRequest(`invalid value for ${name}: "${v}"`);
  return Number(v);
}

/** `dryRun=All` → true; absent → false; anything else → 400. */
export function dryRunOf(url: URL): boolean {
  const values = url.searchParams.getAll("dryRun").filter((v) => v !== "");
  if (values.length === 0) return false;
  if (values.every((v) => v === "All")) return true;
  throw badRequest(`Invalid dryRun value: ${values.join(",")}: supported values: "All"`);
}

/**
 * The field manager of a write: `fieldManager`, else the User-Agent's
 * program (`kubectl/v1.32.3 (linux/amd64) …` → `kubectl`), as the apiserver
 * defaults it. 422 when longer than 128 characters.
 */
export function fieldManagerOf(ctx: Pick<RequestContext, "url" | "req">): string {
  const given = ctx.url.searchParams.get("fieldManager") ?? "";
  if (given.length > 128)
    throw invalid("PatchOptions", "", [{ field: "fieldManager", reason: "FieldValueTooLong", message: `Too long: may not be more than 128 bytes` }]);
  if (given) return given;
  return String(ctx.req.headers["user-agent"] ?? "")
    .split("/")[0]!
    .slice(0, 128);
}
