// test-tier: servers
// kubectl from Debian's package against the gateway: get, create -f,
// apply -f twice (create, then patch), label, scale rc, get -o yaml, get -w,
// delete, and a missing token.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, startWatch, writeKubeconfig } from "./support/kubectl.js";

const RC = `apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  selector:
    app: nginx
  template:
    metadata:
      name: nginx
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
        ports:
        - containerPort: 80
`;

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
  - name: nginx
    image: nginx:1.14.2
    ports:
    - containerPort: 80
`;

// "AAEC/w==" is the bytes 0 1 2 255: binaryData is base64 in JSON and YAML.
const CONFIG_MAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: game
data:
  game.properties: |
    lives=3
    level=1
  ui.mode: dark
binaryData:
  logo.bin: AAEC/w==
`;

describe("kubectl against choreo", () => {
  let c: TestCluster;
  let kc: string;
  const k = (...args: string[]) => run("kubectl", args, kc);
  before(async () => {
    c = await startCluster();
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("creates a pod from the Kubernetes docs and reads it back as table and YAML", async () => {
    const file = path.join(c.dir, "pod.yaml");
    writeFileSync(file, POD);
    const created = await k("create", "-f", file);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /pod\/nginx created/);
    const got = await k("get", "pods");
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE/m);
    assert.match(got.stdout, /^nginx\s+0\/1\s+Pending\s+0\s+\d+s/m);
    const yaml = await k("get", "pod", "nginx", "-o", "yaml");
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.match(yaml.stdout, /image: nginx:1.14.2/);
    assert.match(yaml.stdout, /containerPort: 80/);
    assert.match(yaml.stdout, /resourceVersion: "\d+"/);
  });

  it("applies twice (create, then patch), labels, scales and deletes a replication controller", async () => {
    const file = path.join(c.dir, "rc.yaml");
    writeFileSync(file, RC);
    const first = await k("apply", "-f", file);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /replicationcontroller\/nginx created/);
    writeFileSync(file, RC.replace("replicas: 3", "replicas: 2").replace("image: nginx\n", "image: nginx:1.25\n"));
    const second = await k("apply", "-f", file);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /replicationcontroller\/nginx configured/);
    const json = JSON.parse((await k("get", "rc", "nginx", "-o", "json")).stdout) as {
      spec: { replicas: number; template: { spec: { containers: { image: string }[] } } };
    };
    assert.equal(json.spec.replicas, 2);
    assert.equal(json.spec.template.spec.containers[0]?.image, "nginx:1.25");
    const unchanged = await k("apply", "-f", file);
    assert.match(unchanged.stdout, /replicationcontroller\/nginx (unchanged|configured)/);

    const label = await k("label", "rc", "nginx", "tier=web");
    assert.equal(label.code, 0, label.stderr);
    assert.match((await k("get", "rc", "-l", "tier=web", "-o", "name")).stdout, /replicationcontroller\/nginx/);
    const scale = await k("scale", "rc", "nginx", "--replicas=5");
    assert.equal(scale.code, 0, scale.stderr);
    assert.match(scale.stdout, /replicationcontroller\/nginx scaled/);
    const desired = await k("get", "rc", "nginx", "-o", "jsonpath={.spec.replicas}");
    assert.equal(desired.stdout.trim(), "5");
    const del = await k("delete", "rc", "nginx");
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stdout, /replicationcontroller "nginx" deleted/);
    const gone = await k("get", "rc", "nginx");
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /NotFound|not found/);
  });

  it("streams changes with get -w", async () => {
    const w = startWatch("kubectl", ["get", "pods", "-w"], kc);
    try {
      await waitFor(() => /nginx/.test(w.output()), { timeoutMs: 20_000, message: "initial list" });
      const file = path.join(c.dir, "watched.yaml");
      writeFileSync(file, POD.replace("name: nginx\nspec", "name: watched\nspec"));
      assert.equal((await k("create", "-f", file)).code, 0);
      await waitFor(() => /^watched\s+0\/1\s+Pending/m.test(w.output()), { timeoutMs: 20_000, message: "watched pod in the stream" });
      assert.equal((await k("label", "pod", "watched", "seen=yes")).code, 0);
      await waitFor(() => (w.output().match(/^watched\s/gm) ?? []).length >= 2, { timeoutMs: 20_000, message: "the label change in the stream" });
    } finally {
      await w.stop();
    }
  });

  // apply -f, not `kubectl create configmap`: kubectl 1.32 sends that one as protobuf, which the gateway does not speak yet.
  it("applies, lists, round-trips, describes, validates, freezes and deletes a configmap", async () => {
    const file = path.join(c.dir, "cm.yaml");
    writeFileSync(file, CONFIG_MAP);
    const applied = await k("apply", "-f", file);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /configmap\/game created/);
    const got = await k("get", "cm");
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^NAME\s+DATA\s+AGE$/m);
    assert.match(got.stdout, /^game\s+3\s+\d+s$/m);
    const yaml = await k("get", "cm", "game", "-o", "yaml");
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.match(yaml.stdout, /^ {2}game\.properties: \|\n {4}lives=3\n {4}level=1$/m);
    assert.match(yaml.stdout, /^ {2}ui\.mode: dark$/m);
    assert.match(yaml.stdout, /^binaryData:\n {2}logo\.bin: AAEC\/w==$/m);
    const described = await k("describe", "cm", "game");
    assert.equal(described.code, 0, described.stderr);
    assert.match(described.stdout, /^Name:\s+game$/m);
    assert.match(described.stdout, /^ui\.mode:\n----\ndark$/m);
    assert.match(described.stdout, /^BinaryData\n====\nlogo\.bin: 4 bytes$/m);

    writeFileSync(file, CONFIG_MAP.replace("name: game", "name: bad").replace("ui.mode: dark", "'ui mode': dark"));
    const bad = await k("apply", "-f", file);
    assert.notEqual(bad.code, 0);
    assert.match(
      bad.stderr,
      /ConfigMap "bad" is invalid: data\[ui mode\]: Invalid value: "ui mode": a valid config key must consist of alphanumeric characters/,
    );

    writeFileSync(file, `${CONFIG_MAP.replace("name: game", "name: frozen")}immutable: true\n`);
    assert.equal((await k("apply", "-f", file)).code, 0);
    writeFileSync(file, `${CONFIG_MAP.replace("name: game", "name: frozen").replace("ui.mode: dark", "ui.mode: light")}immutable: true\n`);
    const frozen = await k("apply", "-f", file);
    assert.notEqual(frozen.code, 0);
    assert.match(frozen.stderr, /ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set/);

    // A projected serviceAccountToken source is taken: the node agent writes the pod's token there
    // (integration-tests/serviceaccounts.test.ts runs clients in pods with it).
    writeFileSync(
      file,
      `${POD}  volumes:\n  - name: tok\n    projected:\n      sources:\n      - serviceAccountToken:\n          path: token\n`.replace(
        "name: nginx\nspec",
        "name: uses-token\nspec",
      ),
    );
    const pod = await k("apply", "-f", file);
    assert.equal(pod.code, 0, pod.stderr);
    assert.match(pod.stdout, /pod\/uses-token created/);
    assert.equal((await k("delete", "pod", "uses-token", "--wait=false")).code, 0);

    const del = await k("delete", "cm", "game");
    assert.equal(del.code, 0, del.stderr);
    assert.match(del.stdout, /configmap "game" deleted/);
    const gone = await k("get", "cm", "game");
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /NotFound|not found/);
  });

  it("refuses a request without a valid token", async () => {
    const bad = writeKubeconfig(c).replace(/$/, "");
    const file = path.join(c.dir, "bad-kubeconfig");
    const { readFileSync } = await import("node:fs");
    writeFileSync(file, readFileSync(bad, "utf8").replace(c.token, "wrong-token"));
    const r = await run("kubectl", ["get", "pods"], file);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Unauthorized|must be logged in/);
  });
});
