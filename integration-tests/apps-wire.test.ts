// test-tier: servers
// kubectl 1.32 against the api alone (no controllers: the api stores what it is
// told) for apps/v1 ReplicaSet and Deployment: the typed `create deployment` in
// protobuf, get -o wide, scale, set image, strategic patch, client-side and
// server-side apply, explain, and Kubernetes' 422s. Then kubectl 1.20 on the
// new kinds: Deployment, ReplicaSet, CronJob (batch/v1) and Secret.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const RS = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: cache
spec:
  replicas: 2
  selector:
    matchLabels:
      app: cache
    matchExpressions:
    - {key: tier, operator: In, values: [backend]}
  template:
    metadata:
      labels:
        app: cache
        tier: backend
    spec:
      containers:
      - name: redis
        image: redis:7
`;

const KUBECTL_120 = process.env["CHOREO_KUBECTL_120"] ?? "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";

const deploy = (name: string, replicas: number, templateApp = name): string => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: ${name}
  template:
    metadata:
      labels:
        app: ${templateApp}
    spec:
      containers:
      - name: api
        image: busybox
        ports:
        - containerPort: 8080
`;

describe("kubectl 1.32: ReplicaSets and Deployments on the Kubernetes wire", () => {
  let c: TestCluster;
  let kc: string;
  const k = (...args: string[]) => run("kubectl", args, kc);
  const ok = async (...args: string[]): Promise<string> => {
    const r = await k(...args);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (...args: string[]): Promise<Record<string, any>> => JSON.parse(await ok(...args, "-o", "json")); // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON, read by path in assertions
  const file = (name: string, text: string): string => {
    const f = path.join(c.dir, name);
    writeFileSync(f, text);
    return f;
  };
  before(async () => {
    c = await startCluster();
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  it("create deployment sends protobuf; the api defaults it as Kubernetes does; get deploy,rs -o wide prints kubectl's columns", async () => {
    const created = await k("create", "deployment", "web", "--image=nginx", "--replicas=3", "-v=8");
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /deployment\.apps\/web created/);
    assert.match(created.stderr, /POST https:\/\/127\.0\.0\.1:\d+\/apis\/apps\/v1\/namespaces\/default\/deployments/);
    assert.match(created.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/, "kubectl sent protobuf");
    const d = await json("get", "deploy", "web");
    assert.equal(d.spec.replicas, 3);
    assert.deepEqual(d.spec.selector, { matchLabels: { app: "web" } });
    assert.deepEqual(d.spec.strategy, { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } });
    assert.equal(d.spec.revisionHistoryLimit, 10);
    assert.equal(d.spec.progressDeadlineSeconds, 600);
    assert.equal(d.spec.template.spec.restartPolicy, "Always");
    assert.equal(d.metadata.generation, 1);

    assert.match(await ok("apply", "-f", file("rs.yaml", RS)), /replicaset\.apps\/cache created/);
    const wide = await ok("get", "deploy,rs", "-o", "wide");
    assert.match(wide, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/m);
    assert.match(wide, /^deployment\.apps\/web\s+0\/3\s+0\s+0\s+\S+\s+nginx\s+nginx\s+app=web$/m);
    assert.match(wide, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/m);
    assert.match(wide, /^replicaset\.apps\/cache\s+2\s+0\s+0\s+\S+\s+redis\s+redis:7\s+app=cache,tier in \(backend\)$/m);
    assert.match(await ok("get", "all"), /deployment\.apps\/web/, "deployments are in category all");
  });

  it("scale, set image, label and a strategic patch: generation follows the spec only", async () => {
    assert.match(await ok("scale", "deploy/web", "--replicas=5"), /deployment\.apps\/web scaled/);
    let d = await json("get", "deploy", "web");
    assert.equal(d.spec.replicas, 5);
    assert.equal(d.metadata.generation, 2);
    assert.match(await ok("scale", "rs/cache", "--replicas=0"), /replicaset\.apps\/cache scaled/);
    assert.equal((await json("get", "rs", "cache")).spec.replicas, 0);

    assert.match(await ok("set", "image", "deploy/web", "nginx=nginx:1.27"), /deployment\.apps\/web image updated/);
    d = await json("get", "deploy", "web");
    assert.equal(d.spec.template.spec.containers[0].image, "nginx:1.27");
    assert.equal(d.metadata.generation, 3);

    await ok("label", "deploy/web", "team=web");
    d = await json("get", "deploy", "web");
    assert.equal(d.metadata.labels.team, "web");
    assert.equal(d.metadata.generation, 3, "a label is no spec change");

    // Strategic merge: containers merge by name, the image stays.
    await ok(
      "patch",
      "deploy",
      "web",
      "-p",
      JSON.stringify({ spec: { template: { spec: { containers: [{ name: "nginx", env: [{ name: "A", value: "1" }] }] } } } }),
    );
    d = await json("get", "deploy", "web");
    assert.equal(d.spec.template.spec.containers.length, 1);
    assert.equal(d.spec.template.spec.containers[0].image, "nginx:1.27");
    assert.deepEqual(d.spec.template.spec.containers[0].env, [{ name: "A", value: "1" }]);
  });

  it("client-side apply creates a Deployment, then patches it (strategic merge) from the last applied configuration", async () => {
    assert.match(await ok("apply", "-f", file("cs.yaml", deploy("cs", 2))), /deployment\.apps\/cs created/);
    assert.match(await ok("apply", "-f", file("cs.yaml", deploy("cs", 2))), /deployment\.apps\/cs unchanged/);
    assert.match(await ok("apply", "-f", file("cs.yaml", deploy("cs", 3))), /deployment\.apps\/cs configured/);
    const d = await json("get", "deploy", "cs");
    assert.equal(d.spec.replicas, 3);
    assert.equal(d.spec.template.spec.containers[0].ports[0].containerPort, 8080);
    assert.match(d.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"], /"replicas":3/);
  });

  it("server-side apply creates and updates a Deployment; a second identical apply writes nothing", async () => {
    const f = file("api.yaml", deploy("api", 2));
    assert.match(await ok("apply", "--server-side", "-f", f), /deployment\.apps\/api serverside-applied/);
    const first = await json("get", "deploy", "api");
    assert.equal(first.spec.replicas, 2);
    assert.equal(first.spec.strategy.type, "RollingUpdate");
    await ok("apply", "--server-side", "-f", f);
    assert.equal((await json("get", "deploy", "api")).metadata.resourceVersion, first.metadata.resourceVersion, "the same apply writes nothing");
    await ok("apply", "--server-side", "-f", file("api.yaml", deploy("api", 4)));
    const second = await json("get", "deploy", "api");
    assert.equal(second.spec.replicas, 4);
    assert.equal(second.metadata.generation, 2);
  });

  it("refuses what Kubernetes refuses, naming the field, and stores nothing", async () => {
    const mismatch = await k("apply", "-f", file("bad.yaml", deploy("bad", 1, "other")));
    assert.notEqual(mismatch.code, 0);
    assert.match(mismatch.stderr, /spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/);
    assert.match((await k("get", "deploy", "bad")).stderr, /NotFound|not found/);

    const immutable = await k("patch", "deploy", "web", "--type=merge", "-p", JSON.stringify({ spec: { selector: { matchLabels: { app: "other" } } } }));
    assert.notEqual(immutable.code, 0);
    assert.match(immutable.stderr, /spec\.selector: Invalid value: .*field is immutable/);

    const zero = await k(
      "patch",
      "deploy",
      "web",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: 0 } } } }),
    );
    assert.notEqual(zero.code, 0);
    assert.match(zero.stderr, /spec\.strategy\.rollingUpdate\.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0/);
    assert.equal((await json("get", "deploy", "web")).spec.strategy.rollingUpdate.maxSurge, "25%");
  });

  it("explain reads the Deployment's strategy from the OpenAPI", async () => {
    const out = await ok("explain", "deployment.spec.strategy");
    assert.match(out, /KIND:\s+Deployment/);
    assert.match(out, /GROUP:\s+apps/);
    assert.match(out, /rollingUpdate\s+<RollingUpdateDeployment>/);
    assert.match(out, /type\s+<string>/);
  });

  it(
    "kubectl 1.20 reads and writes the new kinds: Deployment (apply, get -o wide, scale, set image), ReplicaSet, CronJob (batch/v1), Secret",
    { skip: existsSync(KUBECTL_120) ? false : `no kubectl 1.20 at ${KUBECTL_120}` },
    async () => {
      const old = async (...args: string[]): Promise<string> => {
        const r = await run(KUBECTL_120, args, kc);
        assert.equal(r.code, 0, `kubectl 1.20 ${args.join(" ")}: ${r.stderr}`);
        return r.stdout;
      };
      assert.match(await old("apply", "-f", file("old.yaml", deploy("old", 2))), /deployment\.apps\/old created/);
      assert.match(await old("get", "deploy", "old", "-o", "wide"), /^old\s+0\/2\s+0\s+0\s+\S+\s+api\s+busybox\s+app=old$/m);
      assert.match(await old("scale", "deploy/old", "--replicas=4"), /deployment\.apps\/old scaled/);
      assert.match(await old("set", "image", "deploy/old", "api=busybox:1.36"), /deployment\.apps\/old image updated/);
      assert.equal(await old("get", "deploy", "old", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"), "4 busybox:1.36");
      assert.match(await old("get", "rs", "cache"), /^cache\s+0\s+0\s+0\s+/m);
      const cronJob = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: c
            image: busybox
`;
      assert.match(await old("apply", "-f", file("cj.yaml", cronJob)), /cronjob\.batch\/nightly created/);
      assert.match(await old("get", "cronjobs"), /^nightly\s+0 3 \* \* \*\s+<none>\s+False\s+0\s+<none>\s+/m);
      assert.match(await old("create", "secret", "generic", "old-secret", "--from-literal=k=v"), /secret\/old-secret created/);
      assert.equal(Buffer.from(await old("get", "secret", "old-secret", "-o", "jsonpath={.data.k}"), "base64").toString(), "v");
    },
  );
});
