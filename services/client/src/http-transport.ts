// The api over its HTTPS gateway: Kubernetes REST paths and Kubernetes JSON
// (kit's kube-json maps choreo's protobuf objects to it and back), bearer
// token or client certificate, the server checked against a CA. watch = the
// gateway's `?watch=1&resourceVersion=` stream of JSON lines.
import http from "node:http";
import https from "node:https";
import { createInterface } from "node:readline";
import {
  ApiError,
  failure,
  kindByResource,
  kindOf,
  metaOf,
  timeout as timeoutError,
  unwrap,
  type ApiObject,
  type DeleteOptions,
  type KindInfo,
  type ObjectList,
  type Status,
} from "@choreo/kit";
import type { ListOptions } from "@choreo/kit/client";
import { fromKubeJson, messageFromKubeJson, messageToKubeJson, toKubeJson, type KubeJson } from "@choreo/kit/kube-json";
import {
  decodeObject as decodeProtobuf,
  decodeWatchEvent,
  encodeObject as encodeProtobuf,
  hasProtobuf,
  PROTOBUF,
  PROTOBUF_WATCH,
} from "@choreo/kit/kube-proto";
import type { ChangeEvent } from "./subscribe.js";
import { deleteOptions, TRANSPORT, type ApiTransport, type WatchFrom } from "./transport.js";

/** Where the gateway is and who calls it. */
export interface HttpTransportOptions {
  /** `https://host:port` (or `http://host:port`, the plain port: tokens in the clear). */
  server: string;
  /** PEM of the CA that signed the server's certificate (default: the system's CAs). */
  ca?: string;
  /** Client certificate and key (PEM): the user is its CN, its groups each O. */
  cert?: string;
  key?: string;
  /** Bearer token. */
  token?: string;
  /** Do not check the server's certificate (as kubectl's --insecure-skip-tls-verify). */
  insecureSkipTlsVerify?: boolean;
  /** Timeout of each CRUD request (default 10 s); watches have none. */
  timeoutMs?: number;
  /**
   * The bodies' encoding: Kubernetes JSON (default) or Kubernetes protobuf
   * (`application/vnd.kubernetes.protobuf`: objects, lists and Status as an
   * envelope, watches as length-prefixed frames), as kubectl can ask.
   */
  encoding?: "json" | "protobuf";
}

/** Reasons of the Status made up for an answer that carries none (a proxy's, say). */
const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** A Status from a Kubernetes Status body (JSON, or a protobuf envelope), or made from the HTTP code and the text when the body is not one. */
export function statusOfBody(code: number, body: Buffer, contentType = ""): Status {
  try {
    const json = (isProtobuf(contentType) ? decodeProtobuf(body) : JSON.parse(body.toString("utf8"))) as KubeJson;
    if (json["kind"] === "Status") return messageFromKubeJson<Status>("choreo.meta.v1.Status", json, { unknownFields: [] });
  } catch {
    // not a Status: the text itself is the message
  }
  return failure(code, REASONS[code] ?? "InternalError", body.toString("utf8").trim() || `HTTP ${code}`);
}

const isProtobuf = (contentType: string | undefined): boolean => (contentType ?? "").split(";")[0]!.trim() === PROTOBUF;

function info(resource: string): KindInfo {
  const k = kindByResource(resource);
  if (!k) throw new ApiError(failure(404, "NotFound", `the server could not find the requested resource (resource ${JSON.stringify(resource)})`));
  return k;
}

/** An object from the gateway's JSON, tolerating fields this client does not know (a newer server). */
function decodeObject(json: unknown, k?: KindInfo): ApiObject {
  const doc = k && typeof json === "object" && json !== null ? { apiVersion: k.apiVersion, kind: k.kind, ...(json as KubeJson) } : json;
  return fromKubeJson(doc, { unknownFields: [] });
}

export class HttpTransport implements ApiTransport {
  readonly [TRANSPORT] = true as const;
  readonly name = "http" as const;
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private readonly protobuf: boolean;
  /** Answers received, by the encoding the server answered in (bodies of CRUD calls and errors, watch streams). */
  readonly received = { json: 0, protobuf: 0 };
  /** How many watch requests were made (a stream the server ended is requested again from the last revision). */
  watchesStarted = 0;
  /** Open watch requests, ended by close(). */
  private readonly open = new Set<http.ClientRequest>();

  constructor(opts: HttpTransportOptions) {
    this.base = new URL(opts.server);
    if (this.base.protocol !== "https:" && this.base.protocol !== "http:") throw new Error(`not an http(s) server: ${opts.server}`);
    this.token = opts.token || undefined;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.protobuf = opts.encoding === "protobuf";
    this.agent =
      this.base.protocol === "https:"
        ? new https.Agent({
            keepAlive: true,
            ...(opts.ca ? { ca: opts.ca } : {}),
            ...(opts.cert && opts.key ? { cert: opts.cert, key: opts.key } : {}),
            rejectUnauthorized: opts.insecureSkipTlsVerify !== true,
          })
        : new http.Agent({ keepAlive: true });
  }

  /** `/api/v1/namespaces/NS/pods/NAME` or `/apis/apps/v1/…`; the namespace only for namespaced kinds. */
  private path(k: KindInfo, namespace: string, name = "", sub = ""): string {
    const group = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
    const ns = k.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
    return `${group}${ns}/${k.resource}${name ? `/${encodeURIComponent(name)}` : ""}${sub ? `/${sub}` : ""}`;
  }

  /**
   * Starts a request; resolves with the response (any code). With protobuf,
   * a body of a kind with a protobuf form goes as an envelope, and protobuf
   * is asked for first (JSON for what has no protobuf form).
   */
  private send(
    method: string,
    pathAndQuery: string,
    body: KubeJson | undefined,
    signal: AbortSignal | undefined,
    watch = false,
  ): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
    const url = new URL(pathAndQuery, this.base);
    const accept = this.protobuf ? `${watch ? PROTOBUF_WATCH : PROTOBUF}, application/json` : "application/json";
    const headers: Record<string, string> = { Accept: accept, "User-Agent": "choreo-client" };
    let data: Buffer | undefined;
    if (body !== undefined) {
      const asProtobuf = this.protobuf && hasProtobuf(body);
      data = asProtobuf ? Buffer.from(encodeProtobuf(body)) : Buffer.from(JSON.stringify(body));
      headers["Content-Type"] = asProtobuf ? PROTOBUF : "application/json";
      headers["Content-Length"] = String(data.length);
    }
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    const mod = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { method, headers, agent: this.agent, ...(signal ? { signal } : {}) }, (res) => {
        this.received[isProtobuf(res.headers["content-type"]) ? "protobuf" : "json"]++;
        resolve({ req, res });
      });
      req.on("error", (err) => reject(transportError(err, method, url)));
      req.end(data);
    });
  }

  /** One request and its whole answer: the body of a 2xx as Kubernetes JSON, else the Status thrown. */
  private async call(method: string, pathAndQuery: string, body?: KubeJson): Promise<unknown> {
    // A timer of its own, cleared once answered (an AbortSignal.timeout would fire later on the kept-alive socket).
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), this.timeoutMs);
    try {
      const { res } = await this.send(method, pathAndQuery, body, ac.signal);
      const bytes = await readBody(res);
      const code = res.statusCode ?? 0;
      if (code < 200 || code > 299) throw new ApiError(statusOfBody(code, bytes, res.headers["content-type"]));
      return isProtobuf(res.headers["content-type"]) ? decodeProtobuf(bytes) : (JSON.parse(bytes.toString("utf8")) as unknown);
    } catch (err) {
      if (ac.signal.aborted && !(err instanceof ApiError)) {
        throw timeoutError(`the api did not answer ${method} ${pathAndQuery} within ${this.timeoutMs} ms`);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    const k = info(resource);
    return decodeObject(await this.call("GET", this.path(k, namespace, name)), k);
  }

  async list(resource: string, opts: ListOptions): Promise<ObjectList> {
    const k = info(resource);
    const q = new URLSearchParams();
    if (opts.labelSelector) q.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) q.set("fieldSelector", opts.fieldSelector);
    if (opts.limit) q.set("limit", String(opts.limit));
    if (opts.continue) q.set("continue", opts.continue);
    if (opts.resourceVersion !== undefined) q.set("resourceVersion", opts.resourceVersion);
    if (opts.resourceVersionMatch) q.set("resourceVersionMatch", opts.resourceVersionMatch);
    const qs = q.size > 0 ? `?${q.toString()}` : "";
    const json = (await this.call("GET", `${this.path(k, opts.namespace ?? "")}${qs}`)) as { metadata?: KubeJson; items?: unknown[] };
    const meta = json.metadata ?? {};
    return {
      metadata: {
        resourceVersion: typeof meta["resourceVersion"] === "string" ? meta["resourceVersion"] : "",
        continue: typeof meta["continue"] === "string" ? meta["continue"] : "",
        remainingItemCount: typeof meta["remainingItemCount"] === "number" ? meta["remainingItemCount"] : undefined,
      },
      items: (json.items ?? []).map((i) => decodeObject(i, k)),
    };
  }

  /** POST to the object's collection (its namespace's). */
  async create(object: ApiObject): Promise<ApiObject> {
    const k = kindOf(object);
    return decodeObject(await this.call("POST", this.path(k, metaOf(object).namespace), toKubeJson(object)), k);
  }

  async update(object: ApiObject): Promise<ApiObject> {
    const k = kindOf(object);
    const m = metaOf(object);
    return decodeObject(await this.call("PUT", this.path(k, m.namespace, m.name), toKubeJson(object)), k);
  }

  async updateStatus(object: ApiObject): Promise<ApiObject> {
    const k = kindOf(object);
    const m = metaOf(object);
    return decodeObject(await this.call("PUT", this.path(k, m.namespace, m.name, "status"), toKubeJson(object)), k);
  }

  /** DELETE with DeleteOptions as the body; the answer is the object as last stored. */
  async delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    const k = info(resource);
    const opts = deleteOptions(options);
    const body = opts ? { apiVersion: "v1", kind: "DeleteOptions", ...messageToKubeJson("choreo.meta.v1.DeleteOptions", opts) } : undefined;
    return decodeObject(await this.call("DELETE", this.path(k, namespace, name), body), k);
  }

  /**
   * `GET …?watch=1&resourceVersion=RV`: one `{"type","object"}` line per
   * change (a length-prefixed protobuf frame with the protobuf encoding).
   * An ERROR event (410 Expired) is thrown as its Status; a connection that
   * breaks as a 503. When the server ends the stream (its timeoutSeconds),
   * the watch is made again from the last revision seen, as informers do.
   */
  async *watchFrom(resource: string, from: WatchFrom): AsyncGenerator<ChangeEvent> {
    const k = info(resource);
    let rv = from.resourceVersion;
    while (!from.signal?.aborted) {
      const q = new URLSearchParams({ watch: "1", resourceVersion: rv, allowWatchBookmarks: "true" });
      if (from.labelSelector) q.set("labelSelector", from.labelSelector);
      if (from.timeoutSeconds) q.set("timeoutSeconds", String(from.timeoutSeconds));
      this.watchesStarted++;
      const { req, res } = await this.send("GET", `${this.path(k, from.namespace ?? "")}?${q.toString()}`, undefined, from.signal).catch((err: unknown) => {
        if (from.signal?.aborted) return { req: undefined, res: undefined };
        throw err;
      });
      if (!req || !res) return;
      const code = res.statusCode ?? 0;
      if (code !== 200) throw new ApiError(statusOfBody(code, await readBody(res), res.headers["content-type"]));
      this.open.add(req);
      // An abort or close() destroys the request: the response's "aborted" error ends the events below, nothing more.
      res.on("error", () => undefined);
      try {
        for await (const ev of watchEvents(res)) {
          if (ev.type === "ERROR") throw new ApiError(messageFromKubeJson<Status>("choreo.meta.v1.Status", ev.object, { unknownFields: [] }));
          const objRv = String((ev.object["metadata"] as KubeJson | undefined)?.["resourceVersion"] ?? "");
          if (objRv) rv = objRv;
          if (ev.type !== "ADDED" && ev.type !== "MODIFIED" && ev.type !== "DELETED") continue; // BOOKMARK: its revision only
          const object = decodeObject(ev.object, k);
          yield { type: ev.type, revision: Number(objRv || 0), object: unwrap(object), kind: k };
        }
      } catch (err) {
        if (from.signal?.aborted || this.closed) return;
        if (err instanceof ApiError) throw err;
        // The connection broke mid-stream (the api went away): as gRPC's UNAVAILABLE.
        throw new ApiError(failure(503, "ServiceUnavailable", `the watch stream broke: ${(err as Error).message}`), { cause: err });
      } finally {
        this.open.delete(req);
        req.destroy();
      }
      if (this.closed) return;
    }
  }

  private closed = false;

  /** Ends open watches and the kept-alive connections. */
  async close(): Promise<void> {
    this.closed = true;
    for (const req of this.open) req.destroy();
    this.agent.destroy();
  }
}

async function readBody(res: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The events of a watch response: JSON lines, or length-prefixed protobuf frames (`;stream=watch`). */
async function* watchEvents(res: http.IncomingMessage): AsyncGenerator<{ type: string; object: KubeJson }> {
  if (isProtobuf(res.headers["content-type"])) {
    let buf: Buffer = Buffer.alloc(0);
    for await (const chunk of res) {
      buf = buf.length === 0 ? (chunk as Buffer) : Buffer.concat([buf, chunk as Buffer]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const n = buf.readUInt32BE(0);
        yield decodeWatchEvent(buf.subarray(4, 4 + n));
        buf = buf.subarray(4 + n);
      }
    }
    return;
  }
  const lines = createInterface({ input: res, crlfDelay: Infinity });
  // An abort or close() destroys the request: the response's "aborted" error, which readline passes on, ends the lines.
  lines.on("error", () => undefined);
  for await (const line of lines) if (line.trim()) yield JSON.parse(line) as { type: string; object: KubeJson };
}

/** A failure to reach the server (refused, reset, TLS refused) as a 503 ApiError. */
function transportError(err: Error, method: string, url: URL): Error {
  if (err.name === "AbortError") return err;
  return new ApiError(failure(503, "ServiceUnavailable", `${method} ${url.origin}${url.pathname}: ${err.message}`), { cause: err });
}
