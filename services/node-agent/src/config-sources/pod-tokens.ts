// The projected serviceAccountToken sources of pods' volumes, as the kubelet's
// token manager (pkg/kubelet/token): a token bound to the pod asked of the
// api once, kept, and asked again when 80 % of its lifetime has passed or it
// is 24 h old, whichever comes first; a refresh that fails keeps the token
// while it is still valid and is retried with backoff. Tokens are
// credentials: never logged.
import type { TokenRequestJson } from "@choreo/kit/client";
import type { Pod, ServiceAccountTokenProjection } from "@choreo/kit/gen/choreo/core/v1/core";

/** What Kubernetes' ServiceAccount admission sets when a projection names none (3607 s: an hour and a bit, so a refresh is seen). */
export const DEFAULT_EXPIRATION_SECONDS = 3607;
/** A token older than this is refreshed whatever its lifetime (the kubelet's maxTTL). */
const MAX_TTL_MS = 24 * 3600_000;
/** The first wait after a failed refresh, doubled up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 5 * 60_000;

/** Asks the api for a token (ApiClient.createToken). */
export type RequestToken = (namespace: string, serviceAccount: string, req: TokenRequestJson) => Promise<TokenRequestJson>;

interface Held {
  token: string;
  /** When it was issued and when it expires (ms since the epoch). */
  issuedAt: number;
  expiresAt: number;
}

interface Entry {
  held?: Held;
  /** No refresh asked before this (after a failure). */
  notBefore: number;
  backoffMs: number;
}

/** Whether `held` is due for a refresh at `now`: 80 % of its lifetime passed, or 24 h old (the kubelet's requiresRefresh). */
export function requiresRefresh(held: Held, now: number): boolean {
  if (now >= held.issuedAt + MAX_TTL_MS) return true;
  return now >= held.issuedAt + 0.8 * (held.expiresAt - held.issuedAt);
}

/** The tokens of a node's pods, by pod uid, ServiceAccount, audience and lifetime. */
export class PodTokens {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(
    private readonly request: RequestToken,
    opts: { now?: () => number } = {},
  ) {
    this.now = opts.now ?? (() => Date.now());
  }

  /**
   * The token for `pod`'s projection `src`: the one held while it is not
   * due; else a new one from the api (bound to the pod by name and uid, for
   * `src.audience` or the api's own, `src.expirationSeconds` or 3607 s).
   * When asking fails, a held token that has not expired is kept (and
   * asked again after a backoff); without one the failure is thrown.
   */
  async token(pod: Pod, src: Pick<ServiceAccountTokenProjection, "audience" | "expirationSeconds">): Promise<string> {
    const m = pod.metadata;
    const sa = pod.spec?.serviceAccountName || "default";
    const seconds = src.expirationSeconds || DEFAULT_EXPIRATION_SECONDS;
    const key = JSON.stringify([m?.uid ?? "", sa, src.audience, seconds]);
    let e = this.entries.get(key);
    if (!e) this.entries.set(key, (e = { notBefore: 0, backoffMs: FIRST_BACKOFF_MS }));
    const now = this.now();
    if (e.held && (!requiresRefresh(e.held, now) || now < e.notBefore)) return e.held.token;
    try {
      const out = await this.request(m?.namespace ?? "", sa, {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: {
          ...(src.audience ? { audiences: [src.audience] } : {}),
          expirationSeconds: seconds,
          boundObjectRef: { kind: "Pod", apiVersion: "v1", name: m?.name ?? "", uid: m?.uid ?? "" },
        },
      });
      const token = out.status?.token;
      const expiresAt = Date.parse(out.status?.expirationTimestamp ?? "");
      if (!token || !Number.isFinite(expiresAt)) throw new Error("the api answered a TokenRequest without a token");
      // The lifetime the api gave (it may cut a long ask), counted from now.
      const lifetimeMs = (out.spec.expirationSeconds ?? seconds) * 1000;
      e.held = { token, issuedAt: this.now(), expiresAt: Math.min(expiresAt, this.now() + lifetimeMs) };
      e.notBefore = 0;
      e.backoffMs = FIRST_BACKOFF_MS;
      return token;
    } catch (err) {
      const at = this.now();
      if (e.held && at < e.held.expiresAt) {
        e.notBefore = at + e.backoffMs;
        e.backoffMs = Math.min(e.backoffMs * 2, MAX_BACKOFF_MS);
        return e.held.token;
      }
      throw err;
    }
  }

  /** Forgets the tokens of the pod `uid` (stopped). */
  forget(uid: string): void {
    for (const k of this.entries.keys()) if ((JSON.parse(k) as string[])[0] === uid) this.entries.delete(k);
  }

  /** How many tokens are held (tests, metrics). */
  get size(): number {
    return this.entries.size;
  }
}
