// A small Kubernetes REST client over node:http/https, and the errors it throws.
import http from "node:http";
import https from "node:https";
import type { Connection } from "./kubeconfig.js";

/** A Kubernetes Status body (what the server sends on failure). */
export interface StatusBody {
  kind?: string;
  apiVersion?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; causes?: { reason?: string; message?: string; field?: string }[] };
}

/** A failed request: the server's Status (or one made up from the HTTP status when the body is not a Status). */
export class StatusError extends Error {
  override name = "StatusError";
  constructor(readonly status: StatusBody) {
    super(status.message ?? `the server responded with status code ${status.code ?? 0}`);
  }
  get code(): number {
    return this.status.code ?? 0;
  }
  get reason(): string {
    return this.status.reason ?? "";
  }
}

/** The server could not be reached. */
export class ConnectionError extends Error {
  override name = "ConnectionError";
}

/** A usage or input error, printed as `error: …`. */
export class CliError extends Error {
  override name = "CliError";
}

export const isNotFound = (err: unknown): boolean => err instanceof StatusError && (err.reason === "NotFound" || (err.reason === "" && err.code === 404));

const REASON_BY_CODE: Record<number, [string, string]> = {
  400: ["BadRequest", "the server rejected our request for an unknown reason"],
  401: ["Unauthorized", "the server has asked for the client to provide credentials"],
  403: ["Forbidden", "the server does not allow access to the requested resource"],
  404: ["NotFound", "the server could not find the requested resource"],
  405: ["MethodNotAllowed", "the server does not allow this method on the requested resource"],
  409: ["Conflict", "the server reported a conflict"],
  410: ["Expired", "the resource version is too old"],
  415: ["UnsupportedMediaType", "the server responded with the status code 415 but did not return more information"],
  422: ["Invalid", "the server rejected our request due to an error in our request"],
  429: ["TooManyRequests", "the server has received too many requests and has asked us to try again later"],
  500: ["InternalError", "an error on the server has prevented the request from succeeding"],
  503: ["ServiceUnavailable", "the server is currently unable to handle the request"],
  504: ["Timeout", "the server was unable to return a response in the time allotted, but may still be processing the request"],
};

/** The Status of a failed response: its body when that is a Status, else one made up like client-go does. */
export function statusFromResponse(code: number, body: string): StatusBody {
  try {
    const parsed = JSON.parse(body) as StatusBody;
    if (parsed && parsed.kind === "Status") return { ...parsed, code: parsed.code ?? code };
  } catch {
    // not JSON: fall through
  }
  const [reason, message] = REASON_BY_CODE[code] ?? ["", `the server responded with status code ${code}`];
  return { kind: "Status", status: "Failure", code, reason, message: body.trim() && code >= 500 ? `${message} (${body.trim()})` : message };
}

/**
 * kubectl's wording for an error. `when` (`creating "x.yaml"`) goes before the message
 * as in `Error from server (NotFound): error when creating "x.yaml": namespaces "nope" not found`.
 */
export function formatError(err: unknown, when?: string): string {
  if (err instanceof StatusError) {
    const msg = when ? `error when ${when}: ${err.message}` : err.message;
    if (err.code === 401) return "error: You must be logged in to the server (Unauthorized)";
    if (err.reason === "Invalid" && / is invalid: /.test(err.message)) return `The ${err.message}`;
    return err.reason ? `Error from server (${err.reason}): ${msg}` : `Error from server: ${msg}`;
  }
  if (err instanceof ConnectionError) return err.message;
  const message = err instanceof Error ? err.message : String(err);
  return message.startsWith("error: ") || message.startsWith("error ") ? message : `error: ${message}`;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  method?: string;
  path: string;
  query?: Query;
  /** An object is sent as JSON; a string as-is. */
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
}

export interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One watch event as the server streams it. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: Record<string, unknown>;
}

export const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";
export const USER_AGENT = "choreo/0.1.0";

function queryString(q: Query | undefined): string {
  if (!q) return "";
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
}

/** Talks to one API server: JSON requests, Status errors, watch streams. */
export class RestClient {
  constructor(readonly conn: Connection) {}

  /** The `host:port` of the server, for messages. */
  get host(): string {
    try {
      return new URL(this.conn.server).host;
    } catch {
      return this.conn.server;
    }
  }

  private open(o: RequestOptions, onResponse: (res: http.IncomingMessage) => void, onError: (err: Error) => void): void {
    let url: URL;
    try {
      url = new URL(this.conn.server + o.path + queryString(o.query));
    } catch {
      onError(new CliError(`invalid server address ${JSON.stringify(this.conn.server)}`));
      return;
    }
    const headers: Record<string, string> = { Accept: o.accept ?? "application/json", "User-Agent": USER_AGENT };
    if (this.conn.token) headers["Authorization"] = `Bearer ${this.conn.token}`;
    let payload: string | undefined;
    if (o.body !== undefined) {
      payload = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      headers["Content-Type"] = o.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(payload));
    }
    const secure = url.protocol === "https:";
    const options: https.RequestOptions = { method: o.method ?? "GET", headers, agent: false, signal: o.signal };
    if (secure) {
      options.rejectUnauthorized = !this.conn.insecure;
      if (this.conn.ca && !this.conn.insecure) options.ca = this.conn.ca;
      if (this.conn.clientCert && this.conn.clientKey) {
        options.cert = this.conn.clientCert;
        options.key = this.conn.clientKey;
      }
    }
    const req = (secure ? https : http).request(url, options, onResponse);
    req.on("error", (err: NodeJS.ErrnoException) => onError(this.connectionError(err)));
    req.end(payload);
  }

  private connectionError(err: NodeJS.ErrnoException): Error {
    if (err.name === "AbortError") return err;
    if (err.code === "ECONNREFUSED")
      return new ConnectionError(`The connection to the server ${this.host} was refused - did you specify the right host or port?`);
    if (err.code === "ENOTFOUND") return new ConnectionError(`Unable to connect to the server: dial tcp: lookup ${this.host}: no such host`);
    return new ConnectionError(`Unable to connect to the server: ${err.message}`);
  }

  /** Sends a request and reads the whole response (any status). */
  raw(o: RequestOptions): Promise<Response> {
    return new Promise((resolve, reject) => {
      this.open(
        o,
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
        reject,
      );
    });
  }

  /** Sends a request and parses the JSON answer; a non-2xx answer throws its StatusError. */
  async json<T = Record<string, unknown>>(o: RequestOptions): Promise<T> {
    const res = await this.raw(o);
    if (res.status < 200 || res.status > 299) throw new StatusError(statusFromResponse(res.status, res.body));
    try {
      return JSON.parse(res.body) as T;
    } catch {
      throw new CliError(`the server sent an invalid JSON answer to ${o.method ?? "GET"} ${o.path}`);
    }
  }

  /**
   * Streams a text response chunk by chunk as it arrives (`logs -f`); a
   * non-2xx answer throws its StatusError. Resolves at the end of the
   * stream or when the signal aborts it.
   */
  stream(o: RequestOptions, onChunk: (text: string) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = (err?: Error): void => {
        if (err && !(err.name === "AbortError" || o.signal?.aborted)) reject(err);
        else resolve();
      };
      this.open(
        { accept: "*/*", ...o },
        (res) => {
          const code = res.statusCode ?? 0;
          const errBody: Buffer[] = [];
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (code === 200 ? onChunk(chunk) : errBody.push(Buffer.from(chunk))));
          res.on("end", () => done(code === 200 ? undefined : new StatusError(statusFromResponse(code, Buffer.concat(errBody).toString("utf8")))));
          res.on("error", (err) => done(err));
          res.on("close", () => done());
        },
        (err) => done(err),
      );
    });
  }

  /**
   * Streams a watch: one callback per JSON line. Resolves when the server ends
   * the stream, the signal aborts it, or the callback returns `false`.
   */
  watch(o: RequestOptions, onEvent: (ev: WatchEvent) => boolean | void): Promise<void> {
    return new Promise((resolve, reject) => {
      const ac = new AbortController();
      const outer = o.signal;
      const onAbort = (): void => ac.abort();
      outer?.addEventListener("abort", onAbort, { once: true });
      const done = (err?: Error): void => {
        outer?.removeEventListener("abort", onAbort);
        if (err && !(err.name === "AbortError" && ac.signal.aborted)) reject(err);
        else resolve();
      };
      this.open(
        { ...o, query: { ...o.query, watch: "true" }, signal: ac.signal },
        (res) => {
          const code = res.statusCode ?? 0;
          const chunks: Buffer[] = [];
          let buf = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            if (code !== 200) {
              chunks.push(Buffer.from(chunk));
              return;
            }
            buf += chunk;
            let nl: number;
            while ((nl = buf.indexOf("\n")) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (line === "") continue;
              let ev: WatchEvent;
              try {
                ev = JSON.parse(line) as WatchEvent;
              } catch {
                continue;
              }
              if (onEvent(ev) === false) {
                ac.abort();
                return;
              }
            }
          });
          res.on("end", () => {
            if (code !== 200) done(new StatusError(statusFromResponse(code, Buffer.concat(chunks).toString("utf8"))));
            else done();
          });
          res.on("error", (err) => done(err));
          res.on("close", () => done());
        },
        (err) => done(err),
      );
    });
  }
}
