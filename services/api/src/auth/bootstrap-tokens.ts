// Bootstrap tokens, as Kubernetes' (plugin/pkg/auth/authenticator/token/bootstrap
// and kubeadm's `token` commands): a Secret `bootstrap-token-<id>` of type
// `bootstrap.kubernetes.io/token` in kube-system holds `token-id`,
// `token-secret`, `expiration` (RFC 3339), `usage-bootstrap-authentication`
// and `auth-extra-groups`. `Bearer <id>.<secret>` is the user
// `system:bootstrap:<id>` in `system:bootstrappers` (+ the extra groups)
// while the Secret exists, says so, and has not expired. What such a user
// may do is RBAC's: the bootstrap policy lets it exchange itself for a node
// credential (services/api/src/node-credentials), nothing else.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { isNotFound, unwrap } from "@choreo/kit";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import type { TokenAuthenticator } from "./static-tokens.js";
import { AUTHENTICATED, type UserInfo } from "./types.js";

export const BOOTSTRAP_TOKEN_TYPE = "bootstrap.kubernetes.io/token";
export const BOOTSTRAP_TOKEN_PREFIX = "bootstrap-token-";
export const BOOTSTRAP_NAMESPACE = "kube-system";
export const BOOTSTRAPPERS_GROUP = "system:bootstrappers";
export const BOOTSTRAP_USER_PREFIX = "system:bootstrap:";

/** `[a-z0-9]{6}.[a-z0-9]{16}`, as kubeadm's BootstrapTokenPattern. */
export const BOOTSTRAP_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
/** An extra group must be a sub-group of system:bootstrappers (Kubernetes' BootstrapGroupPattern). */
export const BOOTSTRAP_GROUP_PATTERN = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** The fields of a bootstrap token Secret's data (kubeadm's names). */
export const BootstrapKey = {
  id: "token-id",
  secret: "token-secret",
  expiration: "expiration",
  description: "description",
  usageAuthentication: "usage-bootstrap-authentication",
  usageSigning: "usage-bootstrap-signing",
  extraGroups: "auth-extra-groups",
} as const;

/** The id and secret of a well-formed token, else undefined. */
export function parseBootstrapToken(token: string): { id: string; secret: string } | undefined {
  const m = BOOTSTRAP_TOKEN_PATTERN.exec(token);
  return m ? { id: m[1]!, secret: m[2]! } : undefined;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
function randomString(n: number): string {
  // 36 does not divide 256: bytes ≥ 252 are skipped so every character is as likely.
  let out = "";
  while (out.length < n) for (const b of randomBytes(n * 2)) if (b < 252 && out.length < n) out += ALPHABET[b % 36];
  return out;
}

/** A fresh token `<6>.<16>` (kubeadm's GenerateBootstrapToken). */
export function generateBootstrapToken(): string {
  return `${randomString(6)}.${randomString(16)}`;
}

/** The string value of one data key ("" when missing). */
export function secretString(s: Secret, key: string): string {
  const v = s.data?.[key];
  return v ? Buffer.from(v).toString("utf8") : "";
}

/** Whether a bootstrap token Secret has expired at `now` (ms); one without expiration never does; an unparsable one has. */
export function bootstrapTokenExpired(s: Secret, now: number): boolean {
  const exp = secretString(s, BootstrapKey.expiration);
  if (!exp) return false;
  const t = Date.parse(exp);
  return Number.isNaN(t) || t <= now;
}

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

/** Reads the token's Secret: the api's own handlers (get secrets in kube-system). */
export type BootstrapSecretGetter = (name: string) => Promise<Secret | undefined>;

/** A getter over the registry's handlers. */
export function registrySecretGetter(handlers: Pick<ApiHandlers, "get">): BootstrapSecretGetter {
  return async (name) => {
    try {
      return unwrap(await handlers.get({ resource: "secrets", namespace: BOOTSTRAP_NAMESPACE, name })) as Secret;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
}

/** Why a token was refused (for the log; the client only sees 401). */
export type BootstrapRefusal = "no-secret" | "deleting" | "wrong-type" | "wrong-id" | "wrong-secret" | "expired" | "not-for-authentication";

/** Bootstrap tokens as credentials (Kubernetes' bootstrap token authenticator). */
export class BootstrapTokenAuthenticator implements TokenAuthenticator {
  constructor(
    private readonly getSecret: BootstrapSecretGetter,
    private readonly opts: { now?: () => number; onRefused?: (id: string, why: BootstrapRefusal) => void } = {},
  ) {}

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const parsed = parseBootstrapToken(token);
    // Not this authenticator's form: another may know it.
    if (!parsed) return undefined;
    const refuse = (why: BootstrapRefusal): undefined => {
      this.opts.onRefused?.(parsed.id, why);
      return undefined;
    };
    const s = await this.getSecret(`${BOOTSTRAP_TOKEN_PREFIX}${parsed.id}`);
    if (!s) return refuse("no-secret");
    if (s.metadata?.deletionTimestamp) return refuse("deleting");
    if (s.type !== BOOTSTRAP_TOKEN_TYPE) return refuse("wrong-type");
    // Digests of equal length, compared in constant time: the time does not tell how much of the secret matched.
    if (!timingSafeEqual(digest(secretString(s, BootstrapKey.secret)), digest(parsed.secret))) return refuse("wrong-secret");
    if (secretString(s, BootstrapKey.id) !== parsed.id) return refuse("wrong-id");
    if (bootstrapTokenExpired(s, this.opts.now?.() ?? Date.now())) return refuse("expired");
    if (secretString(s, BootstrapKey.usageAuthentication) !== "true") return refuse("not-for-authentication");
    const extra = secretString(s, BootstrapKey.extraGroups)
      .split(",")
      .map((g) => g.trim())
      .filter((g) => g && BOOTSTRAP_GROUP_PATTERN.test(g));
    return {
      name: `${BOOTSTRAP_USER_PREFIX}${parsed.id}`,
      uid: "",
      groups: [...new Set([BOOTSTRAPPERS_GROUP, ...extra, AUTHENTICATED])],
      extra: {},
    };
  }
}
