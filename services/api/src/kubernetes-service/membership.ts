// Which api replicas are alive and where pods reach them: the `kubernetes`
// Endpoints list every one (Kubernetes' lease endpoint reconciler). Each
// replica renews its address and port in a Redis hash every `renewMs` with
// an expiry `ttlMs` ahead (Redis' clock, so replicas on machines with skewed
// clocks agree); the live members are those not yet expired, and a replica
// leaving cleanly removes itself. Kept in Redis beside the objects, not as
// API objects: a renewal every few seconds would move the revision line.
import type { Redis } from "ioredis";
import { API_MEMBERS_KEY } from "../storage/keys.js";

export interface ApiEndpoint {
  ip: string;
  port: number;
}

/** What the keeper needs of the membership. */
export interface Membership {
  /** Writes (or refreshes) this replica's entry. */
  renew(): Promise<void>;
  /** The live replicas' endpoints, sorted; this replica's own is always among them. */
  members(): Promise<ApiEndpoint[]>;
  /** Removes this replica's entry (a clean shutdown). */
  leave(): Promise<void>;
  /** How often `renew` is due (ms). */
  readonly renewMs: number;
}

export const MEMBERS_KEY = API_MEMBERS_KEY;

/** HDEL of each given field whose expiry (its value) is at or before ARGV[1]. */
const DROP_EXPIRED = `
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  local expiry = tonumber(redis.call('HGET', KEYS[1], ARGV[i]))
  if expiry == nil or expiry <= now then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 0`;

const field = (e: ApiEndpoint) => `${e.ip}:${e.port}`;

function parseField(f: string): ApiEndpoint | undefined {
  const at = f.lastIndexOf(":");
  const port = Number(f.slice(at + 1));
  return at > 0 && Number.isInteger(port) && port > 0 && port < 65536 ? { ip: f.slice(0, at), port } : undefined;
}

/** Endpoints in a stable order (the same list from every replica). */
export function sortEndpoints(list: ApiEndpoint[]): ApiEndpoint[] {
  const seen = new Map(list.map((e) => [field(e), e]));
  return [...seen.values()].sort((a, b) => a.port - b.port || a.ip.localeCompare(b.ip, "en", { numeric: true }));
}

export class RedisMembership implements Membership {
  readonly renewMs: number;
  private readonly ttlMs: number;

  constructor(
    private readonly redis: Pick<Redis, "hset" | "hgetall" | "hdel" | "time" | "eval">,
    private readonly self: ApiEndpoint,
    opts: { renewMs?: number; ttlMs?: number } = {},
  ) {
    this.renewMs = opts.renewMs ?? 10_000;
    this.ttlMs = opts.ttlMs ?? 3 * this.renewMs;
  }

  private async now(): Promise<number> {
    const [s, us] = await this.redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  async renew(): Promise<void> {
    await this.redis.hset(MEMBERS_KEY, field(this.self), String((await this.now()) + this.ttlMs));
  }

  async members(): Promise<ApiEndpoint[]> {
    const [all, now] = await Promise.all([this.redis.hgetall(MEMBERS_KEY), this.now()]);
    const live: ApiEndpoint[] = [this.self];
    const expired: string[] = [];
    const malformed: string[] = [];
    for (const [f, until] of Object.entries(all)) {
      const e = parseField(f);
      if (!e) malformed.push(f);
      else if (Number(until) <= now) expired.push(f);
      else live.push(e);
    }
    if (malformed.length) await this.redis.hdel(MEMBERS_KEY, ...malformed);
    // Dead replicas' entries go, each only if still expired (a replica of that address may have renewed since).
    if (expired.length) await this.redis.eval(DROP_EXPIRED, 1, MEMBERS_KEY, String(now), ...expired);
    return sortEndpoints(live);
  }

  async leave(): Promise<void> {
    await this.redis.hdel(MEMBERS_KEY, field(this.self));
  }
}
