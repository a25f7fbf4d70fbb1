import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "../api/errors.js";
import { fromKubeJson, listToKubeJson, messageFromKubeJson, statusToKubeJson, toKubeJson } from "./codec.js";
import { kindByResource } from "../api/kinds.js";
import { notFound } from "../api/errors.js";

// https://kubernetes.io/docs/concepts/workloads/pods/ and the RC example.
const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "nginx", labels: { app: "web" } },
  spec: {
    containers: [
      {
        name: "nginx",
        image: "nginx:1.14.2",
        ports: [{ containerPort: 80 }],
        resources: { requests: { cpu: "250m", memory: "64Mi" }, limits: { cpu: 1, memory: "128Mi" } },
        livenessProbe: { httpGet: { path: "/healthz", port: "http" }, initialDelaySeconds: 3, periodSeconds: 3 },
        readinessProbe: { tcpSocket: { port: 8080 } },
        volumeMounts: [{ name: "cache", mountPath: "/cache" }],
      },
    ],
    volumes: [{ name: "cache", emptyDir: {} }],
    terminationGracePeriodSeconds: 0,
  },
};

describe("kube-json", () => {
  it("reads a Pod manifest from the Kubernetes docs and writes back the same fields", () => {
    const o = fromKubeJson(pod);
    assert.equal(o.kind?.$case, "pod");
    const back = toKubeJson(o);
    const expected = JSON.parse(JSON.stringify(pod).replace('"cpu":1', '"cpu":"1"')) as object; // quantities are strings
    // status is a Go struct (never omitted): Kubernetes writes `status: {}`.
    Object.assign(expected, { status: {} });
    assert.deepEqual(back, expected);
  });

  it("keeps initialisms and int-or-string as Kubernetes spells them", () => {
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web", namespace: "default" },
      spec: {
        selector: { app: "web" },
        ports: [
          { port: 80, targetPort: 8080, protocol: "TCP" },
          { name: "h", port: 81, targetPort: "http" },
        ],
        clusterIP: "10.96.0.10",
      },
    };
    const o = fromKubeJson(svc);
    // status.loadBalancer is a Go struct: always written, as by Kubernetes.
    assert.deepEqual(toKubeJson(o), { ...svc, status: { loadBalancer: {} } });
    const p = fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "x" },
      status: { podIP: "10.0.0.1", podIPs: [{ ip: "10.0.0.1" }], hostIP: "1.2.3.4" },
    });
    assert.deepEqual(toKubeJson(p)["status"], { podIP: "10.0.0.1", podIPs: [{ ip: "10.0.0.1" }], hostIP: "1.2.3.4" });
  });

  it("writes proto3 optional zero values (replicas: 0) and omits other zeros", () => {
    const rc = fromKubeJson({ apiVersion: "v1", kind: "ReplicationController", metadata: { name: "r" }, spec: { replicas: 0, selector: { a: "b" } } });
    assert.deepEqual(toKubeJson(rc)["spec"], { replicas: 0, selector: { a: "b" } });
  });

  it("refuses unknown fields, wrong types and unknown kinds with 400 and Kubernetes' wording", () => {
    const bad = (json: unknown, re: RegExp) =>
      assert.throws(
        () => fromKubeJson(json),
        (e: unknown) => e instanceof ApiError && e.code === 400 && re.test(e.message),
      );
    bad({ apiVersion: "v1", kind: "Pod", metadata: { name: "x" }, spec: { foo: 1 } }, /unknown field "spec.foo"/);
    bad({ apiVersion: "v1", kind: "Pod", metadata: { name: 5 } }, /cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string/);
    bad({ apiVersion: "v1", kind: "Pod", spec: { containers: {} } }, /cannot unmarshal object/);
    bad({ apiVersion: "v1", kind: "Foo" }, /no kind "Foo" is registered for version "v1"/);
    bad({ apiVersion: "apps/v2", kind: "DaemonSet" }, /no kind "DaemonSet" is registered for version "apps\/v2"/);
    bad({ metadata: {} }, /Object 'Kind' is missing/);
    bad("x", /Object 'Kind' is missing/);
    bad({ apiVersion: "v1", kind: "Pod", spec: { containers: [{ ports: [{ containerPort: 1.5 }] }] } }, /of type int32/);
    assert.doesNotThrow(() => fromKubeJson({ apiVersion: "v1", kind: "Pod", spec: { foo: 1 } }, { strict: false }));
  });

  it("writes lists and Status like the apiserver", () => {
    const info = kindByResource("pods");
    assert.ok(info);
    const list = listToKubeJson(info, { metadata: { resourceVersion: "7", continue: "" }, items: [fromKubeJson(pod)] });
    assert.equal(list["kind"], "PodList");
    assert.deepEqual(list["metadata"], { resourceVersion: "7" });
    assert.deepEqual(statusToKubeJson(notFound("pods", "nope").status), {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'pods "nope" not found',
      reason: "NotFound",
      details: { name: "nope", kind: "pods" },
      code: 404,
    });
  });

  it("decodes other messages by proto name", () => {
    const scale = messageFromKubeJson<{ spec?: { replicas: number } }>("choreo.autoscaling.v1.Scale", {
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      spec: { replicas: 3 },
    });
    assert.equal(scale.spec?.replicas, 3);
    const opts = messageFromKubeJson<{ propagationPolicy: string; gracePeriodSeconds?: number }>("choreo.meta.v1.DeleteOptions", {
      kind: "DeleteOptions",
      apiVersion: "v1",
      propagationPolicy: "Background",
      gracePeriodSeconds: 0,
    });
    assert.equal(opts.propagationPolicy, "Background");
    assert.equal(opts.gracePeriodSeconds, 0);
  });
});
