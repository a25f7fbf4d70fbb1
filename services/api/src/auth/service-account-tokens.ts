// ServiceAccount tokens: JWTs the api signs (ES256, its own key), bound to a
// ServiceAccount (and a pod, when asked), an audience and a lifetime, as
// Kubernetes' bound service account tokens; and the authenticator that
// takes them back only while what they are bound to still exists.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, verify, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { TokenAuthenticator } from "./static-tokens.js";
import { AUTHENTICATED, type UserInfo } from "./types.js";

/** The issuer Kubernetes uses by default; also the api's audience. */
export const DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local";

/** What a token is bound to. */
export interface TokenBinding {
  namespace: string;
  serviceAccount: { name: string; uid: string };
  pod?: { name: string; uid: string };
}

/** The `kubernetes.io` claim and the registered ones. */
export interface TokenClaims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  "kubernetes.io": { namespace: string; serviceaccount: { name: string; uid: string }; pod?: { name: string; uid: string } };
}

/** Looks up whether what a token is bound to still exists (the ServiceAccount's and pod's uids match, the pod is not being deleted). */
export type BindingCheck = (b: TokenBinding) => Promise<boolean>;

const b64url = (b: Buffer | string): string => Buffer.from(b).toString("base64url");

/** The signing key in `pki/service-account.key` (0600), made once (EC P-256). */
export function ensureServiceAccountKey(pki: string): KeyObject {
  const file = path.join(pki, "service-account.key");
  if (!existsSync(file)) {
    mkdirSync(pki, { recursive: true, mode: 0o700 });
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  }
  return createPrivateKey(readFileSync(file, "utf8"));
}

export interface ServiceAccountTokensOptions {
  key: KeyObject;
  issuer?: string;
  /** Audiences the api itself accepts (a token for another audience is not a credential here). */
  apiAudiences?: string[];
  /** Seconds of clock skew allowed on nbf and exp. */
  leewaySeconds?: number;
  now?: () => number;
}

/** Issues and verifies ServiceAccount tokens with one key. */
export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: string[];
  private readonly publicKey: KeyObject;
  private readonly kid: string;
  private readonly leeway: number;
  private readonly now: () => number;

  constructor(private readonly opts: ServiceAccountTokensOptions) {
    this.issuer = opts.issuer ?? DEFAULT_ISSUER;
    this.apiAudiences = opts.apiAudiences ?? [this.issuer];
    this.publicKey = createPublicKey(opts.key);
    // Kubernetes' key id: the hash of the public key's DER.
    this.kid = b64url(
      createHash("sha256")
        .update(this.publicKey.export({ type: "spki", format: "der" }))
        .digest(),
    );
    this.leeway = opts.leewaySeconds ?? 60;
    this.now = opts.now ?? (() => Date.now());
  }

  /** A signed token for `binding`, valid `expirationSeconds` for `audiences` (the api's when empty). */
  issue(binding: TokenBinding, audiences: readonly string[], expirationSeconds: number): { token: string; claims: TokenClaims } {
    const now = Math.floor(this.now() / 1000);
    const claims: TokenClaims = {
      iss: this.issuer,
      sub: `system:serviceaccount:${binding.namespace}:${binding.serviceAccount.name}`,
      aud: audiences.length ? [...audiences] : [...this.apiAudiences],
      exp: now + expirationSeconds,
      iat: now,
      nbf: now,
      jti: randomUUID(),
      "kubernetes.io": {
        namespace: binding.namespace,
        serviceaccount: { ...binding.serviceAccount },
        ...(binding.pod ? { pod: { ...binding.pod } } : {}),
      },
    };
    const head = b64url(JSON.stringify({ alg: "ES256", kid: this.kid }));
    const body = b64url(JSON.stringify(claims));
    const sig = sign("sha256", Buffer.from(`${head}.${body}`), { key: this.opts.key, dsaEncoding: "ieee-p1363" });
    return { token: `${head}.${body}.${b64url(sig)}`, claims };
  }

  /**
   * The claims of a token this api signed, unexpired, for one of
   * `audiences` (the api's by default); undefined for anything else
   * (another issuer's JWT, a static token, garbage).
   */
  verify(token: string, audiences: readonly string[] = this.apiAudiences): TokenClaims | undefined {
    const parts = token.split(".");
    if (parts.length !== 3 || token.length > 16_384) return undefined;
    const [head = "", body = "", sig = ""] = parts;
    let header: { alg?: unknown; kid?: unknown };
    let claims: TokenClaims;
    try {
      header = JSON.parse(Buffer.from(head, "base64url").toString("utf8")) as typeof header;
      claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as TokenClaims;
    } catch {
      return undefined;
    }
    if (header.alg !== "ES256" || header.kid !== this.kid) return undefined;
    if (!verify("sha256", Buffer.from(`${head}.${body}`), { key: this.publicKey, dsaEncoding: "ieee-p1363" }, Buffer.from(sig, "base64url"))) return undefined;
    if (claims.iss !== this.issuer) return undefined;
    const now = Math.floor(this.now() / 1000);
    if (typeof claims.exp !== "number" || now > claims.exp + this.leeway) return undefined;
    if (typeof claims.nbf === "number" && now + this.leeway < claims.nbf) return undefined;
    const aud = Array.isArray(claims.aud) ? claims.aud : [String(claims.aud)];
    if (!aud.some((a) => audiences.includes(a))) return undefined;
    const k = claims["kubernetes.io"];
    if (!k?.namespace || !k.serviceaccount?.name) return undefined;
    return claims;
  }
}

/** The user a verified token stands for, as Kubernetes' serviceaccount authenticator. */
export function serviceAccountUser(claims: TokenClaims): UserInfo {
  const k = claims["kubernetes.io"];
  const extra: Record<string, string[]> = { "authentication.kubernetes.io/credential-id": [`JTI=${claims.jti}`] };
  if (k.pod) {
    extra["authentication.kubernetes.io/pod-name"] = [k.pod.name];
    extra["authentication.kubernetes.io/pod-uid"] = [k.pod.uid];
  }
  return {
    name: `system:serviceaccount:${k.namespace}:${k.serviceaccount.name}`,
    uid: k.serviceaccount.uid,
    groups: ["system:serviceaccounts", `system:serviceaccounts:${k.namespace}`, AUTHENTICATED],
    extra,
  };
}

/**
 * ServiceAccount tokens as credentials: valid signature, issuer, audience
 * and lifetime, and the ServiceAccount (and pod) they are bound to still
 * there with the same uid — a deleted and re-created account does not
 * inherit its predecessor's tokens. A positive lookup is remembered for a
 * few seconds.
 */
export class ServiceAccountAuthenticator implements TokenAuthenticator {
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly tokens: ServiceAccountTokens,
    private readonly bindingExists: BindingCheck,
    private readonly rememberMs = 5_000,
  ) {}

  async authenticateToken(token: string, audiences?: readonly string[]): Promise<UserInfo | undefined> {
    const claims = this.tokens.verify(token, audiences?.length ? audiences : undefined);
    if (!claims) return undefined;
    const k = claims["kubernetes.io"];
    const key = `${k.namespace}/${k.serviceaccount.name}/${k.serviceaccount.uid}/${k.pod?.name ?? ""}/${k.pod?.uid ?? ""}`;
    const seen = this.recent.get(key);
    if (seen === undefined || Date.now() - seen >= this.rememberMs) {
      if (!(await this.bindingExists({ namespace: k.namespace, serviceAccount: k.serviceaccount, ...(k.pod ? { pod: k.pod } : {}) }))) {
        this.recent.delete(key);
        return undefined;
      }
      if (this.recent.size > 10_000) this.recent.clear();
      this.recent.set(key, Date.now());
    }
    return serviceAccountUser(claims);
  }
}
