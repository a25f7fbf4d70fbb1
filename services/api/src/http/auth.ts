// Bearer tokens, compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { unauthorized } from "@choreo/kit";
import { isOpenPath } from "./routes.js";

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

/** Checks a request's credentials; returns an authenticator that throws 401 Unauthorized. */
export function authenticator(opts: { tokens?: string[]; allowAnonymousHttp?: boolean }): (req: IncomingMessage, pathname: string) => void {
  const tokens = opts.tokens?.filter((t) => t !== "").map(digest);
  return (req, pathname) => {
    if (!tokens || isOpenPath(pathname)) return;
    const header = req.headers["authorization"];
    const encrypted = (req.socket as TLSSocket).encrypted === true;
    if (header === undefined && !encrypted && opts.allowAnonymousHttp) return;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(String(header ?? ""));
    if (!m) throw unauthorized();
    const given = digest(m[1]!);
    // Compare against every token so the time does not tell which one matched.
    let ok = false;
    for (const t of tokens) ok = timingSafeEqual(t, given) || ok;
    if (!ok) throw unauthorized();
  };
}
