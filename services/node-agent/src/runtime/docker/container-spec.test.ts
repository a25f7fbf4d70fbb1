import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { expandVars } from "../pod-spec.js";
import { appContainerOptions } from "./container-spec.js";
import { makePod } from "./test-support.js";

describe("app container options", () => {
  const pod = makePod(
    "p",
    {
      volumes: [
        { name: "data", emptyDir: {} },
        { name: "etc", hostPath: { path: "/srv/etc" } },
      ],
      containers: [
        {
          name: "app",
          image: "img:1",
          command: ["/bin/app", "$(GREETING)"],
          args: ["--ip=$(MY_IP)", "$$(literal)"],
          workingDir: "/work",
          env: [
            { name: "GREETING", value: "hi" },
            { name: "MY_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
            { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
            { name: "NS", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
            { name: "HOST", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
            { name: "BOTH", value: "$(GREETING)-$(NS)-$(UNKNOWN)" },
          ],
          resources: { limits: { cpu: "500m", memory: "64Mi" }, requests: { cpu: "250m" } },
          volumeMounts: [
            { name: "data", mountPath: "/data" },
            { name: "etc", mountPath: "/etc/app", readOnly: true },
            { name: "data", mountPath: "/sub", subPath: "a/b" },
          ],
        },
      ],
    },
    "node-1",
  );
  const opts = appContainerOptions({
    pod,
    container: pod.spec!.containers[0]!,
    sandboxId: "sbx",
    podIp: "10.0.0.5",
    hostIp: "172.16.0.1",
    podDir: "/state/pods/u",
    labels: { a: "b" },
    name: "choreo_default_p_app_0",
  });

  it("maps command and args to Entrypoint and Cmd with $(VAR) expansion", () => {
    assert.deepEqual(opts.Entrypoint, ["/bin/app", "hi"]);
    assert.deepEqual(opts.Cmd, ["--ip=10.0.0.5", "$(literal)"]);
    assert.equal(opts.WorkingDir, "/work");
    assert.equal(expandVars("$(A)$$$(B)", new Map([["A", "1"]])), "1$$(B)");
  });

  it("resolves fieldRefs and earlier variables in env", () => {
    assert.deepEqual(opts.Env, ["GREETING=hi", "MY_IP=10.0.0.5", "NODE=node-1", "NS=node-1", "HOST=172.16.0.1", "BOTH=hi-node-1-$(UNKNOWN)"]);
  });

  it("joins the sandbox, runs docker's init, limits resources and binds volumes", () => {
    const hc = opts.HostConfig!;
    assert.equal(hc.NetworkMode, "container:sbx");
    assert.equal(hc.IpcMode, "container:sbx");
    assert.equal(hc.Init, true);
    assert.deepEqual(hc.CapDrop, ["NET_RAW"], "no raw sockets (CVE-2020-8558)");
    assert.equal(hc.NanoCpus, 500_000_000);
    assert.equal(hc.Memory, 64 * 1024 * 1024);
    assert.equal(hc.MemorySwap, hc.Memory);
    assert.equal(hc.CpuShares, 256);
    assert.deepEqual(hc.Binds, [
      "/state/pods/u/resolv.conf:/etc/resolv.conf",
      "/state/pods/u/hosts:/etc/hosts",
      "/state/pods/u/volumes/data:/data",
      "/srv/etc:/etc/app:ro",
      "/state/pods/u/volumes/data/a/b:/sub",
    ]);
  });

  it("leaves the image's entrypoint and cmd alone when the spec sets neither", () => {
    const plain = makePod("q", { containers: [{ name: "app", image: "img:1" }] }, "n");
    const o = appContainerOptions({
      pod: plain,
      container: plain.spec!.containers[0]!,
      sandboxId: "s",
      podIp: "",
      hostIp: "",
      podDir: "/d",
      labels: {},
      name: "x",
    });
    assert.equal(o.Entrypoint, undefined);
    assert.equal(o.Cmd, undefined);
    assert.equal(o.HostConfig!.NanoCpus, undefined);
  });
});
