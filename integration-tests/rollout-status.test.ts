// test-tier: servers
// `choreo rollout status` beside kubectl 1.32's against the same api: the same
// lines and exit codes for a Deployment rolling out (created, then a new
// image), a DaemonSet, a rollout that cannot finish (--timeout), a missing
// object and a kind without a status viewer.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, ROOT, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig, type RunResult } from "./support/kubectl.js";

const CHOREO = path.join(ROOT, "services/cli/bin/choreo.js");
const KUBECTL = "/usr/bin/kubectl";

const deployment = (name: string, image: string, extra = "") => `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec:
  replicas: 3
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      ${extra}
      containers: [{name: app, image: ${image}}]
`;

/** Every line a status viewer prints for a Deployment or DaemonSet (kubectl's words). */
const KNOWN =
  /^(Waiting for deployment spec update to be observed\.\.\.|Waiting for deployment "[^"]+" rollout to finish: (\d+ out of \d+ new replicas have been updated|\d+ old replicas are pending termination|\d+ of \d+ updated replicas are available)\.\.\.|deployment "[^"]+" successfully rolled out|Waiting for daemon set "[^"]+" rollout to finish: .*|daemon set "[^"]+" successfully rolled out)$/;

describe("choreo rollout status, as kubectl's", () => {
  let c: TestCluster;
  let kc: string;
  const choreo = (...args: string[]): Promise<RunResult> => run(process.execPath, [CHOREO, ...args], kc, { cwd: c.dir });
  const kubectl = (...args: string[]): Promise<RunResult> => run(KUBECTL, args, kc, { cwd: c.dir });
  const apply = async (name: string, yaml: string): Promise<void> => {
    const file = path.join(c.dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    const r = await kubectl("apply", "-f", file);
    assert.equal(r.code, 0, r.stderr);
  };
  const lines = (r: RunResult) => r.stdout.trim().split("\n");
  /** Both CLIs at once; both end the same way, every line is one of kubectl's. */
  const both = async (...args: string[]): Promise<[RunResult, RunResult]> => {
    const [ours, theirs] = await Promise.all([choreo("rollout", "status", ...args), kubectl("rollout", "status", ...args)]);
    assert.equal(ours.code, theirs.code, `exit codes: choreo ${ours.code} (${ours.stderr}), kubectl ${theirs.code} (${theirs.stderr})`);
    assert.equal(ours.stderr.trim(), theirs.stderr.trim());
    assert.equal(lines(ours).at(-1), lines(theirs).at(-1), `last lines:\n${ours.stdout}\n--- kubectl:\n${theirs.stdout}`);
    if (ours.stdout.trim()) for (const l of lines(ours)) assert.match(l, KNOWN);
    return [ours, theirs];
  };

  before(async () => {
    c = await startCluster({
      actors: [{ name: "node-agent", env: { CHOREO_HOLLOW_NODES: "2" } }, { name: "scheduler" }, { name: "replication" }],
    });
    kc = writeKubeconfig(c);
    await waitFor(async () => (await c.client.list("nodes")).items.length === 2, { timeoutMs: 30_000, message: "2 nodes" });
  });
  after(async () => {
    await c?.stop();
  });

  it("a Deployment created and then given a new image: both wait, then say it rolled out (exit 0)", async () => {
    await apply("web", deployment("web", "nginx:1"));
    const [ours] = await both("deployment/web", "--timeout=60s");
    assert.equal(lines(ours).at(-1), 'deployment "web" successfully rolled out');
    await apply("web", deployment("web", "nginx:2"));
    const [again] = await both("deploy", "web", "--timeout=60s");
    assert.equal(lines(again).at(-1), 'deployment "web" successfully rolled out');
    // Once done, -w=false prints the one line.
    await both("deployment/web", "-w=false");
  });

  it("a DaemonSet on every node", async () => {
    await apply(
      "agent",
      `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox}]
`,
    );
    const [ours] = await both("ds/agent", "--timeout=60s");
    assert.equal(lines(ours).at(-1), 'daemon set "agent" successfully rolled out');
  });

  it("a rollout that cannot finish: --timeout ends both with exit 1; a missing object and a kind without a viewer too", async () => {
    await apply("stuck", deployment("stuck", "nginx", "nodeSelector: {nowhere: 'true'}"));
    const [ours] = await both("deployment/stuck", "--timeout=3s");
    assert.equal(ours.code, 1);
    assert.equal(ours.stderr.trim(), "error: timed out waiting for the condition");
    const [missing] = await both("deployment/nope");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /NotFound/);
    assert.equal((await both("rc/web"))[0].code, 1);
    await apply(
      "rc",
      `apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 1
  selector: {app: rc}
  template:
    metadata: {labels: {app: rc}}
    spec:
      containers: [{name: app, image: nginx}]
`,
    );
    const [rc] = await both("rc/web");
    assert.equal(rc.code, 1);
    assert.match(rc.stderr, /no status viewer has been implemented for ReplicationController/);
  });
});
