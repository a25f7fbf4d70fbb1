// test-tier: servers
// Real kubectl against the gateway's OpenAPI and discovery, on the in-memory
// handlers: explain, apply --validate=strict, edit (KUBE_EDITOR scripted),
// api-resources, get all. kubectl 1.32 from PATH; kubectl 1.20 too, where
// `npm test` unpacks it or where CHOREO_KUBECTL_120 names it.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { KINDS } from "@choreo/kit";
import { REVIEW_GROUPS } from "../reviews/index.js";
import { startTestGateway, type TestGateway } from "../testing/harness.js";

const exec = promisify(execFile);
const works = (bin: string) =>
  exec(bin, ["version", "--client"]).then(
    () => true,
    () => false,
  );
const hasKubectl = await works("kubectl");
// Where `npm test` (scripts/ensure-deps.sh --test) unpacks it.
const KUBECTL_120 = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
const has120 = KUBECTL_120 !== "" && (await works(KUBECTL_120));

const POD = (extra = "") => `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
${extra}`;

const SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
    targetPort: 8080
`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe("kubectl explain, validate, edit, api-resources, get all", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let t: TestGateway;
  let kubeconfig: string;

  const run = async (bin: string, args: string[], env: Record<string, string> = {}): Promise<Run> => {
    try {
      const r = await exec(
        bin,
        ["--kubeconfig", kubeconfig, "--cache-dir", path.join(dir, `cache-${path.basename(path.dirname(bin)) || "path"}`), "--request-timeout=8s", ...args],
        {
          timeout: 20_000,
          env: { ...process.env, ...env },
        },
      );
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? String(err) };
    }
  };
  const kubectl = (...args: string[]) => run("kubectl", args);

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-openapi-kubectl-"));
    t = await startTestGateway();
    t.handlers.seed({ apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } });
    kubeconfig = path.join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters:
- name: choreo
  cluster: {server: "${t.base}"}
users:
- name: admin
  user: {}
contexts:
- name: choreo
  context: {cluster: choreo, user: admin, namespace: default}
current-context: choreo
`,
    );
    writeFileSync(path.join(dir, "pod.yaml"), POD());
    writeFileSync(path.join(dir, "bad-pod.yaml"), POD("    bogusField: 1\n"));
    writeFileSync(path.join(dir, "service.yaml"), SERVICE);
    // The scripted editor: adds a label under metadata.labels of the file kubectl hands it.
    const editor = path.join(dir, "editor.sh");
    writeFileSync(editor, `#!/bin/sh\nsed -i 's/^    app: web$/    app: web\\n    edited: "yes"/' "$1"\n`);
    chmodSync(editor, 0o755);
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("explain prints a field's description and its fields (OpenAPI v3)", async () => {
    const r = await kubectl("explain", "pod.spec.containers.livenessProbe");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /FIELD: livenessProbe <Probe>/);
    assert.match(r.stdout, /Periodic probe of container liveness/);
    assert.match(r.stdout, /periodSeconds\s+<integer>/);
    assert.match(r.stdout, /How often \(in seconds\) to perform the probe/);
    assert.match(r.stdout, /httpGet\s+<HTTPGetAction>/);
    const kind = await kubectl("explain", "daemonsets");
    assert.equal(kind.code, 0, kind.stderr);
    assert.match(kind.stdout, /KIND:\s+DaemonSet/);
    assert.match(kind.stdout, /GROUP:\s+apps/);
  });

  it("explain of an unknown resource or field fails as Kubernetes does", async () => {
    const r = await kubectl("explain", "statefulsets");
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the server doesn't have a resource type "statefulsets"/);
    const f = await kubectl("explain", "pod.spec.nope");
    assert.notEqual(f.code, 0);
    assert.match(f.stderr, /field "nope" does not exist/);
  });

  it("apply --validate=strict refuses an unknown field naming it and accepts a clean manifest", async () => {
    const bad = await kubectl("apply", "--validate=strict", "-f", path.join(dir, "bad-pod.yaml"));
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /unknown field "spec\.containers\[0\]\.bogusField"/);
    assert.equal((await kubectl("get", "pod", "web")).code, 1, "nothing was created");
    const good = await kubectl("apply", "--validate=strict", "-f", path.join(dir, "pod.yaml"));
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /pod\/web created/);
  });

  it("edit with a scripted KUBE_EDITOR updates the object", async () => {
    const r = await run("kubectl", ["edit", "pod", "web"], { KUBE_EDITOR: path.join(dir, "editor.sh") });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /pod\/web edited/);
    const labels = await kubectl("get", "pod", "web", "-o", "jsonpath={.metadata.labels.edited}");
    assert.equal(labels.stdout, "yes");
  });

  it("api-resources lists every kind; get all shows pods and services (the `all` category)", async () => {
    const r = await kubectl("api-resources", "--no-headers");
    assert.equal(r.code, 0, r.stderr);
    const names = r.stdout
      .trim()
      .split("\n")
      .map((l) => l.split(/\s+/)[0]);
    // Every stored kind, the read-only metrics.k8s.io resources (NodeMetrics, PodMetrics) kubectl top reads, and the create-only reviews.
    const reviews = Object.values(REVIEW_GROUPS).flatMap((rs) => rs.map((x) => x.resource));
    assert.deepEqual([...names].sort(), [...KINDS.map((k) => k.resource), "nodes", "pods", ...reviews].sort());
    assert.match(r.stdout, /^selfsubjectaccessreviews\s+authorization\.k8s\.io\/v1\s+false\s+SelfSubjectAccessReview$/m);
    assert.match(r.stdout, /^nodes\s+metrics\.k8s\.io\/v1beta1\s+false\s+NodeMetrics$/m);
    assert.match(r.stdout, /^pods\s+metrics\.k8s\.io\/v1beta1\s+true\s+PodMetrics$/m);
    assert.equal((await kubectl("apply", "-f", path.join(dir, "service.yaml"))).code, 0);
    const all = await kubectl("get", "all");
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /^pod\/web\s/m);
    assert.match(all.stdout, /^service\/web\s/m);
    const cats = await kubectl("api-resources", "--categories=all", "-o", "name");
    const inAll = KINDS.filter((k) => k.categories.includes("all")).map((k) => (k.group ? `${k.resource}.${k.group}` : k.resource));
    assert.ok(inAll.includes("pods") && inAll.includes("services") && inAll.includes("daemonsets.apps"));
    assert.deepEqual(cats.stdout.trim().split("\n").sort(), inAll.sort());
  });

  describe("kubectl 1.20 (OpenAPI v2 in gnostic protobuf, legacy discovery)", { skip: has120 ? false : `no kubectl 1.20 at ${KUBECTL_120}` }, () => {
    const old = (...args: string[]) => run(KUBECTL_120, args);

    it("explain prints the description and fields", async () => {
      const r = await old("explain", "pod.spec.containers.livenessProbe");
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /RESOURCE: livenessProbe <Object>/);
      assert.match(r.stdout, /Periodic probe of container liveness/);
      assert.match(r.stdout, /periodSeconds\s+<integer>/);
    });

    it("apply validates client-side: an unknown field is named, a clean manifest passes", async () => {
      const bad = await old("apply", "-f", path.join(dir, "bad-pod.yaml"));
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /unknown field "bogusField" in io\.k8s\.api\.core\.v1\.Container/);
      const good = await old("apply", "-f", path.join(dir, "pod.yaml"));
      assert.equal(good.code, 0, good.stderr);
    });
  });
});
