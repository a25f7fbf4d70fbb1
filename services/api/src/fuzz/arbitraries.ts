// fast-check generators of hostile HTTP requests for the gateway: paths,
// query parameters, headers and bodies (JSON, YAML, protobuf, patches),
// mostly near-valid so that they reach deep into decoding and the registry.
import fc from "fast-check";
import { encodeObject, MAGIC } from "@choreo/kit/kube-proto";

export interface FuzzRequest {
  method: string;
  /** Path and query, as sent (only characters Node's client sends: 0x21–0xff). */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What generated it, for the distribution and a failure's report. */
  shape: string;
}

/** `arb` once in `n` times, else null. */
function rarely<T>(arb: fc.Arbitrary<T>, n: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
}

const METHODS = [
  "GET",
  "GET",
  "POST",
  "POST",
  "POST",
  "PUT",
  "PUT",
  "PATCH",
  "PATCH",
  "PATCH",
  "PATCH",
  "DELETE",
  "DELETE",
  "HEAD",
  "OPTIONS",
  "PROPFIND",
  "get",
];

// Names the fuzz target's seed objects carry (see target.ts), so that
// updates, patches and deletes meet existing objects.
export const SEED_NAME = "web";

export const RESOURCES: [prefix: string, resource: string, kind: string, namespaced: boolean][] = [
  ["/api/v1", "pods", "Pod", true],
  ["/api/v1", "services", "Service", true],
  ["/api/v1", "configmaps", "ConfigMap", true],
  ["/api/v1", "secrets", "Secret", true],
  ["/api/v1", "namespaces", "Namespace", false],
  ["/api/v1", "nodes", "Node", false],
  ["/api/v1", "replicationcontrollers", "ReplicationController", true],
  ["/api/v1", "events", "Event", true],
  ["/api/v1", "endpoints", "Endpoints", true],
  ["/apis/apps/v1", "deployments", "Deployment", true],
  ["/apis/apps/v1", "replicasets", "ReplicaSet", true],
  ["/apis/apps/v1", "daemonsets", "DaemonSet", true],
  ["/apis/batch/v1", "jobs", "Job", true],
  ["/apis/batch/v1", "cronjobs", "CronJob", true],
  ["/apis/coordination.k8s.io/v1", "leases", "Lease", true],
  ["/apis/autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true],
  ["/apis/autoscaling/v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true],
  ["/apis/policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", true],
  ["/apis/scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", false],
];
const SUBRESOURCES = [
  "status",
  "scale",
  "log",
  "exec",
  "attach",
  "portforward",
  "binding",
  "eviction",
  "token",
  "proxy",
  "ephemeralcontainers",
  "finalize",
  "x",
];

/** Characters that stress path handling: dots, slashes, escapes (good and broken), latin1, query and fragment marks. */
const nastySegment = fc.oneof(
  fc.constantFrom(
    "..",
    ".",
    "",
    "%2e%2e",
    "%2E",
    "%2f",
    "%2F..%2F",
    "%00",
    "%ff",
    "%",
    "%zz",
    "%e2%82",
    "%c0%ae",
    "\\",
    "~",
    "#",
    "?",
    ";",
    "*",
    "$",
    "\xff\xfe",
    "é",
  ),
  fc.string({ unit: fc.constantFrom(..."abcXYZ-._~%:@!$&'()*+,;=0123456789\xe9\xff/"), maxLength: 20 }),
  fc
    .oneof({ weight: 4, arbitrary: fc.integer({ min: 64, max: 6000 }) }, { weight: 1, arbitrary: fc.integer({ min: 6000, max: 20_000 }) })
    .map((n) => "a".repeat(n)),
  fc.string({ unit: "grapheme", maxLength: 8 }).map((s) => encodeURIComponent(s)),
);

const name = fc.oneof(
  { weight: 8, arbitrary: fc.constant(SEED_NAME) },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/) },
  { weight: 3, arbitrary: nastySegment },
);
const namespace = fc.oneof({ weight: 8, arbitrary: fc.constant("default") }, fc.constant("kube-system"), fc.constant("nope"), nastySegment);

/** A resource path, mostly well formed: prefix, namespace, resource, name (mostly for methods other than POST), subresource. */
function resourcePath(method: string): fc.Arbitrary<string> {
  const named = method === "POST" ? rarely(name, 5) : fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 5, arbitrary: name });
  return fc
    .record({
      r: fc.constantFrom(...RESOURCES),
      ns: fc.oneof({ weight: 6, arbitrary: fc.constant("default") }, { weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: namespace }),
      name: named,
      sub: rarely(fc.constantFrom(...SUBRESOURCES), 5),
      extra: rarely(nastySegment, 20),
      unknownGroup: rarely(fc.constantFrom("/apis/nope/v1", "/apis/apps/v9", "/api/v2", "/apis/apps", "/apis/", "/api", "/apis/apps/v1beta1"), 20),
    })
    .map(({ r, ns, name: n, sub, extra, unknownGroup }) => {
      let p = unknownGroup ?? r[0];
      if (ns !== null && (r[3] || ns !== "default")) p += `/namespaces/${ns}`;
      p += `/${r[1]}`;
      if (n !== null) p += `/${n}`;
      if (n !== null && sub !== null) p += `/${sub}`;
      if (extra !== null) p += `/${extra}`;
      return p;
    });
}

const otherPath = fc.oneof(
  fc.constantFrom(
    "/",
    "/api",
    "/apis",
    "/version",
    "/healthz",
    "/readyz",
    "/livez",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/api/v1",
    "/metrics",
    "/logs",
    "//",
    "/..",
    "/%2e%2e/%2e%2e/etc/passwd",
  ),
  fc.array(nastySegment, { minLength: 1, maxLength: 6 }).map((s) => "/" + s.join("/")),
);

const selector = fc.oneof(
  fc.constantFrom(
    "app=web",
    "app!=web",
    "app in (a,b)",
    "app notin (a)",
    "!app",
    "app",
    "a=b,c=d",
    "metadata.name=web",
    "spec.nodeName=",
    "status.phase!=Running",
    "x in ()",
    "=",
    ",,",
    "a==b",
    "a=(b",
    "a in (b",
    "metadata.name",
  ),
  fc.string({ unit: fc.constantFrom(..."ab=!,()in notx.-_/ \t0123456789"), maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 20 }),
);

const number = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom("0", "-1", "1e400", "9223372036854775808", "99999999999999999999999999", "NaN", "Infinity", "0x10", "1.5", "", " 1", "+3", "-0"),
);

const queryValue = fc.oneof(
  selector,
  number,
  fc.constantFrom("true", "false", "All", "Strict", "Warn", "Ignore", "Foreground", "Orphan", "Background", "Exact", "NotOlderThan", "0", "1", "kubectl"),
);
const QUERY_KEYS = [
  "labelSelector",
  "fieldSelector",
  "watch",
  "limit",
  "continue",
  "resourceVersion",
  "resourceVersionMatch",
  "timeoutSeconds",
  "dryRun",
  "fieldManager",
  "fieldValidation",
  "force",
  "propagationPolicy",
  "gracePeriodSeconds",
  "orphanDependents",
  "pretty",
  "allowWatchBookmarks",
  "sendInitialEvents",
  "container",
  "follow",
  "tailLines",
  "sinceSeconds",
  "limitBytes",
  "previous",
  "timestamps",
  "includeObject",
  "stdin",
  "stdout",
  "command",
  "tty",
  "ports",
  "as",
  "v",
  "%zz",
  "",
];
const query = fc
  .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue), { maxLength: 5 })
  .map((pairs) => pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"));
// Watches are bounded (timeoutSeconds) and the client stops reading them, see client.ts.
const rawQuery = fc.oneof(
  { weight: 6, arbitrary: query },
  { weight: 1, arbitrary: fc.constantFrom("%", "a=%zz", "&&&", "=", "watch", "watch=1&watch=0", "limit=1&limit=2") },
);

// --- bodies ---

export function manifest(kind: string, apiVersion: string): Record<string, unknown> {
  const meta = { name: SEED_NAME, namespace: "default", labels: { app: "web" } };
  const podSpec = { containers: [{ name: "c", image: "nginx", ports: [{ containerPort: 80 }] }] };
  const template = { metadata: { labels: { app: "web" } }, spec: podSpec };
  const specs: Record<string, unknown> = {
    Pod: podSpec,
    Service: { selector: { app: "web" }, ports: [{ port: 80, targetPort: 80 }] },
    Deployment: { replicas: 1, selector: { matchLabels: { app: "web" } }, template },
    ReplicaSet: { replicas: 1, selector: { matchLabels: { app: "web" } }, template },
    ReplicationController: { replicas: 1, selector: { app: "web" }, template },
    Job: { template: { ...template, spec: { ...podSpec, restartPolicy: "Never" } } },
  };
  const o: Record<string, unknown> = { apiVersion, kind, metadata: meta };
  if (specs[kind]) o["spec"] = specs[kind];
  if (kind === "ConfigMap") o["data"] = { a: "b" };
  if (kind === "Secret") o["stringData"] = { password: "x" };
  return o;
}

const validManifest = fc.constantFrom(...RESOURCES).map(([prefix, , kind]) => manifest(kind, prefix === "/api/v1" ? "v1" : prefix.slice("/apis/".length)));

/** Values that break assumptions: wrong types, huge and odd numbers, odd strings. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    2 ** 53 + 1,
    "",
    "web",
    "0",
    "null",
    [],
    {},
    [null],
    { "": "" },
    "\u0000",
    "\ud800",
    "1Gi",
    "-1",
    "100000000000000Ti",
    "9223372036854775807",
  ),
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A valid manifest with one to three fields set to odd values (at any depth), deleted, or the kind and version changed. */
const mutatedManifest = fc
  .tuple(
    validManifest,
    fc.array(
      fc.tuple(
        fc.array(
          fc.constantFrom(
            "metadata",
            "spec",
            "status",
            "name",
            "namespace",
            "labels",
            "annotations",
            "containers",
            "0",
            "ports",
            "image",
            "replicas",
            "selector",
            "template",
            "data",
            "kind",
            "apiVersion",
            "resourceVersion",
            "uid",
            "finalizers",
            "ownerReferences",
            "managedFields",
            "generateName",
            "deletionTimestamp",
            "creationTimestamp",
            "matchLabels",
            "type",
            "clusterIP",
            "nodeName",
            "priority",
            "x",
          ),
          { minLength: 1, maxLength: 5 },
        ),
        oddValue,
        fc.boolean(),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  )
  .map(([m, edits]) => {
    const o = structuredClone(m);
    for (const [path, value, del] of edits) {
      let cur: Record<string, unknown> = o;
      for (const key of path.slice(0, -1)) {
        const next = cur[key];
        if (typeof next !== "object" || next === null) cur[key] = Array.isArray(next) ? next : {};
        cur = cur[key] as Record<string, unknown>;
      }
      const last = path[path.length - 1];
      if (del) delete cur[last];
      else cur[last] = value;
    }
    return o;
  });

/** JSON text with what JSON.parse accepts but code may not expect, or what it refuses. */
const hostileJsonText = fc.oneof(
  fc.integer({ min: 1, max: 200_000 }).map((n) => "[".repeat(n) + "]".repeat(n)),
  fc.integer({ min: 1, max: 50_000 }).map((n) => '{"metadata":'.repeat(n) + "{}" + "}".repeat(n)),
  fc
    .integer({ min: 100, max: 20_000 })
    .map((n) => `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{${Array.from({ length: n }, (_, i) => `"k${i}":"v"`).join(",")}}}}`),
  fc.constantFrom(
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","name":"other"}}',
    '{"apiVersion":"v1","apiVersion":"apps/v1","kind":"Pod"}',
    '{"kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":1e400}]}]}}',
    '{"kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":123456789012345678901234567890}]}]}}',
    '{"kind":"Pod","metadata":{"name":"web","__proto__":{"polluted":true}}}',
    '{"kind":"Pod","metadata":{"name":"web","constructor":{"prototype":{"x":1}}}}',
    '{"kind":"Pod","metadata":{"name":"\\ud800"}}',
    '{"kind":"Pod","metadata":{"name":"w\\u0000b"}}',
    '{"kind":"Pod","metadata":{"labels":{"a":1,"b":null,"c":[]}}}',
    '{"kind":"Pod","metadata":{"annotations":"x"}}',
    "null",
    "true",
    "0",
    "[]",
    '""',
    "{}",
    "{",
    '{"a":}',
    "\ufeff{}",
    "{}garbage",
    "  \n ",
    '{"kind":null}',
    '{"kind":{}}',
    '{"apiVersion":7}',
  ),
  fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: "binary", maxLength: 200 }),
);

const yamlText = fc.oneof(
  fc.constantFrom(
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  name: web2\n",
    "a: &a [*a]\n",
    "a: &a [1,2]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
    "!!binary aGVsbG8=\n",
    "kind: !!js/function 'function(){}'\n",
    "--- \n---\n...\n",
    "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\n",
    "? [a, b]\n: c\n",
    "kind: Pod\nmetadata: {name: web, labels: {? a : b}}\n",
    "kind: Pod\nmetadata:\n  name: 0x1F\n",
    "<<: {kind: Pod}\n",
    "kind: Pod\nspec: !!set {a, b}\n",
    "kind: Pod\nmetadata: {creationTimestamp: 2001-12-14t21:59:43.10-05:00}\n",
    "\t- a\n",
    "%YAML 9.9\n---\na: 1\n",
    "%TAG ! tag:x,2000:\n---\n!foo {}\n",
  ),
  fc.integer({ min: 1, max: 20_000 }).map((n) => "- ".repeat(n) + "x"),
  fc.integer({ min: 1, max: 20_000 }).map((n) => "[".repeat(n)),
  fc.string({ unit: fc.constantFrom(..."ab:- \n\t{}[],&*!|>'\"#%@`?"), maxLength: 80 }),
  mutatedManifest.map((m) => JSON.stringify(m, null, 1).replace(/[{},]/g, "\n")),
);

/** A manifest's protobuf envelope; a Pod's for kinds without a protobuf form. */
function protobufOf(m: Record<string, unknown>): Buffer {
  try {
    return Buffer.from(encodeObject(m as Parameters<typeof encodeObject>[0]));
  } catch {
    return Buffer.from(encodeObject(manifest("Pod", "v1") as Parameters<typeof encodeObject>[0]));
  }
}

const protobufBytes = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.concat([Buffer.from(MAGIC), b])),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc.tuple(validManifest, fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([m, cut, at, byte]) => {
    const bytes = protobufOf(m);
    const mode = cut % 3;
    if (mode === 0) return bytes.subarray(0, cut % (bytes.length + 1));
    const copy = Buffer.from(bytes);
    copy[at % copy.length] = byte;
    return mode === 1 ? copy : Buffer.concat([copy, Buffer.from([byte, byte, byte])]);
  }),
);

const jsonPointer = fc.oneof(
  fc.constantFrom(
    "/metadata/labels/app",
    "/metadata/labels/a~1b",
    "/metadata/labels/~2",
    "/metadata/name",
    "/spec/containers/0/image",
    "/spec/containers/-",
    "/spec/containers/99999999999",
    "/spec/containers/-1",
    "/spec/replicas",
    "",
    "/",
    "metadata",
    "/metadata/resourceVersion",
    "/kind",
    "/apiVersion",
    "/status",
    "/metadata/finalizers/0",
    "/spec/containers/01",
  ),
  fc.array(fc.oneof(fc.string({ maxLength: 5 }), fc.nat().map(String)), { maxLength: 4 }).map((a) => "/" + a.join("/")),
);
const jsonPatch = fc
  .array(
    fc.record(
      {
        op: fc.constantFrom("add", "remove", "replace", "move", "copy", "test", "bogus", ""),
        path: jsonPointer,
        from: fc.option(jsonPointer),
        value: fc.option(oddValue),
      },
      { requiredKeys: ["op"] },
    ),
    { maxLength: 4 },
  )
  .map((ops) => JSON.stringify(ops));
const mergePatch = fc.oneof(
  mutatedManifest.map((m) => JSON.stringify(m)),
  fc.constantFrom(
    '{"metadata":{"labels":null}}',
    '{"metadata":null}',
    '{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}',
    '{"spec":{"containers":[{"$patch":"replace"}]}}',
    '{"spec":{"$patch":"bogus"}}',
    '{"$patch":"delete"}',
    '{"spec":{"$setElementOrder/containers":[{"name":"x"}]}}',
    '{"spec":{"$retainKeys":["x"],"replicas":3}}',
    '{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}',
    '{"spec":{"containers":{"name":"c"}}}',
    '{"metadata":{"resourceVersion":"1"},"spec":{"replicas":2}}',
    '{"metadata":{"name":"other"}}',
    '{"kind":"Service"}',
    "[]",
    "null",
  ),
);

type Body = { type: string; body: Buffer; shape: string };
const withType = (types: string[], shape: string) => (text: string | Buffer) =>
  fc.constantFrom(...types).map((type): Body => ({ type, body: Buffer.isBuffer(text) ? text : Buffer.from(text, "utf8"), shape }));
const CONTENT_TYPES = [
  "application/json",
  "application/yaml",
  "application/vnd.kubernetes.protobuf",
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
  "",
  "text/plain",
  "application/json; charset=latin1",
  "multipart/form-data; boundary=x",
  "application/*",
];

const body: fc.Arbitrary<Body | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  {
    weight: 4,
    arbitrary: validManifest.chain((m) => withType(["application/json", "application/yaml", "application/apply-patch+yaml"], "manifest")(JSON.stringify(m))),
  },
  {
    weight: 6,
    arbitrary: mutatedManifest.chain((m) =>
      withType(
        ["application/json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"],
        "mutated",
      )(JSON.stringify(m)),
    ),
  },
  {
    weight: 4,
    arbitrary: hostileJsonText.chain(
      withType(
        [
          "application/json",
          "application/merge-patch+json",
          "application/json-patch+json",
          "application/strategic-merge-patch+json",
          "application/apply-patch+yaml",
          "",
        ],
        "hostile-json",
      ),
    ),
  },
  { weight: 3, arbitrary: yamlText.chain(withType(["application/yaml", "application/apply-patch+yaml", "text/yaml"], "yaml")) },
  { weight: 3, arbitrary: protobufBytes.chain(withType(["application/vnd.kubernetes.protobuf"], "protobuf")) },
  { weight: 3, arbitrary: jsonPatch.chain(withType(["application/json-patch+json"], "json-patch")) },
  { weight: 3, arbitrary: mergePatch.chain(withType(["application/merge-patch+json", "application/strategic-merge-patch+json"], "merge-patch")) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).chain((b) => withType(CONTENT_TYPES, "bytes")(Buffer.from(b))) },
);

const ACCEPTS = [
  "",
  "application/json",
  "application/vnd.kubernetes.protobuf",
  "application/vnd.kubernetes.protobuf,application/json",
  "application/json;as=Table;v=v1;g=meta.k8s.io",
  "application/json;as=Table;v=v9;g=meta.k8s.io",
  "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
  "text/html",
  "*/*",
  "application/yaml",
  "application/json;q=0",
  "application/vnd.kubernetes.protobuf;stream=watch",
  "a;b;c=;=d",
  "application/json;q=abc",
];

/** One request: a method, a path with a query, headers, and a body. */
export function fuzzRequest(token: string): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...METHODS).chain((method) => request(method, token));
}

function request(method: string, token: string): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      path: fc.oneof({ weight: 8, arbitrary: resourcePath(method) }, { weight: 1, arbitrary: otherPath }),
      query: fc.option(rawQuery, { freq: 2 }),
      body,
      accept: fc.constantFrom(...ACCEPTS),
      auth: fc.oneof({ weight: 20, arbitrary: fc.constant("token") }, fc.constantFrom("none", "wrong", "basic")),
      impersonate: rarely(fc.constantFrom("alice", "system:anonymous", "system:node:node-1", ""), 10),
      contentTypeOverride: rarely(fc.constantFrom(...CONTENT_TYPES), 10),
    })
    .map(({ path, query: q, body: b, accept, auth, impersonate, contentTypeOverride }) => {
      const headers: Record<string, string> = {};
      if (accept) headers["Accept"] = accept;
      if (auth === "token") headers["Authorization"] = `Bearer ${token}`;
      else if (auth === "wrong") headers["Authorization"] = `Bearer ${token}x`;
      else if (auth === "basic") headers["Authorization"] = "Basic YWRtaW46YWRtaW4=";
      if (impersonate !== null) headers["Impersonate-User"] = impersonate;
      const type = contentTypeOverride ?? b?.type;
      if (type) headers["Content-Type"] = type;
      const full = q !== null ? `${path}?${q}` : path;
      return { method, path: full, headers, ...(b ? { body: b.body } : {}), shape: b?.shape ?? "no-body" };
    });
}
