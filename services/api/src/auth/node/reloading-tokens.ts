import { statSync } from "node:fs";
import { StaticTokens, type TokenAuthenticator } from "../static-tokens.js";
import type { UserInfo } from "../types.js";

/**
 * The static token file, read again when it changes: whoever starts a node
 * agent after the api (the harness, `choreo up` adding a node) appends the
 * agent's line, and the api knows it at its first request. An unknown token
 * looks at the file's mtime and size (a stat, at most once per `minIntervalMs`, default every time);
 * a known one too, at most once per `knownRecheckMs` (default 1 s), so that a
 * line removed from the file stops authenticating within a second even when
 * no unknown token comes to make it look. A file that no longer parses keeps
 * the tokens last read.
 */
export class ReloadingTokens implements TokenAuthenticator {
  private tokens: StaticTokens;
  private stamp: string;
  private checkedAt = 0;

  constructor(
    private readonly file: string,
    private readonly opts: { minIntervalMs?: number; knownRecheckMs?: number; onReload?: (users: number, err?: unknown) => void } = {},
  ) {
    this.tokens = StaticTokens.load(file);
    this.stamp = this.currentStamp();
  }

  get size(): number {
    return this.tokens.size;
  }

  authenticateToken(token: string): UserInfo | undefined {
    const found = this.tokens.authenticateToken(token);
    const interval = found ? Math.max(this.opts.minIntervalMs ?? 0, this.opts.knownRecheckMs ?? 1_000) : (this.opts.minIntervalMs ?? 0);
    const now = Date.now();
    if (now - this.checkedAt < interval) return found;
    this.checkedAt = now;
    const stamp = this.currentStamp();
    if (stamp === this.stamp) return found;
    try {
      this.tokens = StaticTokens.load(this.file);
      this.stamp = stamp;
      this.opts.onReload?.(this.tokens.size);
    } catch (err) {
      this.opts.onReload?.(this.tokens.size, err);
      return found;
    }
    return this.tokens.authenticateToken(token);
  }

  private currentStamp(): string {
    try {
      const s = statSync(this.file);
      return `${s.mtimeMs}:${s.size}:${s.ino}`;
    } catch {
      return "";
    }
  }
}
