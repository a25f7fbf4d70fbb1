// test-tier: servers
// kubectl 1.32 against a real control plane (api, nats-server, redis-server) on
// the Kubernetes wire: the typed generator commands in protobuf, run, expose,
// explain, edit, server-side apply (twice, then a conflicting manager), field
// validation, and get -o yaml round trips.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const RC = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 2
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: busybox
        ports:
        - containerPort: 8080
`;

describe("kubectl 1.32 on the Kubernetes wire", () => {
  let c: TestCluster;
  let kc: string;
  const k = (...args: string[]) => run("kubectl", args, kc);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await k(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (...args: string[]): Promise<Record<string, any>> => JSON.parse(await ok(...args, "-o", "json")); // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON, read by path in assertions
  before(async () => {
    c = await startCluster();
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("the typed generator commands send protobuf, and what they create reads back in JSON and YAML", async () => {
    const ns = await k("create", "namespace", "wire", "-v=8");
    assert.equal(ns.code, 0, ns.stderr);
    assert.match(ns.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/, "kubectl sent protobuf");
    assert.match(ns.stdout, /namespace\/wire created/);
    assert.equal((await json("get", "namespace", "wire")).status.phase, "Active");

    await ok("create", "configmap", "game", "-n", "wire", "--from-literal=lives=3", "--from-literal=mode=dark");
    assert.deepEqual((await json("get", "configmap", "game", "-n", "wire")).data, { lives: "3", mode: "dark" });

    await ok("create", "service", "clusterip", "db", "-n", "wire", "--tcp=5432:5432");
    const svc = await json("get", "service", "db", "-n", "wire");
    assert.equal(svc.spec.ports[0].port, 5432);
    assert.match(svc.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/, "a ClusterIP was allocated");
    assert.deepEqual(svc.status, { loadBalancer: {} }, "status written as Kubernetes writes it");

    await ok("create", "job", "once", "-n", "wire", "--image=busybox", "--", "true");
    const job = await json("get", "job", "once", "-n", "wire");
    assert.deepEqual(job.spec.template.spec.containers[0].command, ["true"]);

    // -o yaml round trips: what the server wrote goes back through replace unchanged in meaning.
    const yaml = await ok("get", "configmap", "game", "-n", "wire", "-o", "yaml");
    assert.match(yaml, /lives: "3"/);
    const back = path.join(c.dir, "game.yaml");
    writeFileSync(back, yaml);
    assert.match(await ok("replace", "-f", back), /configmap\/game replaced/);
    assert.deepEqual((await json("get", "configmap", "game", "-n", "wire")).data, { lives: "3", mode: "dark" });
  });

  it("run makes a pod, expose rc makes its service (status.loadBalancer accepted), explain describes a field, edit updates", async () => {
    await ok("run", "shell", "--image=busybox", "--restart=Never", "--", "sleep", "3600");
    const pod = await json("get", "pod", "shell");
    assert.equal(pod.spec.restartPolicy, "Never");
    assert.equal(pod.status.phase, "Pending");

    const file = path.join(c.dir, "rc.yaml");
    writeFileSync(file, RC);
    await ok("apply", "-f", file);
    const exposed = await k("expose", "rc", "web", "--port=81", "--target-port=8080");
    assert.equal(exposed.code, 0, exposed.stderr);
    const svc = await json("get", "service", "web");
    assert.deepEqual(svc.spec.selector, { app: "web" });
    assert.equal(svc.spec.ports[0].port, 81);

    const explained = await ok("explain", "pod.spec.containers.livenessProbe");
    assert.match(explained, /FIELD:\s+livenessProbe/);
    assert.match(explained, /periodSeconds/);

    const editor = path.join(c.dir, "editor.sh");
    writeFileSync(editor, `#!/bin/sh\nsed -i 's/^  replicas: 2$/  replicas: 4/' "$1"\n`);
    chmodSync(editor, 0o755);
    const edited = await run("kubectl", ["edit", "rc", "web"], kc, { env: { KUBE_EDITOR: editor } });
    assert.equal(edited.code, 0, edited.stderr);
    assert.match(edited.stdout, /replicationcontroller\/web edited/);
    assert.equal((await json("get", "rc", "web")).spec.replicas, 4);
  });

  it("server-side apply: creates, a second apply is a no-op, a field another manager set conflicts (409 naming it), --force-conflicts takes it", async () => {
    const file = path.join(c.dir, "ssa.yaml");
    writeFileSync(file, RC.replace("name: web", "name: ssa").replace(/app: web/g, "app: ssa"));
    assert.match(await ok("apply", "--server-side", "-f", file), /replicationcontroller\/ssa serverside-applied/);
    const first = await json("get", "rc", "ssa");
    await ok("apply", "--server-side", "-f", file);
    assert.equal((await json("get", "rc", "ssa")).metadata.resourceVersion, first.metadata.resourceVersion, "the same apply writes nothing");

    await ok("scale", "rc", "ssa", "--replicas=5");
    const conflict = await k("apply", "--server-side", "-f", file);
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /conflict with "kubectl"/);
    assert.match(conflict.stderr, /\.spec\.replicas/);
    assert.equal((await json("get", "rc", "ssa")).spec.replicas, 5, "a conflict writes nothing");

    await ok("apply", "--server-side", "--force-conflicts", "-f", file);
    const forced = await json("get", "rc", "ssa", "--show-managed-fields");
    assert.equal(forced.spec.replicas, 2);
    const managers = (forced.metadata.managedFields as { manager: string; operation: string }[]).map((m) => `${m.manager}/${m.operation}`);
    assert.ok(managers.includes("kubectl/Apply"), managers.join(", "));
  });

  it("field validation: an unknown field warns (Warn) and is dropped; Strict refuses it naming the path and writes nothing", async () => {
    const manifest = (name: string): string => {
      const file = path.join(c.dir, `${name}.yaml`);
      writeFileSync(
        file,
        RC.replace("name: web", `name: ${name}`)
          .replace(/app: web/g, `app: ${name}`)
          .replace("  replicas: 2\n", "  replicas: 2\n  bogus: 1\n"),
      );
      return file;
    };
    const warned = await k("apply", "--validate=warn", "-f", manifest("odd"));
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stderr, /Warning: unknown field "spec\.bogus"/);
    assert.equal((await json("get", "rc", "odd")).spec.bogus, undefined, "the unknown field was dropped");

    const strict = await k("create", "--validate=strict", "-f", manifest("strict"));
    assert.notEqual(strict.code, 0);
    assert.match(strict.stderr, /unknown field "spec\.bogus"/);
    assert.match((await k("get", "rc", "strict")).stderr, /NotFound|not found/, "nothing was written");
  });

  it("drain cordons the node and evicts its pods through pods/eviction (protobuf), the pods elsewhere untouched", async () => {
    const file = path.join(c.dir, "drain.yaml");
    const podOn = (name: string, node: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  nodeName: ${node}\n  containers:\n  - name: c\n    image: busybox\n`;
    writeFileSync(
      file,
      [
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n-drain\n",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n-keep\n",
        podOn("on-drained", "n-drain"),
        podOn("on-kept", "n-keep"),
      ].join("---\n"),
    );
    await ok("apply", "-f", file);
    const drained = await k("drain", "n-drain", "--force", "--grace-period=0", "--timeout=60s", "-v=8");
    assert.equal(drained.code, 0, drained.stderr.slice(-3000));
    assert.match(drained.stderr, /POST https:\/\/[^ ]+\/api\/v1\/namespaces\/default\/pods\/on-drained\/eviction/);
    assert.match(
      drained.stderr,
      /Content-Type: application\/vnd\.kubernetes\.protobuf/,
      "the eviction (drain's only body besides the cordon's JSON patch) in protobuf",
    );
    assert.match(drained.stdout, /pod\/on-drained evicted/);
    assert.match(drained.stdout, /node\/n-drain drained/);
    assert.equal((await json("get", "node", "n-drain")).spec.unschedulable, true, "cordoned");
    assert.match((await k("get", "pod", "on-drained")).stderr, /NotFound|not found/);
    assert.equal((await json("get", "pod", "on-kept")).spec.nodeName, "n-keep");
  });
});
