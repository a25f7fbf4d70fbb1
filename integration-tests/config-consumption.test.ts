// test-tier: servers
// Pods consume ConfigMaps and Secrets on real nodes (docker and process
// runtimes): a pod waits for its missing ConfigMap → it is created → the pod
// runs and serves its values (env, envFrom with a prefix, a mounted file) →
// the ConfigMap is updated → the mounted file changes in the running
// container, which is not restarted (its env, and a subPath mount of the
// volume, stay as it started).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Event, Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { waitFor } from "@choreo/kit/testing";
import { withLogsOnFailure } from "./support/cluster.js";
import { run } from "./support/kubectl.js";
import { dockerAvailable, startRealCluster, type RealCluster, type RealRuntime } from "./support/real-cluster.js";

const WAIT = { timeoutMs: 120_000 };
const IMAGE = "local/busybox:1.35";

/** Serves its env (as started) at /env.txt and the mounted ConfigMap at /app/<key>. */
const WEB = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: ${IMAGE}
    command: ["sh", "-c"]
    args:
    - |
      mkdir -p /www
      echo "$GREETING $APP_color" > /www/env.txt
      ln -s /etc/app /www/app
      ln -s /etc/fixed /www/fixed
      exec httpd -f -p 8080 -h /www
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: app-config, key: greeting}}
    envFrom:
    - prefix: APP_
      configMapRef: {name: app-config}
    volumeMounts:
    - {name: cfg, mountPath: /etc/app}
    - {name: cfg, mountPath: /etc/fixed/greeting, subPath: greeting}
  volumes:
  - name: cfg
    configMap: {name: app-config}
`;

/** Only env from the ConfigMap: waits with CreateContainerConfigError while it is missing, then logs its greeting. */
const ENV_ONLY = `apiVersion: v1
kind: Pod
metadata:
  name: env-only
spec:
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "echo greeting=$GREETING; exec sleep 3600"]
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: app-config, key: greeting}}
`;

/** Env and a file from a Secret. */
const SECRET_USER = `apiVersion: v1
kind: Pod
metadata:
  name: secret-user
spec:
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", "echo password=$PASSWORD; echo file=$(cat /etc/creds/password); exec sleep 3600"]
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: creds, key: password}}
    volumeMounts:
    - {name: creds, mountPath: /etc/creds}
  volumes:
  - name: creds
    secret: {secretName: creds, defaultMode: 0400}
`;

async function get(url: string): Promise<string | undefined> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return r.ok ? (await r.text()).trim() : undefined;
  } catch {
    return undefined;
  }
}

for (const runtime of ["docker", "process"] as RealRuntime[]) {
  const skip = runtime === "docker" && !dockerAvailable() ? "no Docker engine answers on this machine" : false;
  describe(`pods consume ConfigMaps and Secrets on the ${runtime} runtime`, { skip }, () => {
    let c: RealCluster;
    const kubectl = async (...args: string[]): Promise<string> => {
      const r = await run("kubectl", args, c.kubeconfig);
      assert.equal(r.code, 0, `kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    const apply = (name: string, yaml: string) => kubectl("apply", "-f", c.manifest(name, yaml));
    const events = async (pod: string): Promise<Event[]> =>
      (await c.client.list("events", { namespace: "default" })).items.map((o) => unwrap(o) as Event).filter((e) => e.involvedObject?.name === pod);
    const logsOf = async (pod: string): Promise<string> => {
      const r = await run("kubectl", ["logs", pod], c.kubeconfig);
      return r.code === 0 ? r.stdout : "";
    };

    before(async () => {
      c = await startRealCluster(runtime, { nodes: 1 });
    });
    after(async () => {
      if (!c) return;
      await c.stop();
      assert.deepEqual(c.leftovers(), [], "nothing of the cluster is left on the machine");
    });

    it("a pod waits for its missing ConfigMap → it is created → the pod runs and serves its values → an update reaches the mounted file, no restart", () =>
      withLogsOnFailure(c, async () => {
        await apply("web.yaml", WEB);
        await apply("env-only.yaml", ENV_ONLY);

        // Env from a missing ConfigMap: CreateContainerConfigError with the kubelet's message, and a Failed event.
        const waiting = await waitFor(
          async () => {
            const w = (await c.pod("env-only")).status?.containerStatuses[0]?.state?.waiting;
            return w?.reason === "CreateContainerConfigError" ? w : undefined;
          },
          { ...WAIT, message: "env-only waits with CreateContainerConfigError" },
        );
        assert.equal(waiting.message, 'configmap "app-config" not found');
        await waitFor(async () => (await events("env-only")).some((e) => e.reason === "Failed" && e.message === 'Error: configmap "app-config" not found'), {
          ...WAIT,
          message: "a Failed event names the missing ConfigMap",
        });
        // A volume of a missing ConfigMap: ContainerCreating, and FailedMount events.
        await waitFor(
          async () => (await events("web")).some((e) => e.reason === "FailedMount" && /volume "cfg" : configmap "app-config" not found/.test(e.message)),
          {
            ...WAIT,
            message: "web has a FailedMount event",
          },
        );
        // The FailedMount event can come before the agent's first status (held CHOREO_STATUS_HOLD_MS): wait for it.
        const web0 = await waitFor(
          async () => {
            const p = await c.pod("web");
            return p.status?.containerStatuses[0]?.state?.waiting?.reason ? p : undefined;
          },
          { ...WAIT, message: "web has a container status" },
        );
        assert.equal(web0.status?.phase, "Pending");
        assert.equal(web0.status?.containerStatuses[0]?.state?.waiting?.reason, "ContainerCreating");
        const described = await kubectl("get", "pod", "env-only");
        assert.match(described, /env-only\s+0\/1\s+CreateContainerConfigError/);

        await kubectl("create", "configmap", "app-config", "--from-literal=greeting=hello", "--from-literal=color=blue");
        const running = async (name: string): Promise<Pod | undefined> => {
          const p = await c.pod(name);
          return p.status?.phase === "Running" && p.status.containerStatuses[0]?.state?.running ? p : undefined;
        };
        const web = await waitFor(() => running("web"), { ...WAIT, message: "web runs once its ConfigMap exists" });
        await waitFor(() => running("env-only"), { ...WAIT, message: "env-only runs once its ConfigMap exists" });
        const ip = web.status!.podIp;
        assert.equal(await waitFor(() => get(`http://${ip}:8080/env.txt`), { ...WAIT, message: "web serves" }), "hello blue");
        assert.equal(await get(`http://${ip}:8080/app/greeting`), "hello");
        assert.equal(await get(`http://${ip}:8080/fixed/greeting`), "hello", "a subPath of the volume (its symlink followed inside the volume)");
        await waitFor(async () => (await logsOf("env-only")).includes("greeting=hello"), { ...WAIT, message: "env-only logs its greeting" });

        // Update the ConfigMap: the mounted file changes in place (within a minute), the container keeps running.
        const before = web.status!.containerStatuses[0]!;
        await kubectl("patch", "configmap", "app-config", "--type=merge", "-p", JSON.stringify({ data: { greeting: "bonjour" } }));
        await waitFor(async () => (await get(`http://${ip}:8080/app/greeting`)) === "bonjour", { timeoutMs: 90_000, message: "the mounted file changes" });
        const after = (await c.pod("web")).status!.containerStatuses[0]!;
        assert.equal(after.restartCount, 0, "not restarted");
        assert.equal(after.containerId, before.containerId);
        assert.equal(after.state?.running?.startedAt, before.state?.running?.startedAt);
        assert.equal(await get(`http://${ip}:8080/env.txt`), "hello blue", "env stays as the container started");
        assert.equal(await get(`http://${ip}:8080/fixed/greeting`), "hello", "a subPath mount is not updated (as in Kubernetes)");
        await kubectl("delete", "pod", "web", "env-only", "--wait=false");
      }));

    it("env from a Secret is visible to the container and a secret volume file has the value", async (t) => {
      const served = await c.client.list("secrets", { namespace: "default" }).then(
        () => true,
        () => false,
      );
      if (!served) {
        t.skip("the Secret kind is not served yet");
        return;
      }
      await withLogsOnFailure(c, async () => {
        await kubectl("create", "secret", "generic", "creds", "--from-literal=password=s3cr3t-value");
        await apply("secret-user.yaml", SECRET_USER);
        const log = await waitFor(
          async () => {
            const l = await logsOf("secret-user");
            return l.includes("file=") ? l : undefined;
          },
          { ...WAIT, message: "secret-user logs its secret" },
        );
        assert.match(log, /password=s3cr3t-value/);
        assert.match(log, /file=s3cr3t-value/);
        await kubectl("delete", "pod", "secret-user", "--wait=false");
      });
    });
  });
}
