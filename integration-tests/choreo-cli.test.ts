// test-tier: servers
// The same path as kubectl, with choreo's own CLI against a real api:
// apply (create, then configure), get (table, -o yaml/json/name, -l, -A),
// delete by name and by label, version, api-resources.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCluster, ROOT, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");

describe("choreo CLI against choreo", () => {
  let c: TestCluster;
  let kc: string;
  const choreo = (...args: string[]) => run(process.execPath, [CHOREO, ...args], kc, { cwd: c.dir });
  before(async () => {
    c = await startCluster();
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("applies a multi-document manifest, then configures it on the second apply", async () => {
    const file = path.join(c.dir, "app.yaml");
    const doc = (replicas: number) => `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: ${replicas}
  selector: {app: web}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`;
    writeFileSync(file, doc(2));
    const first = await choreo("apply", "-f", file);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /replicationcontroller\/web created/);
    assert.match(first.stdout, /service\/web created/);
    writeFileSync(file, doc(4));
    const second = await choreo("apply", "-f", file);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /replicationcontroller\/web configured/);
    assert.match(second.stdout, /service\/web unchanged/);
    const json = JSON.parse((await choreo("get", "rc", "web", "-o", "json")).stdout) as { spec: { replicas: number } };
    assert.equal(json.spec.replicas, 4);
  });

  it("gets tables, YAML, names, by label and across namespaces", async () => {
    const table = await choreo("get", "svc");
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE/m);
    assert.match(table.stdout, /^web\s+ClusterIP\s+10\.96\.\d+\.\d+\s+<none>\s+80\/TCP/m);
    const yaml = await choreo("get", "svc", "web", "-o", "yaml");
    assert.match(yaml.stdout, /kind: Service/);
    assert.match(yaml.stdout, /clusterIP: 10\.96\./);
    assert.equal(
      (await choreo("get", "rc,svc", "-l", "app=web", "-o", "name")).stdout.trim().split("\n").sort().join(" "),
      "replicationcontroller/web service/web",
    );
    const all = await choreo("get", "namespaces");
    assert.match(all.stdout, /kube-system\s+Active/);
    const allNs = await choreo("get", "rc", "-A");
    assert.match(allNs.stdout, /^NAMESPACE\s+NAME/m);
    const missing = await choreo("get", "pod", "nope");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Error from server \(NotFound\): pods "nope" not found/);
  });

  it("deletes by name and by label, and shows version and api-resources", async () => {
    const byName = await choreo("delete", "svc", "web");
    assert.equal(byName.code, 0, byName.stderr);
    assert.match(byName.stdout, /service "web" deleted/);
    const byLabel = await choreo("delete", "rc", "-l", "app=web");
    assert.equal(byLabel.code, 0, byLabel.stderr);
    assert.match(byLabel.stdout, /replicationcontroller "web" deleted/);
    assert.equal((await choreo("get", "rc", "-o", "name")).stdout.trim(), "");
    const version = await choreo("version");
    assert.match(version.stdout, /Server Version: v1\.32/);
    const resources = await choreo("api-resources");
    assert.match(resources.stdout, /^pods\s+po\s+v1\s+true\s+Pod/m);
    assert.match(resources.stdout, /^daemonsets\s+ds\s+apps\/v1\s+true\s+DaemonSet/m);
  });
});
