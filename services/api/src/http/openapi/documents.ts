// The OpenAPI documents: swagger 2.0 (`/openapi/v2`) with every served path
// and definition, and OpenAPI 3.0 per group-version (`/openapi/v3/api/v1`,
// `/openapi/v3/apis/apps/v1`, …) holding that group-version's paths and the
// schemas they reach. Derived from the kinds table and ./schema.ts.
import { KINDS, type KindInfo } from "@choreo/kit";
import { groupVersions, subresourcesOf } from "../routes.js";
import { definitionName, definitions, INT_OR_STRING, listName, QUANTITY, type Schema } from "./schema.js";

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";
const PATCH = `${META}.Patch`;
const PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"];
const PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"];

/** One operation before it is written in the v2 or v3 form. */
interface Op {
  method: "get" | "post" | "put" | "patch" | "delete";
  action: string;
  operationId: string;
  description: string;
  gvk: { group: string; version: string; kind: string };
  /** Definition name of the 200 answer; `string` for logs. */
  response: string;
  /** Definition name of the body (post/put/patch). */
  body?: string;
  query: string[];
}

interface PathDef {
  path: string;
  pathParams: string[];
  ops: Op[];
}

const QUERY_DESCRIPTIONS: Record<string, string> = {
  pretty: "If 'true', then the output is pretty printed.",
  dryRun: "When present, indicates that modifications should not be persisted. Valid value: All.",
  fieldManager: "fieldManager is a name associated with the actor or entity that is making these changes.",
  fieldValidation:
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: Ignore, Warn (the default) and Strict.",
  force: 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people.',
  labelSelector: "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
  fieldSelector: "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
  limit: "limit is a maximum number of responses to return for a list call.",
  continue: "The continue option should be set when retrieving more results from the server.",
  resourceVersion: "resourceVersion sets a constraint on what resource versions a request may be served from.",
  watch: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
  timeoutSeconds: "Timeout for the list/watch call.",
  allowWatchBookmarks: 'allowWatchBookmarks requests watch events with type "BOOKMARK".',
  gracePeriodSeconds: "The duration in seconds before the object should be deleted.",
  propagationPolicy: "Whether and how garbage collection will be performed: Orphan, Background or Foreground.",
  container: "The container for which to stream logs. Defaults to only container if there is one container in the pod.",
  follow: "Follow the log stream of the pod.",
  tailLines: "If set, the number of lines from the end of the logs to show.",
  sinceSeconds: "A relative time in seconds before the current time from which to show logs.",
  timestamps: "If true, add an RFC3339 timestamp at the beginning of every line of log output.",
  previous: "Return previous terminated container logs.",
};
const QUERY_TYPES: Record<string, string> = {
  limit: "integer",
  timeoutSeconds: "integer",
  gracePeriodSeconds: "integer",
  tailLines: "integer",
  sinceSeconds: "integer",
  watch: "boolean",
  allowWatchBookmarks: "boolean",
  force: "boolean",
  follow: "boolean",
  timestamps: "boolean",
  previous: "boolean",
};

const WRITE_QUERY = ["dryRun", "fieldManager", "fieldValidation"];
const LIST_QUERY = ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "timeoutSeconds", "watch"];

const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Kubernetes' operation ids: `listCoreV1NamespacedPod`, `readAppsV1NamespacedDaemonSetStatus`. */
function opId(verb: string, k: KindInfo, namespaced: boolean, suffix = ""): string {
  const group = k.group ? (k.group.split(".")[0] ?? "") : "core";
  return `${verb}${upper(group)}${upper(k.version)}${namespaced ? "Namespaced" : ""}${k.kind}${suffix}`;
}

function paths(k: KindInfo): PathDef[] {
  const prefix = k.group ? `/apis/${k.group}/${k.version}` : `/api/${k.version}`;
  const coll = k.namespaced ? `${prefix}/namespaces/{namespace}/${k.resource}` : `${prefix}/${k.resource}`;
  const ns = k.namespaced ? ["namespace"] : [];
  const gvk = { group: k.group, version: k.version, kind: k.kind };
  const def = definitionName(k.protoType);
  const op = (method: Op["method"], action: string, verb: string, response: string, query: string[], body?: string, suffix = "", description = ""): Op => ({
    method,
    action,
    operationId: opId(verb, k, k.namespaced, suffix),
    description: description || `${action} ${suffix ? `${suffix.toLowerCase()} of ` : ""}the specified ${k.kind}`,
    gvk,
    response,
    query,
    ...(body ? { body } : {}),
  });
  const out: PathDef[] = [
    {
      path: coll,
      pathParams: ns,
      ops: [
        op("get", "list", "list", listName(k), LIST_QUERY, undefined, "", `list or watch objects of kind ${k.kind}`),
        op("post", "post", "create", def, WRITE_QUERY, def, "", `create a ${k.kind}`),
        op(
          "delete",
          "deletecollection",
          "deleteCollection",
          `${META}.Status`,
          [...LIST_QUERY, "dryRun", "gracePeriodSeconds", "propagationPolicy"],
          `${META}.DeleteOptions`,
          "",
          `delete collection of ${k.kind}`,
        ),
      ],
    },
    {
      path: `${coll}/{name}`,
      pathParams: ["name", ...ns],
      ops: [
        op("get", "get", "read", def, [], undefined, "", `read the specified ${k.kind}`),
        op("put", "put", "replace", def, WRITE_QUERY, def, "", `replace the specified ${k.kind}`),
        op("patch", "patch", "patch", def, [...WRITE_QUERY, "force"], PATCH, "", `partially update the specified ${k.kind}`),
        op(
          "delete",
          "delete",
          "delete",
          `${META}.Status`,
          ["dryRun", "gracePeriodSeconds", "propagationPolicy"],
          `${META}.DeleteOptions`,
          "",
          `delete a ${k.kind}`,
        ),
      ],
    },
  ];
  if (k.namespaced) {
    out.push({
      path: `${prefix}/${k.resource}`,
      pathParams: [],
      ops: [
        {
          ...op("get", "list", "list", listName(k), LIST_QUERY, undefined, "", `list or watch objects of kind ${k.kind}`),
          operationId: opId("list", k, false, "ForAllNamespaces"),
        },
      ],
    });
  }
  for (const sub of subresourcesOf(k)) {
    const p = { path: `${coll}/{name}/${sub}`, pathParams: ["name", ...ns] };
    const S = upper(sub);
    if (sub === "status" || sub === "ephemeralcontainers") {
      // ephemeralcontainers (pods): the pod itself, of which only spec.ephemeralContainers is written.
      const what = sub === "status" ? "status" : "ephemeralcontainers";
      out.push({
        ...p,
        ops: [
          op("get", "get", "read", def, [], undefined, S, `read ${what} of the specified ${k.kind}`),
          op("put", "put", "replace", def, WRITE_QUERY, def, S, `replace ${what} of the specified ${k.kind}`),
          op("patch", "patch", "patch", def, [...WRITE_QUERY, "force"], PATCH, S, `partially update ${what} of the specified ${k.kind}`),
        ],
      });
    } else if (sub === "scale") {
      const scale = "io.k8s.api.autoscaling.v1.Scale";
      const g = { group: "autoscaling", version: "v1", kind: "Scale" };
      out.push({
        ...p,
        ops: [
          { ...op("get", "get", "read", scale, [], undefined, S, `read scale of the specified ${k.kind}`), gvk: g },
          { ...op("put", "put", "replace", scale, WRITE_QUERY, scale, S, `replace scale of the specified ${k.kind}`), gvk: g },
          { ...op("patch", "patch", "patch", scale, [...WRITE_QUERY, "force"], PATCH, S, `partially update scale of the specified ${k.kind}`), gvk: g },
        ],
      });
    } else if (sub === "binding") {
      const binding = "io.k8s.api.core.v1.Binding";
      out.push({
        ...p,
        ops: [
          {
            ...op("post", "post", "create", binding, WRITE_QUERY, binding, "Binding", `create binding of a ${k.kind}`),
            gvk: { group: "", version: "v1", kind: "Binding" },
          },
        ],
      });
    } else if (sub === "eviction") {
      const eviction = "io.k8s.api.policy.v1.Eviction";
      out.push({
        ...p,
        ops: [
          {
            ...op("post", "post", "create", eviction, WRITE_QUERY, eviction, "Eviction", `create eviction of a ${k.kind}`),
            gvk: { group: "policy", version: "v1", kind: "Eviction" },
          },
        ],
      });
    } else if (sub === "log") {
      out.push({
        ...p,
        ops: [
          op(
            "get",
            "get",
            "read",
            "string",
            ["container", "follow", "previous", "sinceSeconds", "tailLines", "timestamps"],
            undefined,
            "Log",
            `read log of the specified ${k.kind}`,
          ),
        ],
      });
    }
  }
  return out;
}

function gvOf(k: KindInfo): string {
  return k.group ? `apis/${k.group}/${k.version}` : `api/${k.version}`;
}

const EXTRA_DEFS: Record<string, Schema> = {
  [PATCH]: { description: "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", type: "object" },
};

// ---- swagger 2.0 ------------------------------------------------------------

function v2Op(o: Op): Schema {
  const parameters: Schema[] = [];
  if (o.body) parameters.push({ name: "body", in: "body", required: o.method !== "delete", schema: { $ref: `#/definitions/${o.body}` } });
  for (const q of o.query) parameters.push({ uniqueItems: true, type: QUERY_TYPES[q] ?? "string", description: QUERY_DESCRIPTIONS[q], name: q, in: "query" });
  const schema = o.response === "string" ? { type: "string" } : { $ref: `#/definitions/${o.response}` };
  return {
    description: o.description,
    consumes: o.method === "patch" ? PATCH_TYPES : ["*/*"],
    produces: o.response === "string" ? ["text/plain", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"] : PRODUCES,
    schemes: ["https"],
    tags: [o.gvk.group ? `${o.gvk.group.split(".")[0] ?? ""}_${o.gvk.version}` : `core_${o.gvk.version}`],
    operationId: o.operationId,
    ...(parameters.length ? { parameters } : {}),
    responses: { "200": { description: "OK", schema }, "401": { description: "Unauthorized" } },
    "x-kubernetes-action": o.action,
    "x-kubernetes-group-version-kind": o.gvk,
  };
}

function pathParamV2(name: string): Schema {
  return name === "name"
    ? { uniqueItems: true, type: "string", description: "name of the object", name: "name", in: "path", required: true }
    : {
        uniqueItems: true,
        type: "string",
        description: "object name and auth scope, such as for teams and projects",
        name: "namespace",
        in: "path",
        required: true,
      };
}

let v2: Schema | undefined;

/** The swagger 2.0 document (`GET /openapi/v2`), built once. */
export function openapiV2(): Schema {
  if (v2) return v2;
  const p: Record<string, Schema> = {};
  for (const k of KINDS) {
    for (const d of paths(k)) {
      const item: Schema = {};
      for (const o of d.ops) item[o.method] = v2Op(o);
      item["parameters"] = [
        ...d.pathParams.map(pathParamV2),
        { uniqueItems: true, type: "string", description: QUERY_DESCRIPTIONS["pretty"], name: "pretty", in: "query" },
      ];
      p[d.path] = item;
    }
  }
  v2 = {
    swagger: "2.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths: Object.fromEntries(Object.entries(p).sort(([a], [b]) => (a < b ? -1 : 1))),
    definitions: { ...definitions(), ...EXTRA_DEFS },
    securityDefinitions: { BearerToken: { description: "Bearer Token authentication", type: "apiKey", name: "authorization", in: "header" } },
    security: [{ BearerToken: [] }],
  };
  return v2;
}

// ---- OpenAPI 3.0 ------------------------------------------------------------

/** A v2 schema in v3 form: refs into components, a ref beside other keys wrapped in allOf, int-or-string and quantity as oneOf. */
function toV3(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(toV3);
  if (!s || typeof s !== "object") return s;
  const o = s as Schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(o)) out[k] = k === "$ref" ? String(v).replace("#/definitions/", "#/components/schemas/") : toV3(v);
  if (typeof out["$ref"] === "string" && Object.keys(out).length > 1) {
    const { $ref, ...rest } = out;
    return { ...rest, allOf: [{ $ref }] };
  }
  return out;
}

let v3All: Record<string, Schema> | undefined;

/** Every definition in v3 form; built once. */
function v3Schemas(): Record<string, Schema> {
  if (v3All) return v3All;
  const out: Record<string, Schema> = {};
  for (const [name, d] of Object.entries({ ...definitions(), ...EXTRA_DEFS })) {
    const s = toV3(d) as Schema;
    if (name === INT_OR_STRING) {
      delete s["type"];
      s["oneOf"] = [{ type: "integer" }, { type: "string" }];
    }
    if (name === QUANTITY) {
      delete s["type"];
      s["oneOf"] = [{ type: "string" }, { type: "number" }];
    }
    out[name] = s;
  }
  v3All = out;
  return out;
}

function v3Op(o: Op): Schema {
  const parameters = o.query.map((q) => ({
    name: q,
    in: "query",
    description: QUERY_DESCRIPTIONS[q],
    schema: { type: QUERY_TYPES[q] ?? "string", uniqueItems: true },
  }));
  const schema = o.response === "string" ? { type: "string" } : { $ref: `#/components/schemas/${o.response}` };
  const types = o.response === "string" ? ["text/plain", ...PRODUCES] : PRODUCES;
  const out: Schema = {
    tags: [o.gvk.group ? `${o.gvk.group.split(".")[0] ?? ""}_${o.gvk.version}` : `core_${o.gvk.version}`],
    description: o.description,
    operationId: o.operationId,
    ...(parameters.length ? { parameters } : {}),
    responses: { "200": { description: "OK", content: Object.fromEntries(types.map((t) => [t, { schema }])) }, "401": { description: "Unauthorized" } },
    "x-kubernetes-action": o.action,
    "x-kubernetes-group-version-kind": o.gvk,
  };
  if (o.body) {
    const body = { $ref: `#/components/schemas/${o.body}` };
    out["requestBody"] = {
      content: Object.fromEntries((o.method === "patch" ? PATCH_TYPES : ["*/*"]).map((t) => [t, { schema: body }])),
      required: o.method !== "delete",
    };
  }
  return out;
}

function pathParamV3(name: string): Schema {
  const { uniqueItems, type, ...rest } = pathParamV2(name);
  return { ...rest, schema: { type, uniqueItems } };
}

/** Every schema name a value refers to, transitively. */
function reach(start: unknown, schemas: Record<string, Schema>, seen: Set<string>): void {
  if (Array.isArray(start)) {
    for (const x of start) reach(x, schemas, seen);
    return;
  }
  if (!start || typeof start !== "object") return;
  for (const [k, v] of Object.entries(start as Schema)) {
    if (k === "$ref" && typeof v === "string") {
      const name = v.replace("#/components/schemas/", "");
      if (!seen.has(name)) {
        seen.add(name);
        reach(schemas[name], schemas, seen);
      }
    } else reach(v, schemas, seen);
  }
}

/** The group-versions with a v3 document, as the index names them: `api/v1`, `apis/apps/v1`. */
export function v3GroupVersions(): string[] {
  return groupVersions()
    .filter((gv) => KINDS.some((k) => k.group === gv.group && k.version === gv.version) || gv.group === "autoscaling")
    .map((gv) => (gv.group ? `apis/${gv.group}/${gv.version}` : `api/${gv.version}`));
}

const v3Docs = new Map<string, Schema>();

/** The OpenAPI 3.0 document of one group-version (`api/v1`, `apis/apps/v1`), or undefined when not served; built once. */
export function openapiV3(gv: string): Schema | undefined {
  const cachedDoc = v3Docs.get(gv);
  if (cachedDoc) return cachedDoc;
  if (!v3GroupVersions().includes(gv)) return undefined;
  const schemas = v3Schemas();
  const p: Record<string, Schema> = {};
  for (const k of KINDS.filter((x) => gvOf(x) === gv)) {
    for (const d of paths(k)) {
      const item: Schema = {};
      for (const o of d.ops) item[o.method] = v3Op(o);
      item["parameters"] = [
        ...d.pathParams.map(pathParamV3),
        { name: "pretty", in: "query", description: QUERY_DESCRIPTIONS["pretty"], schema: { type: "string", uniqueItems: true } },
      ];
      p[d.path] = item;
    }
  }
  const seen = new Set<string>();
  reach(p, schemas, seen);
  // autoscaling/v1 has no kind of its own here: Scale is served under the scaled kinds' paths.
  if (gv === "apis/autoscaling/v1") reach({ $ref: "#/components/schemas/io.k8s.api.autoscaling.v1.Scale" }, schemas, seen);
  const doc: Schema = {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths: Object.fromEntries(Object.entries(p).sort(([a], [b]) => (a < b ? -1 : 1))),
    components: {
      schemas: Object.fromEntries([...seen].sort().map((n) => [n, schemas[n] as Schema])),
      securitySchemes: { BearerToken: { type: "apiKey", description: "Bearer Token authentication", name: "authorization", in: "header" } },
    },
    security: [{ BearerToken: [] }],
  };
  v3Docs.set(gv, doc);
  return doc;
}
