// The CLI in-process against a fake Kubernetes API (src/testing/fake-api.ts).
import { describe, it, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { KINDS, kindByResource, type KindInfo } from "@choreo/kit";
import { LAST_APPLIED } from "./apply-patch.js";
import { runCli, splitCommand } from "./main.js";
import { FakeApi, status } from "./testing/fake-api.js";

function kind(resource: string): KindInfo {
  const k = kindByResource(resource);
  assert.ok(k);
  return k;
}
const PODS = kind("pods");

let api: FakeApi;
let dir: string;

async function run(
  argv: string[],
  o: { env?: Record<string, string>; stdin?: string; server?: boolean } = {},
): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const args = o.server === false ? argv : [...argv, "--server", api.url];
  const code = await runCli(args, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: o.env ?? { HOME: path.join(dir, "nohome") },
    cwd: dir,
    stdin: async () => o.stdin ?? "",
  });
  return { code, out, err };
}

const POD_YAML = (image: string, labels = "    app: web\n") =>
  `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n${labels}spec:\n  containers:\n  - name: c\n    image: ${image}\n`;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "choreo-cli-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));
beforeEach(async () => {
  await api?.stop();
  api = await new FakeApi().start();
});
after(async () => api?.stop());

describe("command line", () => {
  it("finds the command after global flags", () => {
    assert.deepEqual(splitCommand(["-n", "x", "get", "pods"]), { command: "get", args: ["-n", "x", "pods"] });
    assert.deepEqual(splitCommand(["--kubeconfig=k", "version"]), { command: "version", args: ["--kubeconfig=k"] });
  });
  it("unknown commands and flags fail with kubectl-like messages", async () => {
    assert.deepEqual(await run(["frob"], { server: false }), {
      code: 1,
      out: "",
      err: `error: unknown command "frob" for "choreo"\nRun 'choreo --help' for usage.\n`,
    });
    const r = await run(["get", "pods", "--bogus"]);
    assert.equal(r.code, 1);
    assert.equal(r.err, "error: unknown flag: --bogus\n");
  });
  it("help lists the commands", async () => {
    const r = await run(["--help"], { server: false });
    assert.equal(r.code, 0);
    for (const c of ["get", "apply", "delete", "api-resources", "version", "up"]) assert.match(r.out, new RegExp(`\\n  ${c} `));
  });
});

describe("apply", () => {
  it("creates with the last-applied annotation, then is unchanged, then patches three-way", async () => {
    writeFileSync(path.join(dir, "pod.yaml"), POD_YAML("nginx", "    app: web\n    tier: fe\n"));
    let r = await run(["apply", "-f", "pod.yaml"]);
    assert.deepEqual(r, { code: 0, out: "pod/web created\n", err: "" });
    assert.deepEqual(api.calls(), ["GET /api/v1/namespaces/default/pods/web", "POST /api/v1/namespaces/default/pods?fieldManager=kubectl-client-side-apply"]);
    const posted = api.requests.at(-1)?.body as { metadata: { namespace: string; annotations: Record<string, string> } };
    assert.equal(posted.metadata.namespace, "default");
    assert.deepEqual(JSON.parse(posted.metadata.annotations[LAST_APPLIED] ?? ""), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web", namespace: "default", labels: { app: "web", tier: "fe" } },
      spec: { containers: [{ name: "c", image: "nginx" }] },
    });

    api.requests.length = 0;
    r = await run(["apply", "-f", "pod.yaml"]);
    assert.deepEqual(r, { code: 0, out: "pod/web unchanged\n", err: "" });
    assert.deepEqual(api.calls(), ["GET /api/v1/namespaces/default/pods/web"]);

    writeFileSync(path.join(dir, "pod.yaml"), POD_YAML("nginx:2"));
    api.requests.length = 0;
    r = await run(["apply", "-f", "pod.yaml"]);
    assert.deepEqual(r, { code: 0, out: "pod/web configured\n", err: "" });
    const patch = api.requests.at(-1);
    assert.equal(patch?.method, "PATCH");
    assert.equal(patch?.headers["content-type"], "application/merge-patch+json");
    const body = patch?.body as { metadata: { labels: Record<string, unknown> }; spec: unknown };
    assert.deepEqual(body.metadata.labels, { tier: null });
    assert.deepEqual(body.spec, { containers: [{ name: "c", image: "nginx:2" }] });
    const stored = api.get(PODS, "default", "web") as { metadata: { labels: Record<string, string> } };
    assert.deepEqual(stored.metadata.labels, { app: "web" });
  });

  it("applies directories, lists and stdin; -n sets the namespace; group kinds print type.group", async () => {
    mkdirSync(path.join(dir, "m"), { recursive: true });
    writeFileSync(path.join(dir, "m", "a.yaml"), `${POD_YAML("x")}---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: agent\nspec: {}\n`);
    writeFileSync(
      path.join(dir, "m", "b.json"),
      JSON.stringify({ apiVersion: "v1", kind: "List", items: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } }] }),
    );
    const r = await run(["apply", "-f", "m", "-f", "-", "-n", "team"], { stdin: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: pi\n" });
    assert.equal(r.err, "");
    assert.equal(r.out, "pod/web created\ndaemonset.apps/agent created\nnamespace/team created\njob.batch/pi created\n");
    assert.ok(api.calls().includes("POST /apis/apps/v1/namespaces/team/daemonsets?fieldManager=kubectl-client-side-apply"));
    assert.ok(api.calls().includes("POST /api/v1/namespaces?fieldManager=kubectl-client-side-apply"));
  });

  it("reports server errors per object and goes on; exit code 1", async () => {
    api.override = (req) =>
      req.method === "POST" && (req.body as { metadata: { name: string } }).metadata.name === "bad"
        ? { code: 422, body: { ...status(422, "Invalid", `Pod "bad" is invalid: spec.containers[0].image: Required value`) } }
        : undefined;
    writeFileSync(path.join(dir, "two.yaml"), `${POD_YAML("x").replace("name: web", "name: bad")}---\n${POD_YAML("x")}`);
    const r = await run(["apply", "-f", "two.yaml"]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "pod/web created\n");
    assert.equal(r.err, `The Pod "bad" is invalid: spec.containers[0].image: Required value\n`);
  });

  it("refuses manifests without kind, and a namespace that contradicts -n", async () => {
    writeFileSync(path.join(dir, "nokind.yaml"), "apiVersion: v1\nmetadata:\n  name: x\n");
    let r = await run(["apply", "-f", "nokind.yaml"]);
    assert.equal(r.code, 1);
    assert.equal(r.err, `error: error validating "nokind.yaml": error validating data: [kind not set]\n`);
    writeFileSync(path.join(dir, "ns.yaml"), POD_YAML("x").replace("  name: web\n", "  name: web\n  namespace: a\n"));
    r = await run(["apply", "-f", "ns.yaml", "-n", "b"]);
    assert.equal(r.code, 1);
    assert.match(r.err, /the namespace from the provided object "a" does not match the namespace "b"/);
    r = await run(["apply"]);
    assert.equal(r.err, "error: must specify one of -f and -k\n");
  });
});

describe("get", () => {
  beforeEach(() => {
    api.seed(PODS, { metadata: { name: "web-1", labels: { app: "web" } }, status: { phase: "Running", podIP: "10.0.0.5" } });
    api.seed(PODS, { metadata: { name: "db", namespace: "data" }, status: { phase: "Pending" } });
  });

  it("asks for a Table and prints aligned columns", async () => {
    const r = await run(["get", "pods"]);
    assert.deepEqual(r, { code: 0, out: "NAME    STATUS\nweb-1   Running\n", err: "" });
    const req = api.requests.at(-1);
    assert.equal(req?.headers["accept"], "application/json;as=Table;v=v1;g=meta.k8s.io, application/json");
    assert.equal(req?.query.get("limit"), "500");
  });

  it("-o wide, -A, --no-headers, -l, --field-selector, short names", async () => {
    assert.equal((await run(["get", "po", "-o", "wide"])).out, "NAME    STATUS    IP\nweb-1   Running   10.0.0.5\n");
    assert.equal((await run(["get", "pods", "-A"])).out, "NAMESPACE   NAME    STATUS\ndefault     web-1   Running\ndata        db      Pending\n");
    assert.equal(api.requests.at(-1)?.path, "/api/v1/pods");
    assert.equal((await run(["get", "pods", "-A", "--no-headers", "-l", "app=web"])).out, "default   web-1   Running\n");
    assert.equal(api.requests.at(-1)?.query.get("labelSelector"), "app=web");
    await run(["get", "pods", "--field-selector", "status.phase=Running"]);
    assert.equal(api.requests.at(-1)?.query.get("fieldSelector"), "status.phase=Running");
  });

  it("names, type/name, and kubectl's NotFound message with exit 1", async () => {
    assert.equal((await run(["get", "pod", "web-1"])).out, "NAME    STATUS\nweb-1   Running\n");
    assert.equal((await run(["get", "pod/web-1"])).out, "NAME    STATUS\nweb-1   Running\n");
    const r = await run(["get", "pods", "web-1", "nope"]);
    assert.equal(r.code, 1);
    assert.equal(r.out, "NAME    STATUS\nweb-1   Running\n");
    assert.equal(r.err, `Error from server (NotFound): pods "nope" not found\n`);
    assert.deepEqual(await run(["get", "pods", "nope", "--ignore-not-found"]), { code: 0, out: "", err: "" });
  });

  it("-o yaml|json print the object for one name, a List otherwise; -o name", async () => {
    const one = JSON.parse((await run(["get", "pod", "web-1", "-o", "json"])).out) as { kind: string; apiVersion: string; metadata: { name: string } };
    assert.deepEqual([one.kind, one.apiVersion, one.metadata.name], ["Pod", "v1", "web-1"]);
    assert.equal(api.requests.at(-1)?.headers["accept"], "application/json");
    const list = JSON.parse((await run(["get", "pods", "-o", "json"])).out) as { kind: string; items: { kind: string }[] };
    assert.equal(list.kind, "List");
    assert.deepEqual(
      list.items.map((i) => i.kind),
      ["Pod"],
    );
    assert.match((await run(["get", "pods", "-o", "yaml"])).out, /^apiVersion: v1\nitems:\n {2}- apiVersion: v1\n {4}kind: Pod\n/);
    assert.equal((await run(["get", "pods", "-A", "-o", "name"])).out, "pod/web-1\npod/db\n");
    assert.equal((await run(["get", "pods", "-o", "xml"])).code, 1);
  });

  it("several types and all: blocks with type/name, empty kinds skipped", async () => {
    api.seed(kind("services"), { metadata: { name: "web" } });
    const r = await run(["get", "all"]);
    assert.equal(r.code, 0);
    assert.equal(r.out, "NAME        STATUS\npod/web-1   Running\n\nNAME          STATUS\nservice/web   \n");
    assert.equal((await run(["get", "po,svc", "-o", "name"])).out, "pod/web-1\nservice/web\n");
  });

  it("says when nothing is found", async () => {
    assert.deepEqual(await run(["get", "pods", "-n", "empty"]), { code: 0, out: "", err: "No resources found in empty namespace.\n" });
    assert.deepEqual(await run(["get", "nodes"]), { code: 0, out: "", err: "No resources found\n" });
  });

  it("unknown types ask discovery, then fail like kubectl", async () => {
    const r = await run(["get", "foos"]);
    assert.deepEqual(r, { code: 1, out: "", err: `error: the server doesn't have a resource type "foos"\n` });
    assert.ok(api.requests.some((q) => q.path === "/api/v1"));
    assert.equal((await run(["get"])).code, 1);
  });

  it("-w lists, then watches from the list's resourceVersion, printing rows without a header", async () => {
    api.watchEvents = [
      { type: "ADDED", object: (await import("./testing/fake-api.js")).fakeTable([{ metadata: { name: "web-2" }, status: { phase: "Pending" } }], "200") },
      { type: "BOOKMARK", object: { kind: "Pod", metadata: { resourceVersion: "201" } } },
      { type: "MODIFIED", object: (await import("./testing/fake-api.js")).fakeTable([{ metadata: { name: "web-2" }, status: { phase: "Running" } }], "202") },
    ];
    const r = await run(["get", "pods", "-w"]);
    assert.equal(r.code, 0);
    assert.equal(r.out, "NAME    STATUS\nweb-1   Running\nweb-2   Pending\nweb-2   Running\n");
    const w = api.requests.at(-1);
    assert.equal(w?.query.get("watch"), "true");
    assert.equal(w?.query.get("resourceVersion"), api.requests.at(-2)?.query.get("resourceVersion") ?? "102");
    assert.equal(w?.headers["accept"], "application/json;as=Table;v=v1;g=meta.k8s.io, application/json");
  });

  it("-w with a name uses fieldSelector metadata.name; 410 Expired ends quietly; -o name prints names", async () => {
    api.watchEvents = [
      { type: "MODIFIED", object: { kind: "Pod", apiVersion: "v1", metadata: { name: "web-1" } } },
      { type: "ERROR", object: status(410, "Expired", "too old resource version: 1 (2)") },
    ];
    const r = await run(["get", "pod", "web-1", "-w", "-o", "name"]);
    assert.deepEqual(r, { code: 0, out: "pod/web-1\npod/web-1\n", err: "" });
    const [list, watch] = api.requests.slice(-2);
    assert.equal(list?.query.get("fieldSelector"), "metadata.name=web-1");
    assert.equal(watch?.query.get("fieldSelector"), "metadata.name=web-1");
    assert.equal(watch?.query.get("resourceVersion"), "102");
  });
});

describe("delete", () => {
  beforeEach(() => {
    api.seed(PODS, { metadata: { name: "a", labels: { app: "web" } } });
    api.seed(PODS, { metadata: { name: "b", labels: { app: "web" } } });
    api.seed(PODS, { metadata: { name: "c" } });
  });

  it("deletes by name with Background propagation; NotFound fails with exit 1", async () => {
    const r = await run(["delete", "pod", "a", "nope"]);
    assert.equal(r.code, 1);
    assert.equal(r.out, `pod "a" deleted\n`);
    assert.equal(r.err, `Error from server (NotFound): pods "nope" not found\n`);
    assert.deepEqual(api.requests.find((q) => q.method === "DELETE")?.body, { propagationPolicy: "Background" });
    assert.equal(api.get(PODS, "default", "a"), undefined);
  });

  it("--force sends grace period 0 and warns; --grace-period; --ignore-not-found", async () => {
    const r = await run(["delete", "pod/a", "--force"]);
    assert.equal(r.out, `pod "a" force deleted\n`);
    assert.match(r.err, /^Warning: Immediate deletion/);
    assert.deepEqual(api.requests.at(-1)?.body, { propagationPolicy: "Background", gracePeriodSeconds: 0 });
    await run(["delete", "pod", "b", "--grace-period=5"]);
    assert.deepEqual(api.requests.at(-1)?.body, { propagationPolicy: "Background", gracePeriodSeconds: 5 });
    assert.deepEqual(await run(["delete", "pod", "zzz", "--ignore-not-found"]), { code: 0, out: "", err: "" });
  });

  it("-l lists then deletes each match; no match says so", async () => {
    const r = await run(["delete", "pods", "-l", "app=web"]);
    assert.deepEqual(r, { code: 0, out: `pod "a" deleted\npod "b" deleted\n`, err: "" });
    assert.ok(api.get(PODS, "default", "c"));
    assert.deepEqual(await run(["delete", "pods", "-l", "app=none"]), { code: 0, out: "", err: "No resources found in default namespace.\n" });
  });

  it("-f deletes what the manifests name; --wait returns once gone", async () => {
    writeFileSync(path.join(dir, "c.yaml"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: c\n");
    const r = await run(["delete", "-f", "c.yaml", "--wait"]);
    assert.deepEqual(r, { code: 0, out: `pod "c" deleted\n`, err: "" });
    assert.deepEqual(api.calls().slice(-2), ["DELETE /api/v1/namespaces/default/pods/c", "GET /api/v1/namespaces/default/pods/c"]);
  });

  it("a type without names or selector is an error", async () => {
    assert.deepEqual(await run(["delete", "pods"]), { code: 1, out: "", err: "error: resource(s) were provided, but no name was specified\n" });
  });
});

describe("version, api-resources, kubeconfig and auth", () => {
  it("version prints client and server versions", async () => {
    const r = await run(["version"]);
    assert.equal(r.code, 0);
    assert.match(r.out, /^Client Version: v\d+\.\d+\.\d+\nServer Version: v1\.32\.0-choreo\n$/);
    assert.equal((await run(["version", "--client"])).out.split("\n").length, 2);
  });

  it("api-resources lists discovery without subresources", async () => {
    const r = await run(["api-resources"]);
    assert.equal(r.code, 0);
    const lines = r.out.trimEnd().split("\n");
    assert.match(lines[0] ?? "", /^NAME\s+SHORTNAMES\s+APIVERSION\s+NAMESPACED\s+KIND$/);
    assert.ok(lines.some((l) => /^pods\s+po\s+v1\s+true\s+Pod$/.test(l)));
    assert.ok(lines.some((l) => /^daemonsets\s+ds\s+apps\/v1\s+true\s+DaemonSet$/.test(l)));
    assert.ok(lines.some((l) => /^configmaps\s+cm\s+v1\s+true\s+ConfigMap$/.test(l)));
    assert.ok(!r.out.includes("pods/status"));
    assert.equal(lines.length, KINDS.length + 1, "a header and one line per kind, no subresources");
    assert.match(
      (await run(["api-resources", "-o", "name", "--namespaced=false"])).out,
      /^namespaces\nnodes\ncertificatesigningrequests\.certificates\.k8s\.io\nclusterrolebindings\.rbac\.authorization\.k8s\.io\nclusterroles\.rbac\.authorization\.k8s\.io\n$/,
    );
  });

  it("reads .choreo/kubeconfig (token → Authorization, context namespace)", async () => {
    const work = path.join(dir, "proj");
    mkdirSync(path.join(work, ".choreo"), { recursive: true });
    writeFileSync(
      path.join(work, ".choreo", "kubeconfig"),
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: c",
        "clusters:",
        "- name: c",
        "  cluster:",
        `    server: ${api.url}`,
        "users:",
        "- name: u",
        "  user:",
        "    token: s3cret",
        "contexts:",
        "- name: c",
        "  context:",
        "    cluster: c",
        "    user: u",
        "    namespace: team",
        "",
      ].join("\n"),
    );
    let out = "";
    const code = await runCli(["get", "pods", "-o", "name"], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: () => true },
      env: {},
      cwd: work,
    });
    assert.equal(code, 0);
    const req = api.requests.at(-1);
    assert.equal(req?.headers["authorization"], "Bearer s3cret");
    assert.equal(req?.path, "/api/v1/namespaces/team/pods");
    assert.equal(out, "");
  });

  it("401 prints kubectl's login message; a refused connection says so", async () => {
    api.override = () => ({ code: 401, body: status(401, "Unauthorized", "Unauthorized") });
    assert.deepEqual(await run(["get", "pods"]), { code: 1, out: "", err: "error: You must be logged in to the server (Unauthorized)\n" });
    let err = "";
    const code = await runCli(["get", "pods", "--server", "http://127.0.0.1:1"], {
      stdout: { write: () => true },
      stderr: { write: (s: string) => (err += s) },
      env: {},
      cwd: dir,
    });
    assert.equal(code, 1);
    assert.equal(err, "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n");
  });

  it("no configuration at all is an error", async () => {
    const r = await run(["get", "pods"], { server: false, env: {} });
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: no server found/);
  });
});
