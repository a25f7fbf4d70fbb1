import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { Container, Pod, type PodSecurityContext, type SecurityContext } from "@choreo/kit/gen/choreo/core/v1/core";
import { capabilityName, capabilitySet, effectiveSecurity, imageUser, isContainerConfigError, ownVolumeDir, verifyRunAsNonRoot } from "./security-context.js";

// Loose literals in the tests: fromPartial fills in the rest.
const pod = (podSc: object, sc?: object): { pod: Pod; c: Container } => {
  const c = Container.fromPartial({ name: "c", image: "busybox", securityContext: sc as SecurityContext | undefined });
  const p = Pod.fromPartial({ metadata: { name: "x", namespace: "ns", uid: "u1" }, spec: { securityContext: podSc as PodSecurityContext, containers: [c] } });
  return { pod: p, c };
};

describe("effectiveSecurity", () => {
  it("takes the container's fields over the pod's, the groups and fsGroup from the pod", () => {
    const { pod: p, c } = pod(
      { runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true, supplementalGroups: [5, 6], fsGroup: 6, seccompProfile: { type: "RuntimeDefault" } },
      { runAsUser: 1001, seccompProfile: { type: "Unconfined" }, capabilities: { add: ["cap_net_admin"], drop: ["ALL"] }, allowPrivilegeEscalation: false },
    );
    const s = effectiveSecurity(p, c);
    assert.equal(s.runAsUser, 1001);
    assert.equal(s.runAsGroup, 2000);
    assert.equal(s.runAsNonRoot, true);
    assert.deepEqual(s.supplementalGroups, [5, 6], "fsGroup added once");
    assert.equal(s.fsGroup, 6);
    assert.equal(s.seccomp.type, "Unconfined");
    assert.deepEqual(s.capAdd, ["NET_ADMIN"]);
    assert.deepEqual(s.capDrop, ["ALL"]);
    assert.equal(s.allowPrivilegeEscalation, false);
    assert.equal(s.privileged, false);
    assert.equal(s.readOnlyRootFilesystem, false);
  });

  it("a container runAsNonRoot: false wins over the pod's true; nothing set is the runtime's defaults", () => {
    const { pod: p, c } = pod({ runAsNonRoot: true }, { runAsNonRoot: false });
    assert.equal(effectiveSecurity(p, c).runAsNonRoot, false);
    const bare = pod({});
    const s = effectiveSecurity(bare.pod, bare.c);
    assert.deepEqual(
      { ...s, seccomp: s.seccomp.type },
      {
        runAsUser: undefined,
        runAsGroup: undefined,
        runAsNonRoot: false,
        supplementalGroups: [],
        fsGroup: undefined,
        readOnlyRootFilesystem: false,
        privileged: false,
        allowPrivilegeEscalation: true,
        capAdd: [],
        capDrop: [],
        seccomp: "",
      },
    );
  });
});

describe("capabilities", () => {
  const defaults = ["CHOWN", "KILL", "NET_BIND_SERVICE"];
  const known = [...defaults, "NET_ADMIN", "SYS_ADMIN"];
  const set = (sc: object): string[] => {
    const { pod: p, c } = pod({}, sc);
    return [...capabilitySet(effectiveSecurity(p, c), defaults, known)].sort();
  };
  it("names with or without CAP_, any case", () => {
    assert.equal(capabilityName("CAP_SYS_ADMIN"), "SYS_ADMIN");
    assert.equal(capabilityName("net_raw"), "NET_RAW");
    assert.equal(capabilityName("KILL"), "KILL");
  });
  it("drop ALL + add one; drop one; add ALL; privileged; unknown names left out", () => {
    assert.deepEqual(set({ capabilities: { drop: ["ALL"], add: ["CAP_NET_BIND_SERVICE"] } }), ["NET_BIND_SERVICE"]);
    assert.deepEqual(set({ capabilities: { drop: ["kill"] } }), ["CHOWN", "NET_BIND_SERVICE"]);
    assert.deepEqual(set({ capabilities: { add: ["ALL"] } }), [...known].sort());
    assert.deepEqual(set({ privileged: true, capabilities: { drop: ["ALL"] } }), [...known].sort());
    assert.deepEqual(set({ capabilities: { add: ["BOGUS"] } }), [...defaults].sort());
    assert.deepEqual(set({}), [...defaults].sort());
  });
});

describe("verifyRunAsNonRoot", () => {
  const check = (podSc: object, sc: object | undefined, image: string): string | undefined => {
    const { pod: p, c } = pod(podSc, sc);
    try {
      verifyRunAsNonRoot(p, c, effectiveSecurity(p, c), image);
      return undefined;
    } catch (err) {
      assert.ok(isContainerConfigError(err));
      return err.message;
    }
  };
  it("refuses root from the image's user (empty, 0, 0:0) with the kubelet's message", () => {
    for (const image of ["", "0", "0:0"])
      assert.equal(check({ runAsNonRoot: true }, undefined, image), 'container has runAsNonRoot and image will run as root (pod: "x_ns(u1)", container: c)');
  });
  it("refuses a non-numeric image user, and runAsUser 0", () => {
    assert.equal(
      check({}, { runAsNonRoot: true }, "nobody"),
      'container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: "x_ns(u1)", container: c)',
    );
    assert.equal(
      check({ runAsNonRoot: true, runAsUser: 0 }, undefined, "1000"),
      `container's runAsUser breaks non-root policy (pod: "x_ns(u1)", container: c)`,
    );
  });
  it("lets a non-zero runAsUser or image uid through, and anything without runAsNonRoot", () => {
    assert.equal(check({ runAsNonRoot: true, runAsUser: 1000 }, undefined, ""), undefined);
    assert.equal(check({ runAsNonRoot: true }, undefined, "1000:1000"), undefined);
    assert.equal(check({}, undefined, ""), undefined);
    assert.equal(check({ runAsNonRoot: true }, { runAsNonRoot: false }, ""), undefined);
  });
  it("reads the image's user as the kubelet", () => {
    assert.deepEqual(imageUser(""), { uid: 0 });
    assert.deepEqual(imageUser("65534:65534"), { uid: 65534 });
    assert.deepEqual(imageUser("nobody:nogroup"), { name: "nobody" });
  });
});

describe("ownVolumeDir", () => {
  it("makes an emptyDir 0777 without fsGroup", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "choreo-sc-"));
    try {
      ownVolumeDir(dir, undefined);
      assert.equal(fs.statSync(dir).mode & 0o7777, 0o777);
      if (process.getuid?.() === 0) {
        ownVolumeDir(dir, 4321);
        const st = fs.statSync(dir);
        assert.equal(st.gid, 4321);
        assert.equal(st.mode & 0o7777, 0o2777, "setgid");
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
