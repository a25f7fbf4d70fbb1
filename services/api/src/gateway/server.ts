import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { timingSafeEqual } from "node:crypto";
import { ApiError, badRequest, failure, methodNotAllowed, notFound, unauthorized, type KindInfo } from "@choreo/kit";
import { fromKubeJson, listToKubeJson, messageFromKubeJson, messageToKubeJson, toKubeJson, watchEventToKubeJson } from "@choreo/kit/kube-json";
import type { Object as ApiObject } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Scale } from "@choreo/kit/gen/choreo/autoscaling/v1/autoscaling";
import type { DeleteOptions } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Binding } from "@choreo/kit/gen/choreo/core/v1/core";
import { applyJsonPatch, applyMergePatch, type JsonValue } from "@choreo/kit/apimachinery";
import type { Logger } from "@choreo/kit/log";
import { Histogram, type Registry } from "prom-client";
import type { ApiHandlers, LogsHandler } from "../handlers/api-handlers.js";
import { apiGroupList, apiResourceList, apiVersions, versionInfo } from "./discovery.js";
import { decodeBody, mediaType, readBody, sendError, sendJson, wantsTable } from "./request.js";
import { parseResourcePath, type ResourcePath } from "./routes.js";
import { toTable } from "./tables.js";

/** Options of the gateway. */
export interface GatewayOptions {
  handlers: ApiHandlers;
  log: Logger;
  /** Accepted bearer tokens; undefined: no authentication. */
  tokens?: string[];
  /** Plain http without a token (kubectl sends none over http). */
  allowAnonymousHttp?: boolean;
  serverAddress?: string;
  logs?: LogsHandler;
  registry?: Registry;
}

/** The Kubernetes-shaped HTTP gateway. */
export interface Gateway {
  handle(req: IncomingMessage, res: ServerResponse): void;
  listen(opts: { host: string; httpPort?: number; httpsPort?: number; tls?: { cert: string; key: string } }): Promise<{ httpPort?: number; httpsPort?: number }>;
  close(): Promise<void>;
}

const OPEN_PATHS = new Set(["/healthz", "/readyz", "/livez", "/version"]);
const PATCH_TYPES = ["application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"];

function tokenOk(header: string | undefined, tokens: string[]): boolean {
  const given = Buffer.from(String(header ?? "").replace(/^Bearer\s+/i, ""));
  return tokens.some((t) => {
    const want = Buffer.from(t);
    return want.length === given.length && timingSafeEqual(want, given);
  });
}

function q(url: URL, name: string): string {
  return url.searchParams.get(name) ?? "";
}

function deleteOptions(url: URL, body: unknown): DeleteOptions | undefined {
  const fromBody = body && typeof body === "object" ? messageFromKubeJson<DeleteOptions>("choreo.meta.v1.DeleteOptions", body) : undefined;
  const grace = url.searchParams.get("gracePeriodSeconds");
  const policy = url.searchParams.get("propagationPolicy");
  if (!fromBody && grace === null && policy === null) return undefined;
  const opts: DeleteOptions = fromBody ?? { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [] };
  if (grace !== null) {
    if (!/^-?\d+$/.test(grace)) throw badRequest(`invalid gracePeriodSeconds "${grace}"`);
    opts.gracePeriodSeconds = Number(grace);
  }
  if (policy !== null) opts.propagationPolicy = policy;
  return opts;
}

/** Creates the gateway; `listen` starts http and/or https servers. */
export function createGateway(opts: GatewayOptions): Gateway {
  const servers: http.Server[] = [];
  const watches = new Set<AbortController>();
  const latency = opts.registry
    ? new Histogram({ name: "choreo_api_http_request_duration_seconds", help: "HTTP gateway requests.", labelNames: ["verb", "resource", "code"], registers: [opts.registry], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5] })
    : undefined;
  const h = opts.handlers;

  async function object(rp: ResourcePath, url: URL, req: IncomingMessage, res: ServerResponse): Promise<number> {
    const { info, namespace, name, subresource } = rp;
    const method = req.method ?? "GET";
    const asTable = wantsTable(req);
    if (subresource === "scale") {
      if (!info.hasScale) throw notFound(`${info.resource}/scale`, name);
      if (method === "GET") return send(res, 200, messageToKubeJson("choreo.autoscaling.v1.Scale", await h.getScale({ resource: info.resource, namespace, name })));
      const body = decodeBody(req, await readBody(req));
      let scale: Scale;
      if (method === "PUT") scale = messageFromKubeJson<Scale>("choreo.autoscaling.v1.Scale", body);
      else if (method === "PATCH") {
        const cur = messageToKubeJson("choreo.autoscaling.v1.Scale", await h.getScale({ resource: info.resource, namespace, name })) as JsonValue;
        const type = mediaType(req);
        if (!PATCH_TYPES.includes(type)) throw new ApiError(failure(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(", ")}`));
        const patched = type === "application/json-patch+json" ? applyJsonPatch(cur, body as JsonValue) : applyMergePatch(cur, body as JsonValue);
        scale = messageFromKubeJson<Scale>("choreo.autoscaling.v1.Scale", patched);
        if (!(body && typeof body === "object" && "metadata" in (body as object))) {
          if (scale.metadata) scale.metadata.resourceVersion = "";
        }
      } else throw methodNotAllowed(`${method} is not supported on ${info.resource}/scale`);
      return send(res, 200, messageToKubeJson("choreo.autoscaling.v1.Scale", await h.updateScale({ resource: info.resource, namespace, name, scale })));
    }
    if (subresource === "binding" && info.resource === "pods") {
      if (method !== "POST") throw methodNotAllowed(`${method} is not supported on pods/binding`);
      const binding = messageFromKubeJson<Binding>("choreo.core.v1.Binding", decodeBody(req, await readBody(req)));
      await h.bind({ namespace, name, binding });
      return send(res, 201, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 });
    }
    if (subresource === "log" && info.resource === "pods") return podLogs(rp, url, res);
    if (subresource && !(subresource === "status" && info.hasStatus)) throw notFound(`${info.resource}/${subresource}`, name);
    switch (method) {
      case "GET": {
        const o = toKubeJson(await h.get({ resource: info.resource, namespace, name }));
        if (asTable) return send(res, 200, toTable(info, [o], { includeObject: q(url, "includeObject") || "Metadata", resourceVersion: "" }));
        return send(res, 200, o);
      }
      case "PUT": {
        const obj = decodeObject(req, await readBody(req), info, rp, url);
        const meta = obj.kind?.value.metadata;
        if (meta && meta.name !== name) throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
        const r = subresource === "status" ? await h.updateStatus({ object: obj, dryRun: false }) : await h.update({ object: obj, dryRun: false });
        return send(res, 200, toKubeJson(r));
      }
      case "PATCH": {
        const type = mediaType(req);
        if (type === "application/apply-patch+yaml") {
          throw new ApiError(failure(415, "UnsupportedMediaType", "server-side apply is not supported by choreo: use client-side `kubectl apply` (without --server-side)"));
        }
        if (!PATCH_TYPES.includes(type)) throw new ApiError(failure(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: ${PATCH_TYPES.join(", ")}`));
        const body = await readBody(req);
        const r = await h.patch({ resource: info.resource, namespace, name, patchType: type, patch: body.toString("utf8"), subresource });
        return send(res, 200, toKubeJson(r));
      }
      case "DELETE": {
        const raw = await readBody(req);
        const body = raw.length ? decodeBody(req, raw) : undefined;
        const r = await h.delete({ resource: info.resource, namespace, name, options: deleteOptions(url, body) });
        return send(res, 200, toKubeJson(r));
      }
      default:
        throw methodNotAllowed(`${method} is not supported`);
    }
  }

  function decodeObject(req: IncomingMessage, body: Buffer, info: KindInfo, rp: ResourcePath, url: URL): ApiObject {
    const json = decodeBody(req, body);
    const obj = fromKubeJson(json, { strict: true });
    if (obj.kind?.$case !== info.case) throw badRequest(`the kind of the object (${obj.kind?.value.kind}) does not match the resource ${info.resource}`);
    const v = obj.kind.value;
    v.metadata ??= { name: "", generateName: "", namespace: "", uid: "", resourceVersion: "", generation: 0, creationTimestamp: "", deletionTimestamp: "", labels: {}, annotations: {}, ownerReferences: [], finalizers: [] };
    if (info.namespaced) {
      if (v.metadata.namespace && v.metadata.namespace !== rp.namespace) throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
      v.metadata.namespace = rp.namespace;
    }
    void url;
    return obj;
  }

  async function collection(rp: ResourcePath, url: URL, req: IncomingMessage, res: ServerResponse): Promise<number> {
    const { info, namespace } = rp;
    const method = req.method ?? "GET";
    if (method === "GET") {
      const watch = q(url, "watch");
      if (watch === "true" || watch === "1") return streamWatch(rp, url, req, res);
      const list = await h.list({ resource: info.resource, namespace, labelSelector: q(url, "labelSelector"), fieldSelector: q(url, "fieldSelector"), limit: Number(q(url, "limit") || 0), continue: q(url, "continue") });
      if (wantsTable(req)) {
        return send(res, 200, toTable(info, list.items.map(toKubeJson), { includeObject: q(url, "includeObject") || "Metadata", resourceVersion: list.metadata?.resourceVersion ?? "", continue: list.metadata?.continue }));
      }
      return send(res, 200, listToKubeJson(info, list));
    }
    if (method === "POST") {
      if (rp.allNamespaces) throw methodNotAllowed(`POST is not supported on all-namespace ${info.resource}`);
      const obj = decodeObject(req, await readBody(req), info, rp, url);
      const dryRun = url.searchParams.getAll("dryRun").includes("All");
      return send(res, 201, toKubeJson(await h.create({ object: obj, dryRun })));
    }
    if (method === "DELETE") {
      const raw = await readBody(req);
      const body = raw.length ? decodeBody(req, raw) : undefined;
      const list = await h.deleteCollection({ resource: info.resource, namespace, labelSelector: q(url, "labelSelector"), fieldSelector: q(url, "fieldSelector"), options: deleteOptions(url, body) });
      return send(res, 200, listToKubeJson(info, list));
    }
    throw methodNotAllowed(`${method} is not supported on ${info.resource}`);
  }

  async function streamWatch(rp: ResourcePath, url: URL, req: IncomingMessage, res: ServerResponse): Promise<number> {
    const ac = new AbortController();
    watches.add(ac);
    const stop = (): void => ac.abort();
    req.on("close", stop);
    res.on("close", stop);
    const table = wantsTable(req);
    const timeout = Number(q(url, "timeoutSeconds") || 0) || 1800 + Math.floor(Math.random() * 1800);
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked", "cache-control": "no-cache" });
    res.flushHeaders();
    try {
      const events = h.watch({
        resource: rp.info.resource, namespace: rp.namespace, labelSelector: q(url, "labelSelector"), fieldSelector: q(url, "fieldSelector"),
        resourceVersion: q(url, "resourceVersion"), timeoutSeconds: timeout, allowBookmarks: q(url, "allowWatchBookmarks") === "true",
      }, ac.signal);
      for await (const ev of events) {
        const line = watchEventToKubeJson(ev);
        if (table && ev.type !== "ERROR" && ev.object) {
          line.object = toTable(rp.info, [line.object as Record<string, unknown>], { includeObject: q(url, "includeObject") || "Metadata", resourceVersion: String(ev.revision) });
        }
        if (!res.write(`${JSON.stringify(line)}\n`)) await new Promise((r) => res.once("drain", r));
        if (ac.signal.aborted) break;
      }
    } catch (err) {
      if (!(err instanceof ApiError)) opts.log.error({ err }, "watch failed");
      const status = err instanceof ApiError ? err.status : failure(500, "InternalError", (err as Error).message);
      res.write(`${JSON.stringify(watchEventToKubeJson({ type: "ERROR", object: undefined, status, revision: 0, prevLabels: {}, prevFields: {}, hasPrev: false }))}\n`);
    } finally {
      watches.delete(ac);
      res.end();
    }
    return 200;
  }

  async function podLogs(rp: ResourcePath, url: URL, res: ServerResponse): Promise<number> {
    await h.get({ resource: "pods", namespace: rp.namespace, name: rp.name }); // 404 first
    if (!opts.logs) throw new ApiError(failure(501, "NotImplemented", "pod logs are served by node agents, and this cluster has none"));
    const ac = new AbortController();
    res.on("close", () => ac.abort());
    const follow = q(url, "follow") === "true";
    const tail = q(url, "tailLines");
    const since = q(url, "sinceSeconds");
    const lines = opts.logs.logs({
      namespace: rp.namespace, name: rp.name, container: q(url, "container") || undefined, follow, tailLines: tail ? Number(tail) : undefined,
      sinceSeconds: since ? Number(since) : undefined, timestamps: q(url, "timestamps") === "true", previous: q(url, "previous") === "true",
    }, ac.signal);
    const it = lines[Symbol.asyncIterator]();
    const first = await it.next(); // errors (unknown container) before headers
    res.writeHead(200, { "content-type": "text/plain", "transfer-encoding": "chunked" });
    if (!first.done) res.write(first.value);
    for (let r = await it.next(); !r.done; r = await it.next()) res.write(r.value);
    res.end();
    return 200;
  }

  function send(res: ServerResponse, code: number, body: unknown): number {
    sendJson(res, code, body);
    return code;
  }

  async function route(req: IncomingMessage, res: ServerResponse, secure: boolean): Promise<number> {
    const url = new URL(req.url ?? "/", "http://gateway");
    const path = url.pathname.replace(/\/+$/, "") || "/";
    if (path === "/healthz" || path === "/readyz" || path === "/livez") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
      return 200;
    }
    if (!OPEN_PATHS.has(path) && opts.tokens && !(opts.allowAnonymousHttp && !secure) && !tokenOk(req.headers.authorization, opts.tokens)) {
      throw unauthorized();
    }
    if (path === "/version") return send(res, 200, versionInfo());
    if (path === "/api") return send(res, 200, apiVersions(opts.serverAddress ?? req.headers.host ?? ""));
    if (path === "/apis") return send(res, 200, apiGroupList());
    if (path === "/openapi/v2" || path === "/openapi/v3") {
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": 0 });
      res.end();
      return 200;
    }
    const gv = /^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(path);
    if (gv) {
      const list = apiResourceList(gv[2] ?? "", gv[1] ?? gv[3] ?? "");
      if (!list) throw notFoundPath();
      return send(res, 200, list);
    }
    const rp = parseResourcePath(path);
    if (!rp || rp === "unknown") throw notFoundPath();
    if (req.method === "HEAD" || req.method === "OPTIONS") throw methodNotAllowed(`${req.method} is not supported`);
    return rp.name ? object(rp, url, req, res) : collection(rp, url, req, res);
  }

  function notFoundPath(): ApiError {
    return new ApiError(failure(404, "NotFound", "the server could not find the requested resource", { name: "", group: "", kind: "", uid: "", causes: [], retryAfterSeconds: 0 }));
  }

  function handle(req: IncomingMessage, res: ServerResponse, secure = false): void {
    const started = performance.now();
    route(req, res, secure)
      .catch((err: unknown) => {
        if (!(err instanceof ApiError) || err.code >= 500) opts.log.error({ err, method: req.method, url: req.url }, "request failed");
        return sendError(res, err);
      })
      .then((code) => {
        const resource = parseResourcePath(new URL(req.url ?? "/", "http://g").pathname);
        latency?.observe({ verb: req.method ?? "", resource: resource && resource !== "unknown" ? resource.info.resource : "", code: String(code) }, (performance.now() - started) / 1000);
        opts.log.debug({ method: req.method, url: req.url, code }, "request");
      })
      .catch(() => undefined);
  }

  return {
    handle: (req, res) => handle(req, res, false),
    async listen(l) {
      const out: { httpPort?: number; httpsPort?: number } = {};
      const start = (srv: http.Server, port: number): Promise<number> =>
        new Promise((resolve, reject) => {
          srv.once("error", reject);
          srv.listen(port, l.host, () => resolve((srv.address() as AddressInfo).port));
        });
      if (l.httpPort !== undefined) {
        const srv = http.createServer((req, res) => handle(req, res, false));
        servers.push(srv);
        out.httpPort = await start(srv, l.httpPort);
      }
      if (l.httpsPort !== undefined && l.tls) {
        const srv = https.createServer({ cert: l.tls.cert, key: l.tls.key }, (req, res) => handle(req, res, true));
        servers.push(srv);
        out.httpsPort = await start(srv, l.httpsPort);
      }
      return out;
    },
    async close() {
      for (const w of watches) w.abort();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => {
        s.close(() => resolve());
        s.closeIdleConnections();
        setTimeout(() => s.closeAllConnections(), 2_000).unref();
      })));
    },
  };
}
