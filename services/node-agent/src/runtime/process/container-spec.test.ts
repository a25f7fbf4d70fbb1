import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { expandVars, volumeBinds } from "../pod-spec.js";
import { containerArgv, containerEnv, containerLimits } from "./container-spec.js";
import { shq } from "./proc.js";

function pod(container: Record<string, unknown>, volumes: unknown[] = []): Pod {
  return unwrap(
    fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web-1", namespace: "shop", uid: "u-1", labels: { app: "web" } },
      spec: { nodeName: "n1", volumes, containers: [{ name: "c", image: "local/busybox:1.35", ...container }] },
    }),
  ) as Pod;
}

const facts = { podIp: "10.244.0.7", hostIp: "172.16.0.1", nodeName: "n1" };

describe("container spec", () => {
  it("maps command and args like Kubernetes onto an image with no entrypoint and CMD /bin/sh", () => {
    const env = new Map([["WHO", "world"]]);
    const argv = (c: Record<string, unknown>) => containerArgv(pod(c).spec!.containers[0]!, env);
    assert.deepEqual(argv({}), ["/bin/sh"]);
    assert.deepEqual(argv({ args: ["echo", "hi"] }), ["echo", "hi"]);
    assert.deepEqual(argv({ command: ["echo"], args: ["$(WHO)", "$(NOPE)", "$$(WHO)"] }), ["echo", "world", "$(NOPE)", "$(WHO)"]);
  });

  it("expands $(VAR) from earlier variables only, and $$ to $", () => {
    assert.equal(expandVars("a$(X)b$$c$(Y)", new Map([["X", "1"]])), "a1b$c$(Y)");
  });

  it("builds the environment with defaults, values and fieldRefs", () => {
    const p = pod({
      env: [
        { name: "A", value: "1" },
        { name: "B", value: "$(A)-2" },
        ...["metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "status.podIP", "status.hostIP", "metadata.labels['app']"].map((f, i) => ({
          name: `F${i}`,
          valueFrom: { fieldRef: { fieldPath: f } },
        })),
      ],
    });
    const env = containerEnv(p, p.spec!.containers[0]!, facts);
    assert.equal(env.get("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    assert.equal(env.get("HOSTNAME"), "web-1");
    assert.equal(env.get("B"), "1-2");
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6].map((i) => env.get(`F${i}`)),
      ["web-1", "shop", "u-1", "n1", "10.244.0.7", "172.16.0.1", "web"],
    );
  });

  it("turns limits into bytes and millicores, and nothing when unset", () => {
    assert.deepEqual(containerLimits(pod({ resources: { limits: { memory: "64Mi", cpu: "250m" } } }).spec!.containers[0]!), {
      memoryBytes: 67108864n,
      cpuMilli: 250n,
    });
    assert.deepEqual(containerLimits(pod({}).spec!.containers[0]!), { memoryBytes: undefined, cpuMilli: undefined });
  });

  it("binds emptyDirs from the pod dir and hostPaths from the host, with subPath and readOnly", () => {
    const p = pod(
      {
        volumeMounts: [
          { name: "cache", mountPath: "/cache/" },
          { name: "logs", mountPath: "/var/log", subPath: "web", readOnly: true },
        ],
      },
      [
        { name: "cache", emptyDir: {} },
        { name: "logs", hostPath: { path: "/var/log/pods" } },
      ],
    );
    assert.deepEqual(volumeBinds(p, p.spec!.containers[0]!, "/state/pods/u-1"), [
      { source: "/state/pods/u-1/volumes/cache", target: "/cache/", readOnly: false },
      { source: "/var/log/pods/web", target: "/var/log", readOnly: true },
    ]);
    const bad = pod({ volumeMounts: [{ name: "nope", mountPath: "/x" }] });
    assert.throws(() => volumeBinds(bad, bad.spec!.containers[0]!, "/s"), /unknown volume nope/);
  });

  it("quotes any string for the shell", () => {
    const nasty = ["it's", "$(rm -rf /)", "a\nb", "`x`", "\\", ""];
    const out = execFileSync("sh", ["-c", `printf '%s\\0' ${nasty.map(shq).join(" ")}`], { encoding: "utf8" });
    assert.deepEqual(out.split("\0").slice(0, -1), nasty);
  });
});
