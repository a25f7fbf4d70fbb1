// The gateway: authenticate, route, dispatch to a verb handler, log and
// measure; listen on http and/or https; close ends open streams.
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { badRequest, methodNotAllowed, statusOf } from "@choreo/kit";
import { FailureLog, type Logger } from "@choreo/kit/log";
import { Histogram, type Registry } from "prom-client";
import type { ApiHandlers, LogsHandler } from "../handlers/api-handlers.js";

import { ANONYMOUS } from "../auth/types.js";
import { bodyDrained, bodyRead } from "./body.js";
import { Authenticator } from "../auth/authenticate.js";
import { ALLOW_ALL, forbiddenError } from "../auth/authorize.js";
import { nonResourceAttributes } from "../auth/attributes.js";
import type { AuditEntry, AuditLog } from "../audit/index.js";
import type { Status } from "@choreo/kit/gen/choreo/meta/v1/meta";
import { impersonate } from "../auth/impersonation.js";
import { legacyAdmin, StaticTokens } from "../auth/static-tokens.js";
import type { Attributes, Authorizer, UserInfo } from "../auth/types.js";
import { requestAttributes } from "./request-attributes.js";
import { flag, type RequestContext } from "./context.js";
import { apiGroup, apiGroupList, apiResourceList, apiVersions, serveDiscovery, versionInfo } from "./discovery.js";
import { serveOpenApiV2, serveOpenApiV3 } from "./openapi/serve.js";
import { binding, eviction, podLog, scale, serviceAccountToken } from "./handlers-sub.js";
import type { TokenIssuer } from "../registry/serviceaccounts/tokenrequest.js";
import { getObject, listObjects } from "./handlers-read.js";
import { createObject, deleteCollection, deleteObject, patchObject, updateObject } from "./handlers-write.js";
import { codeOf, sendError, sendJson } from "./respond.js";
import { isHpaV1Path, serveHpaV1 } from "./hpa-v1.js";
import { parseRoute, pathNotFound, type ResourceRoute, type Route } from "./routes.js";
import { isMetricsPath, serveMetrics, type MetricsCollector } from "../metrics-api/index.js";
import { watch } from "./watch.js";
import { upgradeHandler, type PodStreams } from "./streams/index.js";
import { answerInProtobuf, wantsProtobuf } from "./protobuf.js";
import { isReviewPath, serveReviews, type ReviewContext } from "./reviews/index.js";
import type { Readiness } from "../health/readiness.js";
import { serveReadyz } from "../health/readyz.js";
import { serveLivez } from "../health/livez.js";
import type { HealthChecks } from "@choreo/kit/metrics";
import { isNodeCredentialPath, serveNodeCredential, type NodeCredentialSource } from "../node-credentials/door.js";
import { isWebViewPath, serveWebView } from "./ui.js";
import { classify } from "../flowcontrol/classify.js";
import type { FlowControl } from "../flowcontrol/flow-control.js";

/** Subresources whose requests are long-running (kube-apiserver's --long-running-request-regexp): no seat held. */
const LONG_RUNNING: ReadonlySet<string> = new Set(["log", "exec", "attach", "portforward", "proxy"]);

/** Options of the gateway. */
export interface GatewayOptions {
  handlers: ApiHandlers;
  log: Logger;
  /**
   * Who requests are (certificates, tokens); undefined: no authentication,
   * every request is system:admin (tests, embedded use).
   */
  authentication?: Authenticator;
  /** Bearer tokens of the cluster's administrator (system:masters): shorthand for an `authentication` of those alone. */
  tokens?: string[];
  /** Plain http without a token is the administrator (kubectl sends none over http): a development switch. */
  allowAnonymousHttp?: boolean;
  /** Decides every request before a handler runs (403 Forbidden); undefined: everything is allowed. */
  authorizer?: Authorizer;
  /** Gets one event per request (services/api/src/audit) when given. */
  audit?: AuditLog;
  /** host:port announced by GET /api (default: the request's Host header). */
  serverAddress?: string;
  /** Serves GET pods/NAME/log when given. */
  logs?: LogsHandler;
  /** Serves pods/exec and pods/attach (WebSocket upgrades) when given. */
  streams?: PodStreams;
  /** Answers metrics.k8s.io (kubectl top) when given; the group is listed either way. */
  metrics?: MetricsCollector;
  /** Gets `choreo_api_http_request_duration_seconds` when given. */
  registry?: Registry;
  /** SelfSubjectRulesReview's rules and TokenReview's authenticator and audiences (http/reviews); the access reviews ask `authorizer`. */
  reviews?: Pick<ReviewContext, "rules" | "tokens" | "apiAudiences">;
  /** Signs the tokens of POST serviceaccounts/NAME/token (TokenRequest); without it that path answers 501. */
  tokenIssuer?: TokenIssuer;
  /** The checks /readyz answers from (the gRPC health service follows the same); without it /readyz is `ok` while serving. */
  readiness?: Readiness;
  /** The checks /livez answers from; without it /livez is `ok` while serving. */
  liveness?: HealthChecks;
  /** Exchanges bootstrap tokens for node credentials (POST /choreo/v1/nodecredential, `choreo join`); without it that path answers 503. */
  nodeCredentials?: NodeCredentialSource;
  /** Seats by priority level (API Priority and Fairness): a resource request runs once it has one; long-running ones take none. */
  flowControl?: FlowControl;
}

export interface ListenOptions {
  host: string;
  httpPort?: number;
  httpsPort?: number;
  /** `clientCa`: the PEM of the CA whose client certificates authenticate users (x509). */
  tls?: { cert: string; key: string; clientCa?: string };
}

/** The Kubernetes-shaped HTTP gateway over ApiHandlers. */
export interface Gateway {
  /** Serves one request (usable with any node:http server). */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Starts the http and/or https listeners (port 0: any free port); resolves with the bound ports. */
  listen(opts: ListenOptions): Promise<{ httpPort?: number; httpsPort?: number }>;
  /** Ends open watches and log streams, closes the listeners. */
  close(): Promise<void>;
}

const METRIC = "choreo_api_http_request_duration_seconds";

function histogram(registry: Registry | undefined): Histogram<"verb" | "resource" | "code"> | undefined {
  if (!registry) return undefined;
  const existing = registry.getSingleMetric(METRIC);
  if (existing) return existing as Histogram<"verb" | "resource" | "code">;
  return new Histogram({
    name: METRIC,
    help: "HTTP gateway requests by Kubernetes verb, resource and status code.",
    labelNames: ["verb", "resource", "code"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
}

/** GET /metrics: the registry in Prometheus' text format. */
async function servePrometheus(req: IncomingMessage, res: ServerResponse, registry: Registry): Promise<void> {
  if (req.method !== "GET") throw methodNotAllowed(`${req.method ?? ""} is not supported on /metrics`);
  const text = await registry.metrics();
  res.writeHead(200, { "Content-Type": registry.contentType, "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/** The Kubernetes verb and resource of a request, for logs and metrics. */
export function verbOf(method: string, route: Route | undefined, url: URL): { verb: string; resource: string } {
  if (!route || route.type !== "resource") return { verb: method.toLowerCase(), resource: "" };
  const resource = route.subresource ? `${route.info.resource}/${route.subresource}` : route.info.resource;
  const watching = flag(url, "watch");
  switch (method) {
    case "GET":
      return { verb: watching ? "watch" : route.name ? "get" : "list", resource };
    case "POST":
      return { verb: "create", resource };
    case "PUT":
      return { verb: "update", resource };
    case "PATCH":
      return { verb: "patch", resource };
    case "DELETE":
      return { verb: route.name ? "delete" : "deletecollection", resource };
    default:
      return { verb: method.toLowerCase(), resource };
  }
}

async function resource(ctx: RequestContext): Promise<void> {
  const { name, subresource, info } = ctx.route;
  const method = ctx.req.method;
  if (subresource === "scale") return scale(ctx);
  if (subresource === "binding") return binding(ctx);
  if (subresource === "eviction") return eviction(ctx);
  if (subresource === "log") return podLog(ctx);
  if (subresource === "exec" || subresource === "attach" || subresource === "portforward") throw badRequest("Upgrade request required");
  switch (method) {
    case "GET":
      if (flag(ctx.url, "watch")) {
        if (subresource) throw methodNotAllowed(`watch is not supported on ${info.resource}/${subresource}`);
        return watch(ctx);
      }
      return name ? getObject(ctx) : listObjects(ctx);
    case "POST":
      if (name) throw methodNotAllowed(`POST is not supported on a named ${info.kind}: use PUT or PATCH`);
      return createObject(ctx);
    case "PUT":
      if (!name) throw methodNotAllowed(`PUT needs the name of a ${info.kind}`);
      return updateObject(ctx);
    case "PATCH":
      if (!name) throw methodNotAllowed(`PATCH needs the name of a ${info.kind}`);
      return patchObject(ctx);
    case "DELETE":
      if (subresource) throw methodNotAllowed(`DELETE is not supported on ${info.resource}/${subresource}`);
      return name ? deleteObject(ctx) : deleteCollection(ctx);
    default:
      throw methodNotAllowed(`${method ?? ""} is not supported`);
  }
}

function nonResource(route: Exclude<Route, ResourceRoute>, req: IncomingMessage, res: ServerResponse, serverAddress: string | undefined): void {
  if (req.method !== "GET") throw methodNotAllowed(`${req.method ?? ""} is not supported on ${req.url ?? ""}`);
  switch (route.type) {
    case "open":
      if (route.what === "version") return sendJson(res, 200, versionInfo());
      res.writeHead(200, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": 2 });
      res.end("ok");
      return;
    case "openapi":
      return route.version === "v2" ? serveOpenApiV2(req, res) : serveOpenApiV3(req, res, route.path);
    case "apiVersions":
      return serveDiscovery(req, res, "", apiVersions(serverAddress ?? String(req.headers.host ?? "")));
    case "apiGroupList":
      return serveDiscovery(req, res, "apis", apiGroupList());
    case "apiGroup":
      return sendJson(res, 200, apiGroup(route.group));
    case "resourceList":
      return sendJson(res, 200, apiResourceList(route.group, route.version));
  }
}

/** Creates the gateway; nothing listens until `listen`. */
export function createGateway(opts: GatewayOptions): Gateway {
  const log = opts.log;
  // Server errors by verb and resource: a few whole lines a window, then a summary (the store away fails every request).
  const failures = new FailureLog(log);
  const latency = histogram(opts.registry);
  const authentication =
    opts.authentication ??
    new Authenticator({
      ...(opts.tokens ? { tokens: [new StaticTokens(opts.tokens.filter((t) => t !== "").map((t) => ({ token: t, user: legacyAdmin() })))] } : {}),
      ...(opts.allowAnonymousHttp ? { allowAnonymousHttp: true } : {}),
      clientCerts: true,
    });
  const authorizer = opts.authorizer ?? ALLOW_ALL;
  const method = (req: IncomingMessage): string => req.method ?? "GET";
  /** The audit entry of a request as `user` (acting as `as`), undefined when the policy says None or there is no audit log. */
  const beginAudit = (req: IncomingMessage, url: URL, user: UserInfo, as: UserInfo = user): AuditEntry | undefined => {
    if (!opts.audit) return undefined;
    const attrs = requestAttributes(as, method(req), url) ?? nonResourceAttributes(as, method(req), url.pathname);
    return opts.audit.begin({
      user,
      verb: attrs.verb,
      attrs,
      requestURI: req.url ?? "/",
      sourceIP: req.socket.remoteAddress ?? "",
      ...(req.headers["user-agent"] ? { userAgent: req.headers["user-agent"] } : {}),
      ...(as !== user ? { impersonatedUser: as } : {}),
    });
  };
  /**
   * Authentication, impersonation and authorization of one request: the
   * user it acts as, or a thrown 401/403. Its audit entry (begun as soon as
   * the caller is known, the decision annotated) goes to `audited`.
   */
  const admit = async (
    req: IncomingMessage,
    url: URL,
    audited: (e: AuditEntry | undefined) => void = () => undefined,
  ): Promise<{ user: UserInfo; attrs: Attributes | undefined }> => {
    const attrsFor = (u: UserInfo) => requestAttributes(u, method(req), url);
    let authenticated: UserInfo;
    try {
      authenticated = await authentication.request(req, attrsFor(ANONYMOUS) === undefined);
    } catch (err) {
      audited(beginAudit(req, url, ANONYMOUS));
      throw err;
    }
    let user = authenticated;
    try {
      user = impersonate(req.headers, authenticated, authorizer).user;
    } catch (err) {
      audited(beginAudit(req, url, authenticated));
      throw err;
    }
    const entry = beginAudit(req, url, authenticated, user);
    audited(entry);
    const attrs = attrsFor(user);
    if (attrs) {
      const d = authorizer.authorize(attrs);
      entry?.annotate("authorization.k8s.io/decision", d.allowed ? "allow" : "forbid");
      if (d.reason) entry?.annotate("authorization.k8s.io/reason", d.reason);
      if (!d.allowed) throw forbiddenError(attrs, d.reason);
    }
    return { user, attrs };
  };
  /** A stream's admission: its audit event is written when the upgrade is admitted (101) or refused. */
  const admitUpgrade = async (req: IncomingMessage, url: URL): Promise<UserInfo> => {
    let entry: AuditEntry | undefined;
    try {
      const { user } = await admit(req, url, (e) => (entry = e));
      entry?.finish({ code: 101 });
      return user;
    } catch (err) {
      const st = statusOf(err);
      entry?.finish({ code: st.code, status: st });
      throw err;
    }
  };
  const streams = new Set<AbortController>();
  const upgrades = new AbortController();
  const upgrade = upgradeHandler({ streams: opts.streams, log, admit: admitUpgrade, signal: upgrades.signal });
  const servers: http.Server[] = [];
  let closing = false;

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    setRoute: (r: Route) => void,
    audited: (e: AuditEntry | undefined) => void,
  ): Promise<void> {
    if (isWebViewPath(url.pathname)) return serveWebView(req, res, url); // public static files; the page's API calls are authenticated
    const { user, attrs } = await admit(req, url, audited);
    if (req.method === "HEAD" || req.method === "OPTIONS") throw methodNotAllowed(`${req.method} is not supported`);
    // The api's own Prometheus metrics: a non-resource URL, authorized as kube-apiserver's (RBAC get on /metrics: system:monitoring).
    if (url.pathname === "/metrics" && opts.registry) return servePrometheus(req, res, opts.registry);
    if (isMetricsPath(url.pathname)) return serveMetrics(req.method ?? "", url, res, opts.metrics, pathNotFound);
    // autoscaling/v1 HPAs (kubectl autoscale) are converted to the stored autoscaling/v2.
    if (isHpaV1Path(url.pathname)) return serveHpaV1(req, res, url, opts.handlers);
    // The access and identity reviews (kubectl auth can-i, whoami): never stored.
    if (isReviewPath(url.pathname)) return serveReviews(req, res, url, { ...opts.reviews, user, authorizer });
    if (isNodeCredentialPath(url.pathname)) return serveNodeCredential(req, res, user, opts.nodeCredentials);
    const route = parseRoute(url.pathname);
    setRoute(route);
    if (route.type === "open" && route.what === "readyz" && opts.readiness && req.method === "GET") return serveReadyz(req, res, url, opts.readiness);
    if (route.type === "open" && route.what === "livez" && opts.liveness && req.method === "GET") return serveLivez(req, res, url, opts.liveness);
    if (route.type !== "resource") return nonResource(route, req, res, opts.serverAddress);
    if (wantsProtobuf(req)) answerInProtobuf(res);
    const ctx: RequestContext = {
      req,
      res,
      url,
      route,
      user,
      handlers: opts.handlers,
      log,
      ...(opts.logs ? { logs: opts.logs } : {}),
      stream() {
        const ac = new AbortController();
        if (closing) ac.abort();
        const abort = () => ac.abort();
        res.once("close", abort);
        streams.add(ac);
        return {
          signal: ac.signal,
          done: () => {
            streams.delete(ac);
            res.off("close", abort);
          },
        };
      },
    };
    if (route.subresource === "token") return serviceAccountToken(ctx, opts.tokenIssuer);
    // Watches and streams (logs, exec, attach, port-forward) are long-running: they hold no seat, as the apiserver's.
    const flow = opts.flowControl;
    if (!flow || !attrs || attrs.verb === "watch" || LONG_RUNNING.has(attrs.subresource)) return resource(ctx);
    await flow.run(classify(user, attrs), () => resource(ctx));
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://gateway");
    } catch {
      url = new URL("http://gateway/");
    }
    let route: Route | undefined;
    let entry: AuditEntry | undefined;
    let failure: Status | undefined;
    res.once("close", () => {
      if (entry) {
        const body = entry.wantsRequestObject ? bodyRead(req) : undefined;
        entry.finish({
          code: res.headersSent ? res.statusCode : 0,
          ...(failure ? { status: failure } : {}),
          ...(body && body.length ? { requestObject: body } : {}),
        });
      }
      const { verb, resource: r } = verbOf(req.method ?? "", route, url);
      const code = res.headersSent ? res.statusCode : 0;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      latency?.observe({ verb, resource: r, code: String(code) }, seconds);
      log.debug({ method: req.method, path: url.pathname, verb, resource: r, code, ms: Math.round(seconds * 1000) }, "http request");
    });
    serve(
      req,
      res,
      url,
      (r) => (route = r),
      (e) => (entry = e),
    ).catch(async (err: unknown) => {
      failure = statusOf(err);
      const code = codeOf(failure);
      if (code >= 500) {
        const { verb, resource: r } = verbOf(req.method ?? "", route, url);
        failures.failed("http request failed", `${verb} ${r}`, err, { method: req.method, path: url.pathname });
      }
      // The client is still sending the oversized body: answer once it is drained (bounded), so it reads the 413.
      if (code === 413) await bodyDrained(req, 10_000);
      sendError(res, err, code === 413 ? { Connection: "close" } : {});
    });
  }

  async function listenOn(server: http.Server, host: string, port: number): Promise<number> {
    servers.push(server);
    server.on("upgrade", upgrade);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  return {
    handle,
    async listen(l) {
      const out: { httpPort?: number; httpsPort?: number } = {};
      if (l.httpPort !== undefined) out.httpPort = await listenOn(http.createServer(handle), l.host, l.httpPort);
      if (l.httpsPort !== undefined) {
        if (!l.tls) throw new Error("https needs tls.cert and tls.key");
        // A client certificate is asked for, never required: tokens work without one; a certificate the CA did not sign is ignored.
        const clientAuth = l.tls.clientCa ? { ca: l.tls.clientCa, requestCert: true, rejectUnauthorized: false } : {};
        out.httpsPort = await listenOn(https.createServer({ cert: l.tls.cert, key: l.tls.key, ...clientAuth }, handle), l.host, l.httpsPort);
      }
      log.info({ host: l.host, ...out }, "http gateway listening");
      return out;
    },
    async close() {
      closing = true;
      for (const ac of streams) ac.abort();
      upgrades.abort();
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeIdleConnections();
              // Streams end on abort; anything still open after that is cut.
              setImmediate(() => s.closeAllConnections());
            }),
        ),
      );
      servers.length = 0;
    },
  };
}
