// Who sent a request: a client certificate signed by the cluster's client
// CA, else a bearer token (static file, ServiceAccount token), else nobody.
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { unauthorized } from "@choreo/kit";
import type { TokenAuthenticator } from "./static-tokens.js";
import { ANONYMOUS, AUTHENTICATED, MASTERS, type UserInfo } from "./types.js";

/** Who every request is when a gateway is made without credentials (tests, embedded use): may do anything. */
export const UNAUTHENTICATED_ADMIN: UserInfo = { name: "system:admin", uid: "", groups: [MASTERS, AUTHENTICATED], extra: {} };

export interface AuthenticatorOptions {
  /** Token authenticators asked in order; none: no authentication (every request is UNAUTHENTICATED_ADMIN). */
  tokens?: TokenAuthenticator[];
  /** Client certificates are verified by the TLS server (its `ca`); here only read. */
  clientCerts?: boolean;
  /** Plain http without credentials is the legacy admin (kubectl sends none over http): a development switch. */
  allowAnonymousHttp?: boolean;
}

/** The subject of a verified client certificate: CN the user, each O a group, as Kubernetes' x509 authenticator. */
export function userOfCertificate(socket: TLSSocket): UserInfo | undefined {
  if (!socket.authorized) return undefined;
  const cert = socket.getPeerCertificate();
  if (!cert || !cert.subject) return undefined;
  const cn = cert.subject.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (!name) return undefined;
  const o = cert.subject.O;
  const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { name, uid: "", groups: [...new Set([...groups, AUTHENTICATED])], extra: {} };
}

/** The token of an `Authorization: Bearer …` value; undefined for another scheme or none. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m?.[1];
}

export class Authenticator {
  constructor(private readonly opts: AuthenticatorOptions) {}

  /** Whether requests are authenticated at all. */
  get enabled(): boolean {
    return this.opts.tokens !== undefined;
  }

  /** The user of a token by any of the token authenticators (TokenReview), or undefined. */
  async authenticateToken(token: string, audiences?: readonly string[]): Promise<UserInfo | undefined> {
    for (const t of this.opts.tokens ?? []) {
      const user = await t.authenticateToken(token, audiences);
      if (user) return user;
    }
    return undefined;
  }

  /** The user of a bearer token (gRPC metadata, a NATS header); 401 for an unknown or missing token. */
  async token(header: string | undefined, audiences?: readonly string[]): Promise<UserInfo> {
    if (!this.opts.tokens) return UNAUTHENTICATED_ADMIN;
    const token = bearerToken(header);
    if (token !== undefined) {
      for (const t of this.opts.tokens) {
        const user = await t.authenticateToken(token, audiences);
        if (user) return user;
      }
    }
    throw unauthorized();
  }

  /**
   * The user of an HTTP request: certificate, then token. A request without
   * credentials is `system:anonymous` when `open` (health, version), else 401;
   * a wrong token is 401 even where anonymous would do, as the apiserver.
   */
  async request(req: IncomingMessage, open: boolean): Promise<UserInfo> {
    if (!this.opts.tokens) return UNAUTHENTICATED_ADMIN;
    const socket = req.socket as TLSSocket;
    const encrypted = socket.encrypted === true;
    if (encrypted && this.opts.clientCerts) {
      const user = userOfCertificate(socket);
      if (user) return user;
    }
    const header = req.headers["authorization"];
    if (header === undefined) {
      if (!encrypted && this.opts.allowAnonymousHttp) return UNAUTHENTICATED_ADMIN;
      if (open) return ANONYMOUS;
      throw unauthorized();
    }
    return this.token(header);
  }
}
