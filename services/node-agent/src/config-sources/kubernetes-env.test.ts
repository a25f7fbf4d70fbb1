import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError, failure, wrap } from "@choreo/kit";
import { Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { containerEnv } from "../runtime/pod-spec.js";
import { KubernetesEnv, serviceEnv, withEnv } from "./kubernetes-env.js";

const kubernetes = Service.fromPartial({
  metadata: { name: "kubernetes", namespace: "default" },
  spec: { clusterIp: "10.96.0.1", ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: { value: { $case: "intVal", value: 6443 } } }] },
});

describe("the kubernetes Service's variables in every container", () => {
  it("are the kubelet's: SERVICE_HOST/PORT/PORT_HTTPS and the Docker-links ones", () => {
    assert.deepEqual(Object.fromEntries(serviceEnv("kubernetes", kubernetes)), {
      KUBERNETES_SERVICE_HOST: "10.96.0.1",
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PORT_HTTPS: "443",
      KUBERNETES_PORT: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP_PROTO: "tcp",
      KUBERNETES_PORT_443_TCP_PORT: "443",
      KUBERNETES_PORT_443_TCP_ADDR: "10.96.0.1",
    });
  });

  it("come before the spec's entries, which win and may refer to them; init containers too", () => {
    const pod = Pod.fromPartial({
      metadata: { name: "p", namespace: "apps", uid: "u" },
      spec: {
        enableServiceLinks: false,
        initContainers: [{ name: "init", image: "i" }],
        containers: [
          {
            name: "c",
            image: "i",
            env: [
              { name: "KUBERNETES_SERVICE_PORT", value: "8443" },
              { name: "API", value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)" },
            ],
          },
        ],
      },
    });
    const out = withEnv(pod, serviceEnv("kubernetes", kubernetes));
    const env = containerEnv(out, out.spec!.containers[0]!, { podIp: "", hostIp: "" });
    assert.equal(env.get("KUBERNETES_SERVICE_HOST"), "10.96.0.1");
    assert.equal(env.get("KUBERNETES_SERVICE_PORT"), "8443");
    assert.equal(env.get("API"), "https://10.96.0.1:8443");
    assert.equal(containerEnv(out, out.spec!.initContainers[0]!, { podIp: "", hostIp: "" }).get("KUBERNETES_SERVICE_PORT_HTTPS"), "443");
    // The pod object itself is not changed.
    assert.equal(pod.spec!.containers[0]!.env.length, 2);
  });

  it("are read through the api, kept for a while, and the last good read is used when the api does not answer", async () => {
    let reads = 0;
    let down = false;
    const clock = { now: 0 };
    const client = {
      get: (resource: string, namespace: string, name: string) => {
        reads++;
        assert.deepEqual([resource, namespace, name], ["services", "default", "kubernetes"]);
        if (down) return Promise.reject(new ApiError(failure(503, "ServiceUnavailable", "no responders")));
        return Promise.resolve(wrap("service", kubernetes));
      },
    };
    const k = new KubernetesEnv(client, silentLogger(), () => clock.now);
    assert.equal(Object.fromEntries(await k.current())["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
    await k.current();
    assert.equal(reads, 1);
    down = true;
    clock.now += 60_000;
    assert.equal(Object.fromEntries(await k.current())["KUBERNETES_SERVICE_HOST"], "10.96.0.1");
    assert.equal(reads, 2);
    // Never read: no variables (the pod still starts).
    assert.deepEqual(await new KubernetesEnv(client, silentLogger()).current(), []);
  });
});
