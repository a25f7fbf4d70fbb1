import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { processSecurity, securityLine } from "./security.js";

const pod = (spec: Record<string, unknown>): Pod =>
  unwrap(fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name: "x", namespace: "ns", uid: "u" }, spec })) as Pod;
const first = (spec: Record<string, unknown>) => {
  const p = pod(spec);
  return processSecurity(p, p.spec!.containers[0]!);
};
const c = (securityContext: Record<string, unknown> = {}) => ({ name: "c", image: "busybox", securityContext });

describe("processSecurity", () => {
  it("defaults: root, Docker's capabilities less NET_RAW and MKNOD (choreo-exec's KEEP_CAPS), no flags", () => {
    const s = first({ containers: [c()] });
    assert.equal(securityLine(s), "choreo-sec 1 0 0 a00405fb 0 0 0");
    assert.equal(s.configError, undefined);
  });
  it("user, group, groups with fsGroup, drop ALL + add, read-only, unconfined, privileged", () => {
    const s = first({
      securityContext: { runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000, seccompProfile: { type: "Unconfined" } },
      containers: [c({ readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"], add: ["CAP_NET_BIND_SERVICE"] } })],
    });
    assert.equal(securityLine(s), "choreo-sec 1 1000 3000 400 400 6 2 4000 2000");
    const p = first({ containers: [c({ privileged: true })] });
    assert.equal(p.flags, 1);
    assert.equal(p.caps, "1ffffffffff", "all 41 capabilities (choreo-exec keeps those the kernel and the agent have)");
    assert.equal(p.ambient, "0");
  });
  it("config errors: runAsNonRoot without a uid (the image runs as root), Localhost seccomp, MKNOD without privileged", () => {
    assert.equal(
      first({ securityContext: { runAsNonRoot: true }, containers: [c()] }).configError,
      'container has runAsNonRoot and image will run as root (pod: "x_ns(u)", container: c)',
    );
    assert.equal(first({ securityContext: { runAsNonRoot: true, runAsUser: 5 }, containers: [c()] }).configError, undefined);
    assert.match(first({ containers: [c({ seccompProfile: { type: "Localhost", localhostProfile: "p" } })] }).configError ?? "", /Localhost/);
    assert.match(first({ containers: [c({ capabilities: { add: ["MKNOD"] } })] }).configError ?? "", /MKNOD/);
    assert.equal(first({ containers: [c({ privileged: true, capabilities: { add: ["MKNOD"] } })] }).configError, undefined);
  });
});
