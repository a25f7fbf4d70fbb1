// A tiny in-memory Kubernetes API for the CLI's tests: answers CRUD, lists
// (JSON or a simple Table), merge patches, deletes, discovery and /version,
// streams scripted watch events, and records every request.
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { applyMergePatch, type JsonValue } from "@choreo/kit/apimachinery";
import { KINDS, type KindInfo } from "@choreo/kit";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

type Obj = Record<string, unknown>;

/** A Status body the way the real api sends it. */
export function status(code: number, reason: string, message: string): Obj {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}

interface Route {
  kind: KindInfo;
  namespace?: string;
  name?: string;
}

function parsePath(p: string): Route | undefined {
  const parts = p.split("/").filter((x) => x !== "");
  let rest: string[];
  let group = "";
  let version: string;
  if (parts[0] === "api") {
    version = parts[1] ?? "";
    rest = parts.slice(2);
  } else if (parts[0] === "apis") {
    group = parts[1] ?? "";
    version = parts[2] ?? "";
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const kind = KINDS.find((k) => k.group === group && k.version === version && k.resource === rest[0]);
  if (!kind || rest.length > 2) return undefined;
  return { kind, namespace, name: rest[1] };
}

function metaOf(o: Obj): Obj {
  return (o["metadata"] ?? {}) as Obj;
}

function matchesLabels(o: Obj, selector: string | null): boolean {
  if (!selector) return true;
  const labels = (metaOf(o)["labels"] ?? {}) as Record<string, string>;
  return selector.split(",").every((req) => {
    const [k, v] = req.split("=");
    return k !== undefined && labels[k] === v;
  });
}

function matchesFields(o: Obj, selector: string | null): boolean {
  if (!selector) return true;
  return selector.split(",").every((req) => {
    const [k, v] = req.split("=");
    return k === "metadata.name" ? metaOf(o)["name"] === v : k === "metadata.namespace" ? metaOf(o)["namespace"] === v : true;
  });
}

/** A one-column-per-field Table: Name, Status (status.phase), IP (wide). */
export function fakeTable(objects: Obj[], resourceVersion: string): Obj {
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: [
      { name: "Name", type: "string", format: "name", description: "", priority: 0 },
      { name: "Status", type: "string", format: "", description: "", priority: 0 },
      { name: "IP", type: "string", format: "", description: "", priority: 1 },
    ],
    rows: objects.map((o) => {
      const st = (o["status"] ?? {}) as Obj;
      return {
        cells: [metaOf(o)["name"], st["phase"] ?? "", st["podIP"] ?? "<none>"],
        object: { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: metaOf(o) },
      };
    }),
  };
}

/** The fake server. Tests seed objects, script watch events, and read `requests`. */
export class FakeApi {
  readonly requests: RecordedRequest[] = [];
  /** Objects by `resource|namespace|name`. */
  readonly objects = new Map<string, Obj>();
  /** Lines sent to the next watch, then the stream ends. */
  watchEvents: Obj[] = [];
  /** Answers a request before the default behaviour when it returns something. */
  override: ((r: RecordedRequest) => { code: number; body: unknown } | undefined) | undefined;
  private rv = 100;
  private readonly server: http.Server;
  url = "";

  /** Serves https when given a certificate and key (PEM). */
  constructor(tls?: { cert: string; key: string }) {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => void this.handle(req, res);
    this.server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const scheme = this.server instanceof https.Server ? "https" : "http";
    this.url = `${scheme}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private key(kind: KindInfo, namespace: string | undefined, name: string): string {
    return `${kind.resource}|${kind.namespaced ? (namespace ?? "") : ""}|${name}`;
  }

  /** Stores an object as if created (uid, resourceVersion, creationTimestamp filled in). */
  seed(kind: KindInfo, obj: Obj): Obj {
    const meta = { ...metaOf(obj) };
    meta["uid"] ??= `uid-${String(meta["name"])}`;
    meta["resourceVersion"] = String(++this.rv);
    meta["creationTimestamp"] ??= "2026-01-01T00:00:00Z";
    if (kind.namespaced) meta["namespace"] ??= "default";
    const stored = { apiVersion: kind.apiVersion, kind: kind.kind, ...obj, metadata: meta };
    this.objects.set(this.key(kind, meta["namespace"] as string | undefined, String(meta["name"])), stored);
    return stored;
  }

  get(kind: KindInfo, namespace: string | undefined, name: string): Obj | undefined {
    return this.objects.get(this.key(kind, namespace, name));
  }

  /** The requests other than discovery. */
  calls(): string[] {
    return this.requests
      .filter((r) => !/^\/(api|apis)(\/v1)?$/.test(r.path) && !/^\/apis\/[^/]+\/v1$/.test(r.path))
      .map((r) => `${r.method} ${r.path}${[...r.query].length ? `?${r.query.toString()}` : ""}`);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://x");
    const r: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: text ? (JSON.parse(text) as unknown) : undefined,
    };
    this.requests.push(r);
    const send = (code: number, body: unknown): void => {
      res.writeHead(code, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const o = this.override?.(r);
    if (o) return send(o.code, o.body);
    if (r.path === "/version") return send(200, { major: "1", minor: "32", gitVersion: "v1.32.0-choreo" });
    if (r.path === "/api/v1" || /^\/apis\/[^/]+\/v1$/.test(r.path)) {
      const group = r.path === "/api/v1" ? "" : r.path.split("/")[2];
      return send(200, {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: group ? `${group}/v1` : "v1",
        resources: KINDS.filter((k) => k.group === group).flatMap((k) => [
          {
            name: k.resource,
            singularName: k.singular,
            namespaced: k.namespaced,
            kind: k.kind,
            verbs: ["get", "list"],
            ...(k.shortNames.length ? { shortNames: k.shortNames } : {}),
            ...(k.categories.length ? { categories: k.categories } : {}),
          },
          { name: `${k.resource}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get"] },
        ]),
      });
    }
    if (r.path === "/apis") {
      const groups = [...new Set(KINDS.map((k) => k.group).filter((g) => g))];
      return send(200, {
        kind: "APIGroupList",
        apiVersion: "v1",
        groups: groups.map((name) => ({
          name,
          versions: [{ groupVersion: `${name}/v1`, version: "v1" }],
          preferredVersion: { groupVersion: `${name}/v1`, version: "v1" },
        })),
      });
    }
    const route = parsePath(r.path);
    if (!route) return send(404, status(404, "NotFound", "the server could not find the requested resource"));
    const { kind, namespace, name } = route;
    const table = String(req.headers["accept"] ?? "").includes("as=Table");
    const notFound = (): void => send(404, { ...status(404, "NotFound", `${kind.resource} "${name}" not found`), details: { name, kind: kind.resource } });

    if (name === undefined && r.method === "GET" && url.searchParams.get("watch") === "true") {
      res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
      for (const ev of this.watchEvents) res.write(`${JSON.stringify(ev)}\n`);
      res.end();
      return;
    }
    if (name === undefined && r.method === "GET") {
      const items = [...this.objects.values()].filter(
        (o) =>
          o["kind"] === kind.kind &&
          (!kind.namespaced || namespace === undefined || metaOf(o)["namespace"] === namespace) &&
          matchesLabels(o, url.searchParams.get("labelSelector")) &&
          matchesFields(o, url.searchParams.get("fieldSelector")),
      );
      const rv = String(this.rv);
      if (table) return send(200, fakeTable(items, rv));
      return send(200, {
        kind: `${kind.kind}List`,
        apiVersion: kind.apiVersion,
        metadata: { resourceVersion: rv },
        items: items.map((i) => {
          const { kind: _k, apiVersion: _a, ...rest } = i;
          return rest;
        }),
      });
    }
    if (name === undefined && r.method === "POST") {
      const body = r.body as Obj;
      const n = String(metaOf(body)["name"]);
      if (this.get(kind, namespace, n)) return send(409, status(409, "AlreadyExists", `${kind.resource} "${n}" already exists`));
      return send(201, this.seed(kind, { ...body, metadata: { ...metaOf(body), namespace: kind.namespaced ? namespace : undefined } }));
    }
    if (name === undefined) return send(405, status(405, "MethodNotAllowed", "method not allowed"));
    const current = this.get(kind, namespace, name);
    if (!current) return notFound();
    switch (r.method) {
      case "GET":
        return send(200, table ? fakeTable([current], String(this.rv)) : current);
      case "PATCH": {
        const patched = applyMergePatch(current as JsonValue, r.body as JsonValue) as Obj;
        return send(200, this.seed(kind, patched));
      }
      case "DELETE":
        this.objects.delete(this.key(kind, namespace, name));
        return send(200, current);
      default:
        return send(405, status(405, "MethodNotAllowed", "method not allowed"));
    }
  }
}
