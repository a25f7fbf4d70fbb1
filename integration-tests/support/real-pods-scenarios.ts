// The scenarios of real pods, run on each runtime (real-pods-docker.test.ts,
// real-pods-process.test.ts): real containers or namespaced processes, the
// service data plane, DNS, probes, logs, crashes and adoption.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { NAMES } from "@choreo/node-agent/net/types";
import { ROOT, withLogsOnFailure } from "./cluster.js";
import { run } from "./kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./real-cluster.js";

const WAIT = { timeoutMs: 90_000 };
const IMAGE = "local/busybox:1.35";

/** An RC of `replicas` HTTP pods answering "<version> <pod name>", draining 2 s on SIGTERM, ready when serving. */
export function webRc(name: string, replicas: number, labels: Record<string, string>): string {
  const lab = Object.entries(labels)
    .map(([k, v]) => `        ${k}: ${v}`)
    .join("\n");
  return `apiVersion: v1
kind: ReplicationController
metadata:
  name: ${name}
spec:
  replicas: ${replicas}
  selector:
${lab.replace(/^ {4}/gm, "")}
  template:
    metadata:
      labels:
${lab}
    spec:
      terminationGracePeriodSeconds: 10
      containers:
      - name: web
        image: ${IMAGE}
        command: ["sh", "-c"]
        args:
        - |
          echo "${labels["version"] ?? "v1"} $POD_NAME" > /www/index.html
          httpd -f -p 8080 -h /www &
          pid=$!
          trap 'sleep 2; kill $pid; exit 0' TERM
          wait $pid
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        ports:
        - {name: http, containerPort: 8080}
        readinessProbe:
          httpGet: {path: /index.html, port: http}
          periodSeconds: 1
`;
}

/** A ClusterIP Service `name` over `selector`, port 80 → the pods' `http` port. */
export const service = (name: string, selector: Record<string, string>): string => `apiVersion: v1
kind: Service
metadata:
  name: ${name}
spec:
  selector:
${Object.entries(selector)
  .map(([k, v]) => `    ${k}: ${v}`)
  .join("\n")}
  ports:
  - {name: http, port: 80, targetPort: http}
`;

/** Allocates without end in user space (the string doubles: 32 MiB after 22 rounds). */
const HOG = "x=aaaaaaaa; while :; do x=$x$x; done";

/** A pod running `script` in busybox (restartPolicy Never unless given). */
const shellPod = (name: string, script: string, extra = ""): string => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
${extra}`;

/** GET http://<ip>:<port>/ from this machine (the host reaches pod IPs and ClusterIPs through the node bridges and the proxy). */
async function get(url: string): Promise<string | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return r.ok ? (await r.text()).trim() : undefined;
  } catch {
    return undefined;
  }
}

export function realPodScenarios(runtime: RealRuntime): void {
  const skip = runtime === "docker" && !dockerAvailable() ? "no Docker engine answers on this machine" : false;
  describe(`real pods on the ${runtime} runtime`, { skip }, () => {
    let c: RealCluster;
    /** A scenario whose failure message carries the cluster's log tails. */
    const scenario = (name: string, fn: () => Promise<void>): void => {
      it(name, () => withLogsOnFailure(c, fn));
    };
    const kubectl = async (...args: string[]) => {
      const r = await run("kubectl", args, c.kubeconfig);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    const apply = (name: string, yaml: string) => kubectl("apply", "-f", c.manifest(name, yaml));
    const runningPods = async (selector: string): Promise<Pod[]> => {
      const out = await kubectl("get", "pods", "-l", selector, "-o", "jsonpath={.items[*].metadata.name}");
      const pods = await Promise.all(
        out
          .split(/\s+/)
          .filter(Boolean)
          .map((n) => c.pod(n)),
      );
      return pods.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
    };
    const readyIps = async (svc: string): Promise<string[]> =>
      (await kubectl("get", "endpoints", svc, "-o", "jsonpath={.subsets[*].addresses[*].ip}")).split(/\s+/).filter(Boolean);
    const clusterIp = async (svc: string): Promise<string> => kubectl("get", "service", svc, "-o", "jsonpath={.spec.clusterIP}");

    before(async () => {
      c = await startRealCluster(runtime);
    });
    after(async () => {
      if (!c) return;
      await c.stop();
      assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
    });

    scenario("an RC of 3 web pods behind a Service: 300 requests from another pod to web.default.svc.cluster.local reach all 3, none fails", async () => {
      await apply("web.yaml", webRc("web", 3, { app: "web", stage: "production" }) + "---\n" + service("web", { app: "web", stage: "production" }));
      const pods = await waitFor(
        async () => {
          const ps = await runningPods("app=web");
          return ps.length === 3 && (await readyIps("web")).length === 3 ? ps : undefined;
        },
        { ...WAIT, message: "3 web pods Running and ready in the endpoints" },
      );
      assert.equal(new Set(pods.map((p) => p.spec?.nodeName)).size, 2, "spread over both nodes");
      await apply(
        "client.yaml",
        shellPod("client", "for i in $(seq 1 300); do wget -q -O - http://web.default.svc.cluster.local:80/ || echo FAILED; done; echo DONE"),
      );
      const log = await waitFor(
        async () => {
          const r = await run("kubectl", ["logs", "client"], c.kubeconfig);
          return r.code === 0 && r.stdout.includes("DONE") ? r.stdout : undefined;
        },
        { ...WAIT, message: "the client pod finished its 300 requests" },
      );
      const lines = log.split("\n").filter((l) => l && l !== "DONE");
      assert.equal(lines.filter((l) => l === "FAILED").length, 0, "no request failed");
      assert.equal(lines.length, 300);
      const answeredBy = new Set(lines.map((l) => l.split(" ")[1]));
      assert.deepEqual([...answeredBy].sort(), pods.map((p) => p.metadata?.name).sort(), "every pod answered");
    });

    scenario(
      "quarantine: remove stage=production from one pod → it is replaced, still answers on its pod IP, and the Service no longer sends it traffic",
      async () => {
        const [victim] = await runningPods("app=web,stage=production");
        const name = victim!.metadata!.name;
        const ip = victim!.status!.podIp;
        await kubectl("label", "pod", name, "stage-");
        await waitFor(
          async () =>
            (await runningPods("app=web,stage=production")).length === 3 && (await readyIps("web")).length === 3 && !(await readyIps("web")).includes(ip),
          { ...WAIT, message: "a replacement in the endpoints, the quarantined pod out" },
        );
        assert.match((await get(`http://${ip}:8080/`)) ?? "", new RegExp(`${name}$`), "the quarantined pod still answers on its IP");
        const vip = await clusterIp("web");
        const seen = new Set<string>();
        for (let i = 0; i < 60; i++) {
          const body = await get(`http://${vip}:80/`);
          assert.ok(body, "every request through the ClusterIP is answered");
          seen.add(body.split(" ")[1]!);
        }
        assert.ok(!seen.has(name), "the quarantined pod gets no traffic from the Service");
        await kubectl("delete", "pod", name, "--wait=false");
      },
    );

    scenario("rolling update v1 → v2 with two RCs while a client sends requests: no request fails", async () => {
      await apply("web-v1.yaml", webRc("roll-v1", 3, { app: "roll", version: "v1" }) + "---\n" + service("roll", { app: "roll" }));
      await waitFor(async () => (await readyIps("roll")).length === 3, { ...WAIT, message: "v1 ready" });
      const vip = await clusterIp("roll");
      let stop = false;
      let ok = 0;
      const failures: string[] = [];
      const versions = new Set<string>();
      const client = (async () => {
        while (!stop) {
          const body = await get(`http://${vip}:80/`);
          if (body) {
            ok++;
            versions.add(body.split(" ")[0]!);
          } else failures.push(new Date().toISOString());
        }
      })();
      await apply("web-v2.yaml", webRc("roll-v2", 0, { app: "roll", version: "v2" }));
      for (let i = 1; i <= 3; i++) {
        // One up: wait until the new pod is Running and ready in the endpoints…
        await kubectl("scale", "rc", "roll-v2", `--replicas=${i}`);
        await waitFor(
          async () => {
            const eps = await readyIps("roll");
            const v2 = (await runningPods("app=roll,version=v2")).map((p) => p.status?.podIp ?? "");
            return v2.length === i && v2.every((ip) => eps.includes(ip));
          },
          { ...WAIT, message: `v2 at ${i}, ready in the endpoints` },
        );
        // …then one down (it drains for 2 s after SIGTERM while it leaves the endpoints).
        await kubectl("scale", "rc", "roll-v1", `--replicas=${3 - i}`);
        await waitFor(async () => (await runningPods("app=roll,version=v1")).length === 3 - i, { ...WAIT, message: `v1 at ${3 - i}` });
      }
      await new Promise((r) => setTimeout(r, 3_000));
      stop = true;
      await client;
      assert.deepEqual(failures, [], `no failed requests (${ok} answered)`);
      assert.ok(ok > 50, `the client kept sending (${ok} answered)`);
      assert.deepEqual([...versions].sort(), ["v1", "v2"]);
    });

    scenario("sidecar: a writer and a reader share an emptyDir; ambassador: an app reaches its proxy on localhost", async () => {
      await kubectl("apply", "-f", path.join(ROOT, "examples/sidecar.yaml"));
      await waitFor(
        async () => {
          const r = await run("kubectl", ["logs", "sidecar", "-c", "reader"], c.kubeconfig);
          return r.code === 0 && /line 3 from sidecar/.test(r.stdout);
        },
        { ...WAIT, message: "the reader prints the writer's lines" },
      );
      await apply(
        "ambassador.yaml",
        `apiVersion: v1
kind: Pod
metadata:
  name: ambassador
spec:
  containers:
  - name: proxy
    image: ${IMAGE}
    command: ["sh", "-c", "mkdir -p /srv && echo from-the-ambassador > /srv/index.html && exec httpd -f -p 127.0.0.1:9000 -h /srv"]
  - name: app
    image: ${IMAGE}
    command: ["sh", "-c", "while true; do wget -q -O - http://localhost:9000/ || echo unreachable; sleep 1; done"]
`,
      );
      await waitFor(
        async () => {
          const r = await run("kubectl", ["logs", "ambassador", "-c", "app"], c.kubeconfig);
          return r.code === 0 && r.stdout.includes("from-the-ambassador");
        },
        { ...WAIT, message: "the app reaches its ambassador on localhost" },
      );
    });

    scenario(
      "a liveness probe that starts failing → restarted, restartCount and back-off grow; a failing readiness probe takes the pod out of the endpoints and back",
      async () => {
        await apply(
          "probes.yaml",
          `${shellPod(
            "liveness",
            "echo ok > /www/healthz; httpd -f -p 8080 -h /www & sleep 3; rm /www/healthz; wait",
            `    ports: [{containerPort: 8080}]
    livenessProbe:
      httpGet: {path: /healthz, port: 8080}
      periodSeconds: 1
      failureThreshold: 1
`,
          ).replace("restartPolicy: Never", "restartPolicy: Always")}---
apiVersion: v1
kind: Pod
metadata:
  name: flappy
  labels: {app: flappy}
spec:
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "httpd -f -p 8080 -h /www & while true; do touch /www/ready; sleep 4; rm -f /www/ready; sleep 4; done"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
---
${service("flappy", { app: "flappy" })}`,
        );
        const restarted = await waitFor(
          async () => {
            const p = await c.pod("liveness");
            return (p.status?.containerStatuses[0]?.restartCount ?? 0) >= 2 ? p : undefined;
          },
          { ...WAIT, message: "liveness restarted it twice" },
        );
        assert.ok(restarted.status?.containerStatuses[0]?.lastState?.terminated, "the killed run is the lastState");
        const events = await kubectl("get", "events", "--field-selector", "involvedObject.name=liveness", "-o", "jsonpath={.items[*].reason}");
        assert.match(events, /Unhealthy/);
        assert.match(events, /Killing/);
        // Back-off grows: the kubelet's doubling (1 s base here) shows as CrashLoopBackOff between restarts.
        await waitFor(async () => (await c.pod("liveness")).status?.containerStatuses[0]?.state?.waiting?.reason === "CrashLoopBackOff", {
          ...WAIT,
          message: "CrashLoopBackOff while backing off",
        });
        const flappy = await waitFor(async () => (await c.pod("flappy")).status?.podIp || undefined, { ...WAIT, message: "flappy has an IP" });
        await waitFor(async () => (await readyIps("flappy")).includes(flappy), { ...WAIT, message: "flappy ready in the endpoints" });
        await waitFor(async () => !(await readyIps("flappy")).includes(flappy), { ...WAIT, message: "flappy leaves the endpoints" });
        await waitFor(async () => (await readyIps("flappy")).includes(flappy), { ...WAIT, message: "flappy comes back" });
        await kubectl("delete", "pod", "liveness", "flappy", "--wait=false");
      },
    );

    scenario(
      "a container killed from outside is restarted per restartPolicy; a node agent killed -9 leaves its pods running and adopts them on restart",
      async () => {
        await apply(
          "victim.yaml",
          shellPod("victim", "echo victim > /www/index.html; exec httpd -f -p 8080 -h /www").replace("restartPolicy: Never", "restartPolicy: Always"),
        );
        const before = await waitFor(
          async () => {
            const p = await c.pod("victim");
            return p.status?.containerStatuses[0]?.state?.running ? p : undefined;
          },
          { ...WAIT, message: "victim running" },
        );
        // Running is reported once the container's start is under way; until its command serves, the start
        // may still be forking, and a kill of the processes listed would miss one forked after the listing.
        await waitFor(() => get(`http://${before.status!.podIp}:8080/`), { ...WAIT, message: "victim serving" });
        killContainerFromOutside(runtime, before);
        const after = await waitFor(
          async () => {
            const p = await c.pod("victim");
            const cs = p.status?.containerStatuses[0];
            return cs?.restartCount === 1 && cs.state?.running ? p : undefined;
          },
          { ...WAIT, message: "victim restarted once" },
        );
        assert.equal(after.status?.containerStatuses[0]?.lastState?.terminated?.exitCode, 137);
        const nodeIndex = c.nodes.indexOf(after.spec!.nodeName);
        const containerId = after.status!.containerStatuses[0]!.containerId;
        await waitFor(() => get(`http://${after.status!.podIp}:8080/`), { ...WAIT, message: "the restarted victim serving" });
        await c.killNode(nodeIndex);
        assert.equal(await get(`http://${after.status!.podIp}:8080/`), "victim", "the pod keeps serving while its agent is dead");
        await c.startNode(nodeIndex);
        await new Promise((r) => setTimeout(r, 3_000));
        const adopted = await c.pod("victim");
        const cs = adopted.status!.containerStatuses[0]!;
        assert.equal(cs.containerId, containerId, "same container: adopted, not restarted");
        assert.equal(cs.restartCount, 1);
        assert.equal(adopted.status?.podIp, after.status?.podIp);
        assert.equal((await runningPods("app!=nothing")).filter((p) => p.metadata?.name === "victim").length, 1, "no duplicate");
        await kubectl("delete", "pod", "victim", "--wait=false");
      },
    );

    scenario("a container allocating past its memory limit is reported OOMKilled", async () => {
      // The shell doubles a string in its own memory: a fault in user space, so the OOM killer kills
      // exactly this process (SIGKILL, 137). A pipeline such as `head -c 200m /dev/zero | tail` faults
      // inside read(): the kernel may kill another member first and tail then exits 1 (seen in CI).
      await apply(
        "oom.yaml",
        shellPod(
          "hog",
          HOG,
          `    resources:
      limits: {memory: 32Mi}
`,
        ),
      );
      // Docker may flag the OOM kill after the exit under load: the runtime waits for it a moment, and its oom
      // event mends a later flag, so the reported reason settles on OOMKilled (Error only in between).
      let seen: unknown;
      const t = await waitFor(
        async () => {
          const cs = (await c.pod("hog")).status?.containerStatuses[0];
          seen = cs;
          const term = cs?.state?.terminated;
          return term?.reason === "OOMKilled" ? term : undefined;
        },
        { ...WAIT, message: "hog terminated as OOMKilled" },
      ).catch((err: unknown) => {
        // What the pod said last, to tell a missed OOM flag from a container that never ran or never died.
        throw new Error(`${String(err)}; hog's last container status: ${JSON.stringify(seen)}`);
      });
      assert.equal(t.exitCode, 137);
    });

    if (runtime === "docker") {
      it("a missing image → ErrImagePull then ImagePullBackOff with a clear message; the agent keeps running other pods", async () => {
        await apply("missing.yaml", shellPod("missing", "true").replace(`image: ${IMAGE}`, "image: registry.invalid/nope:1"));
        const w = await waitFor(
          async () => {
            const st = (await c.pod("missing")).status?.containerStatuses[0]?.state?.waiting;
            return st?.reason === "ImagePullBackOff" ? st : undefined;
          },
          { ...WAIT, message: "ImagePullBackOff" },
        );
        assert.match(w.message, /registry\.invalid\/nope/);
        await apply("after.yaml", shellPod("after-missing", "echo still-fine"));
        await waitFor(async () => (await c.pod("after-missing")).status?.phase === "Succeeded", { ...WAIT, message: "another pod still runs" });
      });
    }
  });
}

/** docker kill for docker; SIGKILL to every process of the pod's network namespace for the process runtime. */
function killContainerFromOutside(runtime: RealRuntime, pod: Pod): void {
  if (runtime === "docker") {
    const id = pod.status!.containerStatuses[0]!.containerId.replace(/^docker:\/\//, "");
    execFileSync("docker", ["kill", id]);
    return;
  }
  const pids = execFileSync("ip", ["netns", "pids", NAMES.netns(pod.metadata!.uid)], { encoding: "utf8" })
    .split(/\s+/)
    .filter(Boolean);
  assert.ok(pids.length > 0, "the pod's processes are in its network namespace");
  for (const pid of pids) {
    try {
      execFileSync("kill", ["-9", pid], { stdio: "ignore" });
    } catch {
      // gone between the listing and the kill (a shell's short-lived child)
    }
  }
}
