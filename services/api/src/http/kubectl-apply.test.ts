// test-tier: servers
// Real kubectl (1.32) against the gateway over the real registry on the
// in-memory storage: server-side apply (create, no-op, conflict after a
// scale, --force-conflicts), managedFields, client-side apply, and
// fieldValidation (Warn's warnings, Strict's 400).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { silentLogger } from "@choreo/kit/log";
import { startMemoryRegistry } from "../testing/memory-registry.js";
import { createGateway, type Gateway } from "./gateway.js";
import { kubectlInstalled, kubectlRunner, writeKubeconfig } from "./testing/kubectl.js";

const hasKubectl = await kubectlInstalled();

const RC = (replicas: number, extra = ""): string => `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: ${replicas}
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx
        ports:
        - containerPort: 80
${extra}`;

describe("kubectl apply --server-side and fieldValidation", { skip: hasKubectl ? false : "kubectl not on PATH" }, () => {
  let dir: string;
  let gateway: Gateway;
  let kubeconfig: string;
  let base: string;

  const kubectl = (...args: string[]) => kubectlRunner(dir, kubeconfig)(...args);
  const file = (name: string, text: string): string => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const rv = async (): Promise<string> => (await kubectl("get", "rc", "web", "-o", "jsonpath={.metadata.resourceVersion}")).stdout;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "choreo-kubectl-apply-"));
    const { registry } = await startMemoryRegistry();
    gateway = createGateway({ handlers: registry, log: silentLogger() });
    const { httpPort } = await gateway.listen({ host: "127.0.0.1", httpPort: 0 });
    base = `http://127.0.0.1:${httpPort}`;
    kubeconfig = writeKubeconfig(dir, { server: `http://127.0.0.1:${httpPort}` });
  });
  after(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates with --server-side, and applying again is a no-op (same resourceVersion)", async () => {
    const rc = file("rc.yaml", RC(2));
    const created = await kubectl("apply", "--server-side", "-f", rc);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /replicationcontroller\/web serverside-applied/);
    const first = await rv();
    const again = await kubectl("apply", "--server-side", "-f", rc);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await rv(), first);

    const yaml = await kubectl("get", "rc", "web", "-o", "yaml", "--show-managed-fields");
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.match(yaml.stdout, /managedFields:\n {2}- apiVersion: v1\n {4}fieldsType: FieldsV1\n {4}fieldsV1:\n/);
    assert.match(yaml.stdout, /manager: kubectl\n {4}operation: Apply/);
    assert.match(yaml.stdout, /f:replicas: \{\}/);
    const plain = await kubectl("get", "rc", "web", "-o", "yaml");
    assert.doesNotMatch(plain.stdout, /managedFields/, "kubectl hides them without --show-managed-fields");
  });

  it("conflicts after kubectl scale, naming the manager and .spec.replicas; --force-conflicts wins", async () => {
    const scaled = await kubectl("scale", "rc", "web", "--replicas=4");
    assert.equal(scaled.code, 0, scaled.stderr);
    const before = await rv();
    const conflict = await kubectl("apply", "--server-side", "-f", path.join(dir, "rc.yaml"));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /Apply failed with 1 conflict: conflict with "kubectl" using v1: \.spec\.replicas/);
    assert.equal(await rv(), before, "nothing written");

    const forced = await kubectl("apply", "--server-side", "--force-conflicts", "-f", path.join(dir, "rc.yaml"));
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal((await kubectl("get", "rc", "web", "-o", "jsonpath={.spec.replicas}")).stdout, "2");
    const managers = await kubectl("get", "rc", "web", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}");
    assert.equal(managers.stdout, "kubectl");
  });

  it("--dry-run=server: apply (patch and create), server-side apply, create and delete answer as if done and store nothing", async () => {
    const before = await rv();
    const changed = file("rc-dry.yaml", RC(9));
    for (const args of [
      ["apply", "--dry-run=server", "-f", changed],
      ["apply", "--server-side", "--dry-run=server", "-f", changed],
    ]) {
      const r = await kubectl(...args);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /replicationcontroller\/web (configured|serverside-applied) \(server dry run\)/);
    }
    const deleted = await kubectl("delete", "rc", "web", "--dry-run=server");
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /replicationcontroller "web" deleted \(server dry run\)/);
    assert.equal(await rv(), before, "the RC is as it was");
    assert.notEqual((await kubectl("get", "rc", "web", "-o", "jsonpath={.spec.replicas}")).stdout, "9");

    const created = await kubectl("create", "--dry-run=server", "-f", file("rc-new.yaml", RC(1).replace("name: web", "name: dry-new")));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /replicationcontroller\/dry-new created \(server dry run\)/);
    const missing = await kubectl("get", "rc", "dry-new");
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /NotFound/);
  });

  it("removes a field the applier stops applying", async () => {
    const withMin = file("rc-min.yaml", RC(2).replace("spec:\n  replicas: 2", "spec:\n  minReadySeconds: 7\n  replicas: 2"));
    assert.equal((await kubectl("apply", "--server-side", "-f", withMin)).code, 0);
    assert.equal((await kubectl("get", "rc", "web", "-o", "jsonpath={.spec.minReadySeconds}")).stdout, "7");
    assert.equal((await kubectl("apply", "--server-side", "-f", path.join(dir, "rc.yaml"))).code, 0);
    assert.equal((await kubectl("get", "rc", "web", "-o", "jsonpath={.spec.minReadySeconds}")).stdout, "");
  });

  it("answers 201 to an apply that creates, 200 after; a conflict is a Status with causes", async () => {
    const url = `${base}/api/v1/namespaces/default/configmaps/raw?fieldManager=raw`;
    const send = (data: string): Promise<Response> =>
      fetch(url, {
        method: "PATCH",
        headers: { "Content-Type": "application/apply-patch+yaml" },
        body: `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: raw}\ndata: {a: "${data}"}\n`,
      });
    assert.equal((await send("1")).status, 201);
    assert.equal((await send("1")).status, 200);
    const other = await fetch(url.replace("fieldManager=raw", "fieldManager=other"), {
      method: "PATCH",
      headers: { "Content-Type": "application/apply-patch+yaml" },
      body: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: raw}\ndata: {a: "2"}\n',
    });
    assert.equal(other.status, 409);
    const status = (await other.json()) as Record<string, unknown>;
    assert.equal(status["reason"], "Conflict");
    assert.equal(status["message"], 'Apply failed with 1 conflict: conflict with "raw": .data.a');
    assert.deepEqual((status["details"] as Record<string, unknown>)["causes"], [
      { reason: "FieldManagerConflict", message: 'conflict with "raw"', field: ".data.a" },
    ]);
  });

  it("client-side apply still works and records its manager", async () => {
    const rc = file("csa.yaml", RC(1).replace("name: web", "name: csa"));
    const created = await kubectl("apply", "-f", rc);
    assert.equal(created.code, 0, created.stderr);
    const again = await kubectl("apply", "-f", rc.replace("csa.yaml", "csa.yaml"));
    assert.equal(again.code, 0, again.stderr);
    const managers = await kubectl("get", "rc", "csa", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}");
    assert.equal(managers.stdout, "kubectl-client-side-apply");
  });

  it("Warn (kubectl --validate=warn): prints the unknown field, creates without it", async () => {
    const bad = file("warn.yaml", RC(1, "  foo: 1\n").replace("name: web", "name: warned"));
    const r = await kubectl("create", "--validate=warn", "-f", bad);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Warning: unknown field "spec.foo"/);
    const got = await kubectl("get", "rc", "warned", "-o", "json");
    assert.equal((JSON.parse(got.stdout) as { spec: Record<string, unknown> }).spec["foo"], undefined);
  });

  it("Strict (kubectl --validate=strict): the server's 400 lists every offending path", async () => {
    const bad = file("strict.yaml", RC(1, "  foo: 1\n  bar: 2\n").replace("name: web", "name: strict"));
    const r = await kubectl("create", "--validate=strict", "-f", bad);
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /strict decoding error: unknown field "spec.bar", unknown field "spec.foo"|strict decoding error: unknown field "spec.foo", unknown field "spec.bar"/,
    );
    const ssa = await kubectl("apply", "--server-side", "--validate=strict", "-f", bad);
    assert.notEqual(ssa.code, 0);
    assert.match(ssa.stderr, /unknown field "spec.foo"/);
    assert.notEqual((await kubectl("get", "rc", "strict")).code, 0, "nothing created");
  });
});
