import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { fromKubeJson, messageToKubeJson, toKubeJson } from "./codec.js";
import { ALWAYS, planOf } from "./schema.js";

interface Desc {
  nested?: Record<string, Desc>;
  fields?: Record<string, { options?: Record<string, unknown> }>;
}
const require = createRequire(import.meta.url);
const descriptor = require("../gen/descriptor.json") as Desc;

/** Every message of proto/choreo with the names of its fields marked `always`. */
function markedFields(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (d: Desc, prefix: string): void => {
    for (const [name, sub] of Object.entries(d.nested ?? {})) {
      const full = prefix ? `${prefix}.${name}` : name;
      if (sub.fields && full.startsWith("choreo.")) {
        const marked = Object.entries(sub.fields)
          .filter(([, f]) => f.options?.[ALWAYS] === true)
          .map(([n]) => n);
        if (marked.length) out.set(full, marked);
      }
      walk(sub, full);
    }
  };
  walk(descriptor, "");
  return out;
}

describe("kube-json: fields Kubernetes writes without omitempty", () => {
  it("every field marked always in the descriptor is written by an empty message, at its zero value", () => {
    const table = markedFields();
    assert.ok(table.size >= 40, `only ${table.size} messages carry (choreo.meta.v1.always)`);
    for (const [full, names] of table) {
      const plan = planOf(full);
      const json = messageToKubeJson(full, {});
      for (const tsName of names) {
        const fp = plan.fields.find((f) => f.tsName === tsName);
        assert.ok(fp?.always, `${full}.${tsName} is not always in the plan`);
        assert.ok(fp.jsonName in (json as object), `${full}.${fp.jsonName} missing from ${JSON.stringify(json)}`);
        const want =
          fp.kind === "repeated"
            ? []
            : fp.kind === "scalar"
              ? fp.scalar === "string" || fp.scalar === "bytes"
                ? ""
                : fp.scalar === "bool"
                  ? false
                  : 0
              : undefined;
        if (fp.message?.intOrString) assert.equal((json as Record<string, unknown>)[fp.jsonName], 0, `${full}.${fp.jsonName}`);
        else if (want !== undefined) assert.deepEqual((json as Record<string, unknown>)[fp.jsonName], want, `${full}.${fp.jsonName}`);
        else assert.equal(typeof (json as Record<string, unknown>)[fp.jsonName], "object", `${full}.${fp.jsonName}`);
      }
      // Fields not marked are omitted at zero (Go's omitempty).
      for (const fp of plan.fields) if (!fp.always && !fp.optional) assert.ok(!(fp.jsonName in (json as object)), `${full}.${fp.jsonName} written at zero`);
    }
  });

  it("an empty ContainerStatus reads as the Python client requires (restartCount, ready, image, imageID)", () => {
    assert.deepEqual(messageToKubeJson("choreo.core.v1.ContainerStatus", {}), {
      name: "",
      state: {},
      lastState: {},
      ready: false,
      restartCount: 0,
      image: "",
      imageID: "",
    });
  });

  it("nodeInfo has its ten fields, the kubelet endpoint its capital Port", () => {
    const node = fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "n" }, status: { nodeInfo: { machineID: "m" } } });
    const status = toKubeJson(node)["status"] as Record<string, Record<string, unknown>>;
    assert.deepEqual(Object.keys(status["nodeInfo"] ?? {}).sort(), [
      "architecture",
      "bootID",
      "containerRuntimeVersion",
      "kernelVersion",
      "kubeProxyVersion",
      "kubeletVersion",
      "machineID",
      "operatingSystem",
      "osImage",
      "systemUUID",
    ]);
    assert.deepEqual(status["daemonEndpoints"], { kubeletEndpoint: { Port: 0 } });
    const back = fromKubeJson({ apiVersion: "v1", kind: "Node", metadata: { name: "n" }, status: { daemonEndpoints: { kubeletEndpoint: { Port: 10250 } } } });
    assert.deepEqual((toKubeJson(back)["status"] as Record<string, unknown>)["daemonEndpoints"], { kubeletEndpoint: { Port: 10250 } });
  });

  it("status counters of RC, Scale and DaemonSet are written at 0; Job's status is {}", () => {
    const rc = toKubeJson(fromKubeJson({ apiVersion: "v1", kind: "ReplicationController", metadata: { name: "r" }, spec: { selector: { a: "b" } } }));
    assert.deepEqual(rc["status"], { replicas: 0 });
    assert.deepEqual(messageToKubeJson("choreo.autoscaling.v1.Scale", { spec: {} }), { metadata: {}, spec: {}, status: { replicas: 0 } });
    const ds = toKubeJson(fromKubeJson({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "d" } }));
    assert.deepEqual(ds["status"], { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 });
    const job = toKubeJson(fromKubeJson({ apiVersion: "batch/v1", kind: "Job", metadata: { name: "j" } }));
    assert.deepEqual(job["status"], {});
  });

  it("accepts, stores and returns Kubernetes fields choreo does not act on", () => {
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web" },
      spec: {
        ports: [{ port: 81, appProtocol: "http" }],
        sessionAffinity: "ClientIP",
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
        ipFamilies: ["IPv4"],
        ipFamilyPolicy: "SingleStack",
        externalIPs: ["1.2.3.4"],
        externalTrafficPolicy: "Cluster",
      },
      status: { loadBalancer: { ingress: [{ ip: "1.2.3.4", ipMode: "VIP", ports: [{ port: 81, protocol: "TCP" }] }] } },
    };
    assert.deepEqual(toKubeJson(fromKubeJson(svc)), svc);
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: {
        containers: [
          {
            name: "c",
            image: "busybox",
            resources: {},
            securityContext: { capabilities: { add: ["NET_ADMIN"] }, privileged: false },
            lifecycle: { preStop: { exec: { command: ["sleep", "1"] } } },
          },
        ],
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: "a", operator: "In", values: ["b"] }] } }],
          },
        },
        hostAliases: [{ ip: "127.0.0.1", hostnames: ["x"] }],
        dnsConfig: { options: [{ name: "ndots", value: "2" }] },
        setHostnameAsFQDN: false,
        hostPID: false,
      },
      status: { hostIPs: [{ ip: "10.0.0.1" }] },
    };
    const back = toKubeJson(fromKubeJson(pod));
    // setHostnameAsFQDN is a pointer (kept at false); hostPID a plain bool (omitted at false).
    const { hostPID: _h, ...spec } = pod.spec;
    assert.deepEqual(back, { ...pod, spec });
  });
});
