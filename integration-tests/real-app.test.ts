// test-tier: servers
// The "done when": a user brings an application written for
// Kubernetes — a ConfigMap, a Secret, a Deployment and its Service
// (examples/app.yaml, unchanged but for the image) — onto docker nodes with
// real kubectl, rolls it forward with `kubectl set image` and back with
// `kubectl rollout undo` while a client loops through the Service, and never
// loses a request; a broken release (a missing image) stalls with
// ProgressDeadlineExceeded while the old pods keep serving, and is undone.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster } from "./support/real-cluster.js";

const APP = path.join(import.meta.dirname, "../examples/app.yaml");
/** The same busybox root filesystem under a second tag: the "new release" `kubectl set image` rolls to. */
const V2 = "local/app:v2";

describe("a real application from Kubernetes manifests (docker nodes)", { skip: dockerAvailable() ? false : "docker is not available" }, () => {
  let c: RealCluster;
  const kubectl = async (...args: string[]): Promise<string> => {
    const r = await run("kubectl", args, c.kubeconfig);
    assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const get = async (url: string): Promise<string | undefined> => {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
      return r.ok ? (await r.text()).trim() : undefined;
    } catch {
      return undefined;
    }
  };
  const images = async (): Promise<string[]> =>
    (await kubectl("get", "pods", "-l", "app=app", "-o", "jsonpath={range .items[*]}{.spec.containers[0].image}{'\\n'}{end}")).split("\n").filter(Boolean);

  before(async () => {
    execFileSync("docker", ["tag", "local/busybox:1.35", V2]);
    c = await startRealCluster("docker");
  });
  after(async () => {
    if (c) {
      await c.stop();
      assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
    }
    execFileSync("docker", ["rmi", V2]);
  });

  it("ConfigMap, Secret, Deployment and Service applied unchanged: served with their configuration; set image forward and rollout undo back lose no request; a broken image stalls with ProgressDeadlineExceeded while the old pods serve", () =>
    withLogsOnFailure(c, async () => {
      const applied = await kubectl("apply", "-f", APP);
      for (const what of ["configmap/app-config", "secret/app-secret", "deployment.apps/app", "service/app"])
        assert.match(applied, new RegExp(`${what} created`));
      await kubectl("rollout", "status", "deployment/app", "--timeout=180s");
      const vip = await kubectl("get", "service", "app", "-o", "jsonpath={.spec.clusterIP}");
      await waitFor(
        async () => (await kubectl("get", "endpoints", "app", "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean).length === 3,
        { timeoutMs: 60_000, message: "3 ready endpoints" },
      );
      // The ConfigMap reached the pods as env and as a file; the Secret as env (its length shown, never its value).
      const page = await get(`http://${vip}:80/`);
      assert.match(page ?? "", /^Hello from choreo \| file: Hello from choreo \| key: 16 characters \| pod: app-[a-z0-9]+-[a-z0-9]{5}$/);

      let stop = false;
      let ok = 0;
      const failures: string[] = [];
      const client = (async () => {
        while (!stop) {
          if (await get(`http://${vip}:80/`)) ok++;
          else failures.push(new Date().toISOString());
        }
      })();
      try {
        await kubectl("set", "image", "deployment/app", `app=${V2}`);
        await kubectl("annotate", "deployment/app", "kubernetes.io/change-cause=release v2");
        await kubectl("rollout", "status", "deployment/app", "--timeout=180s");
        await waitFor(async () => (await images()).every((i) => i === V2) && (await images()).length === 3, {
          timeoutMs: 60_000,
          message: "3 pods of the new image, the old ones gone",
        });
        await kubectl("rollout", "undo", "deployment/app");
        await kubectl("rollout", "status", "deployment/app", "--timeout=180s");
        await waitFor(async () => (await images()).every((i) => i === "local/busybox:1.35") && (await images()).length === 3, {
          timeoutMs: 60_000,
          message: "back on the first image",
        });
        // A broken release: its image does not exist. The rollout stalls with ProgressDeadlineExceeded while the old pods keep serving.
        await kubectl("patch", "deployment/app", "--type=merge", "-p", '{"spec":{"progressDeadlineSeconds":15}}');
        await kubectl("set", "image", "deployment/app", "app=local/app:missing");
        const stalled = await run("kubectl", ["rollout", "status", "deployment/app", "--timeout=120s"], c.kubeconfig);
        assert.notEqual(stalled.code, 0, "rollout status fails");
        assert.match(stalled.stderr, /exceeded its progress deadline/);
        const progressing = await kubectl("get", "deployment/app", "-o", "jsonpath={.status.conditions[?(@.type=='Progressing')].reason}");
        assert.equal(progressing, "ProgressDeadlineExceeded");
        assert.equal(await kubectl("get", "deployment/app", "-o", "jsonpath={.status.availableReplicas}"), "3", "the old pods still serve");
        await kubectl("rollout", "undo", "deployment/app");
        await kubectl("rollout", "status", "deployment/app", "--timeout=180s");
        await waitFor(async () => (await images()).every((i) => i === "local/busybox:1.35") && (await images()).length === 3, {
          timeoutMs: 60_000,
          message: "the broken pod gone",
        });
        // The last old pods drain for 2 s after SIGTERM.
        await new Promise((r) => setTimeout(r, 3_000));
      } finally {
        stop = true;
        await client;
      }
      assert.deepEqual(failures, [], `no failed requests (${ok} answered)`);
      assert.ok(ok > 50, `the client kept sending (${ok} answered)`);

      const history = await kubectl("rollout", "history", "deployment/app");
      assert.match(history, /^2\s+release v2$/m, "revision 2: the new image, with its change-cause");
      assert.match(history, /^4\s/m, "revision 4: the broken release");
      assert.match(history, /^5\s/m, "revision 5: the first template brought back again");
      const rs = await kubectl("get", "rs", "-l", "app=app", "-o", "jsonpath={range .items[*]}{.spec.replicas}{' '}{end}");
      assert.deepEqual(
        rs.trim().split(" ").map(Number).sort(),
        [0, 0, 3],
        "three ReplicaSets: the current one with 3 pods, the v2 and the broken one scaled to 0",
      );
    }));
});
