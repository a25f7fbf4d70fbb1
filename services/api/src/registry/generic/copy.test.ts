import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KINDS, kindOf, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { Object as ObjectMsg } from "@choreo/kit/gen/choreo/api/v1/api";
import type { Pod, Secret, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { manifest } from "../../fuzz/arbitraries.js";
import { copyOf } from "./store.js";

const roundTrip = (o: ReturnType<typeof fromKubeJson>) => ObjectMsg.decode(ObjectMsg.encode(o).finish());

describe("copyOf: the store's deep copy of an object", () => {
  it("is equal to structuredClone's for every kind, as decoded from storage", () => {
    let kinds = 0;
    for (const info of KINDS) {
      let o;
      try {
        o = roundTrip(fromKubeJson(manifest(info.kind, info.apiVersion)));
      } catch {
        continue; // a kind the fuzzer has no manifest for
      }
      const v = unwrap(o);
      assert.deepStrictEqual(copyOf(kindOf(o), v), structuredClone(v), info.kind);
      kinds++;
    }
    assert.ok(kinds >= 10, `${kinds} kinds compared`);
  });

  it("shares nothing a write changes with the original: nested messages, lists and maps are new", () => {
    const o = roundTrip(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", namespace: "default", labels: { a: "1" }, finalizers: ["f"] },
        spec: { containers: [{ name: "c", image: "i", resources: { requests: { cpu: "1" } } }], tolerations: [{ key: "k", operator: "Exists" }] },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
      }),
    );
    const pod = unwrap(o) as Pod;
    const before = structuredClone(pod);
    const copy = copyOf(kindOf(o), pod);
    copy.metadata!.labels["a"] = "2";
    copy.metadata!.finalizers.push("g");
    copy.spec!.containers[0]!.image = "j";
    copy.spec!.containers[0]!.resources!.requests["cpu"] = "2";
    copy.spec!.tolerations = [];
    copy.status!.conditions[0]!.status = "False";
    copy.status!.phase = "Failed";
    assert.deepStrictEqual(pod, before, "the original is unchanged");
  });

  it("keeps bytes, int-or-string and optional fields", () => {
    const secret = roundTrip(
      fromKubeJson({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" }, data: { k: Buffer.from("v").toString("base64") } }),
    );
    const s = copyOf(kindOf(secret), unwrap(secret)) as Secret;
    assert.equal(Buffer.from(s.data["k"]!).toString(), "v");
    const svc = roundTrip(
      fromKubeJson({ apiVersion: "v1", kind: "Service", metadata: { name: "s", namespace: "default" }, spec: { ports: [{ port: 80, targetPort: "http" }] } }),
    );
    assert.deepStrictEqual(copyOf(kindOf(svc), unwrap(svc)) as Service, structuredClone(unwrap(svc)));
    const pod = roundTrip(
      fromKubeJson({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p", namespace: "default" },
        spec: { containers: [{ name: "c", image: "i" }], terminationGracePeriodSeconds: 5 },
      }),
    );
    assert.equal((copyOf(kindOf(pod), unwrap(pod)) as Pod).spec?.terminationGracePeriodSeconds, 5);
    assert.equal((copyOf(kindOf(pod), unwrap(pod)) as Pod).spec?.activeDeadlineSeconds, undefined);
  });
});
