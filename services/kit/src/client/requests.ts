// One reply inbox per connection for the api client's requests, in place of
// nats.js' `request()`: nats.js builds a RequestError (a stack captured) for
// every request that succeeded — its RequestOne settles its promise a second
// time on cancel, with a new error nobody reads — plus a promise and a
// closure for its timer: 2–3 % of each actor's busy time at 1,000 pods/s.
// Here a request is a map entry and a timer; errors are made only for the
// requests that fail.
import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";

/** A request of {@link requestOne} that got no answer in time; its message names the timeout. */
export class RequestTimeoutError extends Error {
  override readonly name = "RequestTimeoutError";
}

/** No subscriber answered the request's subject (the server's 503 status reply). */
export class NoRespondersError extends Error {
  override readonly name = "NoRespondersError";
}

interface Pending {
  subject: string;
  resolve(m: Msg): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/**
 * The requests in flight on one connection: one subscription to
 * `<inbox>.*`, each request's reply subject `<inbox>.<token>`. The inbox is
 * under the connection's `inboxPrefix` (a restricted NATS user may subscribe
 * to its own inboxes only), as nats.js' own requests are.
 */
class Requests {
  private base = "";
  private sub: Subscription | undefined;
  private readonly pending = new Map<string, Pending>();
  private next = 0;

  constructor(private readonly nc: NatsConnection) {
    void this.watchPermissions();
  }

  request(subject: string, data: Uint8Array, timeoutMs: number, headers: MsgHdrs | undefined): Promise<Msg> {
    const token = (this.next++).toString(36);
    return new Promise<Msg>((resolve, reject) => {
      try {
        // Made at the first request (and again after the last one closed); the closed connection refuses it.
        if (!this.sub) this.subscribe();
      } catch (err) {
        reject(err as Error);
        return;
      }
      const timer = setTimeout(() => {
        if (this.pending.delete(token)) reject(new RequestTimeoutError(`request to ${subject}: timeout after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(token, { subject, resolve, reject, timer });
      try {
        this.nc.publish(subject, data, { reply: this.base + token, ...(headers ? { headers } : {}) });
      } catch (err) {
        this.settle(token)?.reject(err as Error);
      }
    });
  }

  /** The pending request `token`, out of the map and its timer stopped. */
  private settle(token: string): Pending | undefined {
    const p = this.pending.get(token);
    if (!p) return undefined;
    this.pending.delete(token);
    clearTimeout(p.timer);
    return p;
  }

  private subscribe(): Subscription {
    // The connection's options are on nats.js's implementation, not on its NatsConnection interface.
    const prefix = (this.nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
    const base = `${createInbox(prefix)}.`;
    this.base = base;
    const sub = this.nc.subscribe(`${base}*`, {
      callback: (err, m) => {
        if (err) {
          // The subscription failed (a permission refused it, the connection closed): every request waiting on it fails.
          if (this.sub === sub) this.sub = undefined;
          this.failAll(err);
          return;
        }
        const p = this.settle(m.subject.slice(base.length));
        if (!p) return;
        if (m.data.length === 0 && m.headers?.code === 503) p.reject(new NoRespondersError(`no responders: ${p.subject}`));
        else p.resolve(m);
      },
    });
    this.sub = sub;
    void sub.closed.then(
      () => this.closed(sub),
      () => this.closed(sub),
    );
    return sub;
  }

  private closed(sub: Subscription): void {
    if (this.sub !== sub) return;
    this.sub = undefined;
    this.failAll(new Error("request failed: the connection's reply subscription closed"));
  }

  private failAll(err: Error): void {
    for (const token of [...this.pending.keys()]) this.settle(token)?.reject(err);
  }

  /** A publish the server refused (permissions) fails the oldest request to that subject at once, as nats.js' requests do. */
  private async watchPermissions(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type !== "error") continue;
        const e = s.error as Error & { operation?: string; subject?: string };
        if (e.operation !== "publish" || !e.subject) continue;
        for (const [token, p] of this.pending) {
          if (p.subject !== e.subject) continue;
          this.settle(token)?.reject(e);
          break;
        }
      }
    } catch {
      // The status stream ends with the connection.
    }
  }
}

const byConnection = new WeakMap<NatsConnection, Requests>();

/**
 * One request-reply on `nc` through the connection's shared reply inbox:
 * resolves with the first answer, rejects with {@link RequestTimeoutError}
 * after `timeoutMs`, {@link NoRespondersError} when nothing listens on
 * `subject`, or the server's refusal of the publish.
 */
export function requestOne(nc: NatsConnection, subject: string, data: Uint8Array, timeoutMs: number, headers?: MsgHdrs): Promise<Msg> {
  let r = byConnection.get(nc);
  if (!r) byConnection.set(nc, (r = new Requests(nc)));
  return r.request(subject, data, timeoutMs, headers);
}
