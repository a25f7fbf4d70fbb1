// The tokencleaner, as Kubernetes' (pkg/controller/bootstrap/tokencleaner.go):
// a bootstrap token Secret past its `expiration` is deleted. The
// authenticator already refuses an expired token; this removes the Secret so
// `choreo token list` and `kubectl -n kube-system get secrets` do not keep
// dead credentials around. Run by the api (as the root CA publisher and the
// kubernetes Service keeper are): a sweep every `sweepMs` lists the
// bootstrap token Secrets of kube-system (field selector on type) and deletes
// the expired ones with a uid and resourceVersion precondition (a Secret
// renewed meanwhile is kept). With several api replicas each sweeps; a
// Secret another replica deleted first answers NotFound, which is fine.
import { isConflict, isNotFound, unwrap } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import { ListRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Secret } from "@choreo/kit/gen/choreo/core/v1/core";
import { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { BOOTSTRAP_NAMESPACE, BOOTSTRAP_TOKEN_TYPE, bootstrapTokenExpired } from "./bootstrap-tokens.js";

export interface TokenCleanerOptions {
  handlers: Pick<ApiHandlers, "list" | "delete">;
  log: Logger;
  /** How often expired tokens are looked for (default 10 s). */
  sweepMs?: number;
  now?: () => number;
}

/** Deletes expired bootstrap token Secrets. */
export class TokenCleaner implements Runnable {
  readonly name = "token-cleaner";
  constructor(private readonly opts: TokenCleanerOptions) {}

  /** One sweep: resolves to the names of the Secrets it deleted. */
  async sweep(): Promise<string[]> {
    const now = this.opts.now?.() ?? Date.now();
    const deleted: string[] = [];
    let cont = "";
    do {
      const page = await this.opts.handlers.list(
        ListRequest.fromPartial({
          resource: "secrets",
          namespace: BOOTSTRAP_NAMESPACE,
          fieldSelector: `type=${BOOTSTRAP_TOKEN_TYPE}`,
          limit: 500,
          continue: cont,
        }),
      );
      for (const o of page.items) {
        const s = unwrap(o) as Secret;
        if (s.type !== BOOTSTRAP_TOKEN_TYPE || s.metadata?.deletionTimestamp || !bootstrapTokenExpired(s, now)) continue;
        const name = s.metadata?.name ?? "";
        try {
          await this.opts.handlers.delete({
            resource: "secrets",
            namespace: BOOTSTRAP_NAMESPACE,
            name,
            options: DeleteOptions.fromPartial({ preconditions: { uid: s.metadata?.uid ?? "", resourceVersion: s.metadata?.resourceVersion ?? "" } }),
          });
          deleted.push(name);
        } catch (err) {
          // Gone already (another replica), or written since (its new expiration is looked at next sweep).
          if (!isNotFound(err) && !isConflict(err)) throw err;
        }
      }
      cont = page.metadata?.continue ?? "";
    } while (cont);
    return deleted;
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const deleted = await this.sweep();
        if (deleted.length) this.opts.log.info({ secrets: deleted }, "expired bootstrap tokens deleted");
      } catch (err) {
        if (signal.aborted) return;
        // The store is away: the next sweep tries again.
        this.opts.log.warn({ err }, "bootstrap token sweep failed");
      }
      await sleep(this.opts.sweepMs ?? 10_000, signal);
    }
  }
}
