import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { emptyMeta } from "@choreo/kit";
import { PodSpec, type Container, type SecurityContext } from "@choreo/kit/gen/choreo/core/v1/core";
import { evaluatePod, forbiddenDetail, forbiddenReason } from "./checks.js";

// Each check of the Pod Security Standards, alone and in Kubernetes' words
// (pod-security-admission/policy/check_*.go), then the order of a message.

// What a test writes: any part of a spec (PodSpec.fromPartial fills the rest).
type Loose<T> = T extends (infer U)[] ? Loose<U>[] : T extends object ? { [K in keyof T]?: Loose<T[K]> } : T;
type SpecInput = Loose<PodSpec>;
const spec = (p: SpecInput): PodSpec => PodSpec.fromPartial({ containers: [{ name: "c", image: "i" }], ...p } as PodSpec);
const container = (name: string, securityContext: Loose<SecurityContext> | undefined, extra: Loose<Container> = {}): Loose<Container> => ({
  name,
  image: "i",
  securityContext,
  ...extra,
});
// A container the restricted level accepts.
const RESTRICTED_OK = {
  allowPrivilegeEscalation: false,
  runAsNonRoot: true,
  seccompProfile: { type: "RuntimeDefault" },
  capabilities: { drop: ["ALL"], add: [] },
};

const detailAt = (level: "baseline" | "restricted", s: PodSpec, annotations: Record<string, string> = {}): string =>
  forbiddenDetail(evaluatePod(level, emptyMeta({ annotations }), s));

describe("pod security checks: baseline", () => {
  const cases: { name: string; spec: PodSpec; annotations?: Record<string, string>; want: string }[] = [
    { name: "a plain pod", spec: spec({}), want: "" },
    { name: "host network", spec: spec({ hostNetwork: true }), want: "host namespaces (hostNetwork=true)" },
    {
      name: "all host namespaces, in the order Kubernetes lists them",
      spec: spec({ hostNetwork: true, hostPid: true, hostIpc: true }),
      want: "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)",
    },
    {
      name: "privileged containers, init first",
      spec: spec({ containers: [container("b", { privileged: true })], initContainers: [container("a", { privileged: true })] }),
      want: 'privileged (containers "a", "b" must not set securityContext.privileged=true)',
    },
    { name: "privileged=false", spec: spec({ containers: [container("c", { privileged: false })] }), want: "" },
    {
      name: "capabilities beyond the default set",
      spec: spec({ containers: [container("c", { capabilities: { add: ["NET_ADMIN", "CHOWN", "SYS_ADMIN"], drop: [] } })] }),
      want: 'non-default capabilities (container "c" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add)',
    },
    {
      name: "default capabilities",
      spec: spec({ containers: [container("c", { capabilities: { add: ["CHOWN", "NET_BIND_SERVICE"], drop: [] } })] }),
      want: "",
    },
    {
      name: "hostPath volumes",
      spec: spec({
        volumes: [
          { name: "data", hostPath: { path: "/srv", type: "" } },
          { name: "e", emptyDir: {} },
          { name: "logs", hostPath: { path: "/var/log", type: "" } },
        ],
      }),
      want: 'hostPath volumes (volumes "data", "logs")',
    },
    {
      name: "host ports",
      spec: spec({
        containers: [
          container("c", undefined, {
            ports: [
              { containerPort: 80, hostPort: 8080 },
              { containerPort: 81, hostPort: 0 },
            ],
          }),
        ],
      }),
      want: 'hostPort (container "c" uses hostPort 8080)',
    },
    {
      name: "AppArmor unconfined (annotation and field)",
      spec: spec({ containers: [container("c", { appArmorProfile: { type: "Unconfined" } })] }),
      annotations: { "container.apparmor.security.beta.kubernetes.io/c": "unconfined" },
      want: 'forbidden AppArmor profiles (container "c" and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/c=\"unconfined\"")',
    },
    { name: "AppArmor runtime/default", spec: spec({}), annotations: { "container.apparmor.security.beta.kubernetes.io/c": "runtime/default" }, want: "" },
    {
      name: "SELinux type, user and role",
      spec: spec({ securityContext: { seLinuxOptions: { type: "spc_t", user: "u", role: "r", level: "" } } }),
      want: 'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set)',
    },
    { name: "SELinux container_t", spec: spec({ securityContext: { seLinuxOptions: { type: "container_t", user: "", role: "", level: "s0" } } }), want: "" },
    {
      name: "/proc unmasked",
      spec: spec({ containers: [container("c", { procMount: "Unmasked" })] }),
      want: 'procMount (container "c" must not set securityContext.procMount to "Unmasked")',
    },
    {
      name: "seccomp Unconfined on the pod and a container",
      spec: spec({ securityContext: { seccompProfile: { type: "Unconfined" } }, containers: [container("c", { seccompProfile: { type: "Unconfined" } })] }),
      want: 'seccompProfile (pod and container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
    },
    {
      name: "unsafe sysctls",
      spec: spec({
        securityContext: {
          sysctls: [
            { name: "kernel.msgmax", value: "1" },
            { name: "net.ipv4.tcp_syncookies", value: "1" },
          ],
        },
      }),
      want: "forbidden sysctls (kernel.msgmax)",
    },
    {
      name: "Windows hostProcess",
      spec: spec({ securityContext: { windowsOptions: { hostProcess: true } } }),
      want: "hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
    },
    {
      name: "ephemeral containers are checked",
      spec: spec({ ephemeralContainers: [{ name: "debug", image: "i", securityContext: { privileged: true } }] }),
      want: 'privileged (container "debug" must not set securityContext.privileged=true)',
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(detailAt("baseline", c.spec, c.annotations), c.want));
  }

  it("orders the reasons as Kubernetes: baseline checks, then the overlapping ones", () => {
    const s = spec({ hostNetwork: true, volumes: [{ name: "data", hostPath: { path: "/", type: "" } }], containers: [container("c", { privileged: true })] });
    assert.equal(
      detailAt("baseline", s),
      'host namespaces (hostNetwork=true), privileged (container "c" must not set securityContext.privileged=true), hostPath volumes (volume "data")',
    );
    assert.equal(forbiddenReason(evaluatePod("baseline", emptyMeta(), s)), "host namespaces, privileged, hostPath volumes");
    assert.deepEqual(evaluatePod("privileged", emptyMeta(), s), []);
  });
});

describe("pod security checks: restricted", () => {
  const ok = spec({ containers: [container("c", RESTRICTED_OK)] });
  const cases: { name: string; spec: PodSpec; want: string }[] = [
    { name: "a restricted container", spec: ok, want: "" },
    {
      name: "a plain pod: kubectl run's message",
      spec: spec({}),
      want:
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    },
    {
      name: "pod-level runAsNonRoot and seccomp cover the containers",
      spec: spec({
        securityContext: { runAsNonRoot: true, seccompProfile: { type: "Localhost", localhostProfile: "p.json" } },
        containers: [container("c", { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] } })],
      }),
      want: "",
    },
    {
      name: "adding a capability beyond NET_BIND_SERVICE",
      spec: spec({ containers: [container("c", { ...RESTRICTED_OK, capabilities: { drop: ["ALL"], add: ["CHOWN"] } })] }),
      want: 'unrestricted capabilities (container "c" must not include "CHOWN" in securityContext.capabilities.add)',
    },
    {
      name: "runAsNonRoot=false on the pod",
      spec: spec({ securityContext: { runAsNonRoot: false }, containers: [container("c", RESTRICTED_OK)] }),
      want: "runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)",
    },
    {
      name: "runAsUser 0",
      spec: spec({ securityContext: { runAsUser: 0 }, containers: [container("c", { ...RESTRICTED_OK, runAsUser: 0 })] }),
      want: 'runAsUser=0 (pod and container "c" must not set runAsUser=0)',
    },
    {
      name: "a hostPath volume is a restricted volume type (and not reported twice)",
      spec: spec({
        volumes: [
          { name: "h", hostPath: { path: "/", type: "" } },
          { name: "cm", configMap: { name: "x" } },
        ],
        containers: [container("c", RESTRICTED_OK)],
      }),
      want: 'restricted volume types (volume "h" uses restricted volume type "hostPath")',
    },
    {
      name: "seccomp Unconfined is reported once, by the restricted check",
      spec: spec({ containers: [container("c", { ...RESTRICTED_OK, seccompProfile: { type: "Unconfined" } })] }),
      want: 'seccompProfile (container "c" must not set securityContext.seccompProfile.type to "Unconfined")',
    },
  ];
  for (const c of cases) {
    it(c.name, () => assert.equal(detailAt("restricted", c.spec), c.want));
  }

  it("the baseline checks come first", () => {
    const s = spec({ hostPid: true, containers: [container("c", { ...RESTRICTED_OK, privileged: true, allowPrivilegeEscalation: true })] });
    assert.equal(forbiddenReason(evaluatePod("restricted", emptyMeta(), s)), "host namespaces, privileged, allowPrivilegeEscalation != false");
  });
});
