import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { isNotFound } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { admissionScope } from "../../generic/admission-context.js";
import type { RequestScope } from "../../generic/request-scope.js";
import { bootstrap, createRegistry, type Registry } from "../../index.js";
import { MemoryStore } from "../../../storage/memory-store.js";
import { rejects } from "../../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../../testing/memory-registry.js";
import { AUDIT_VIOLATIONS } from "./admission.js";
import { DEFAULT_POD_SECURITY } from "./policy.js";

// Pod Security Admission on the memory registry: what is refused, warned
// and audited, by namespace label, for pods, workloads and namespaces.

const ns = (name: string, labels: Record<string, string> = {}) => fromKubeJson({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } });
const pod = (namespace: string, name: string, spec: Record<string, unknown> = {}) =>
  fromKubeJson({ apiVersion: "v1", kind: "Pod", metadata: { name, namespace }, spec: { containers: [{ name: "c", image: "busybox" }], ...spec } });
const HOSTPATH = { volumes: [{ name: "data", hostPath: { path: "/srv" } }] };

/** Runs `fn` with an admission context (the scope it writes with); gives back its warnings and audit annotations. */
async function admitted<T>(fn: (scope: RequestScope) => Promise<T>, user = ""): Promise<{ result: T; warnings: string[]; audit: Record<string, string> }> {
  const warnings: string[] = [];
  const audit: Record<string, string> = {};
  const result = await fn(admissionScope({ user, warn: (t) => warnings.push(t), annotate: (k, v) => (audit[k] = v) }));
  return { result, warnings, audit };
}

describe("pod security admission", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
    await s.client.create(ns("base"));
    await s.client.create(ns("priv", { "pod-security.kubernetes.io/enforce": "privileged" }));
    await s.client.create(ns("strict", { "pod-security.kubernetes.io/enforce": "restricted" }));
    await s.client.create(
      ns("warned", {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
      }),
    );
  });

  it("refuses a pod breaking the namespace's enforce level (baseline by default) with Kubernetes' 403, and stores nothing", async () => {
    await rejects(
      s.client.create(pod("base", "x", { hostPID: true, ...HOSTPATH })),
      403,
      "Forbidden",
      /^pods "x" is forbidden: violates PodSecurity "baseline:latest": host namespaces \(hostPID=true\), hostPath volumes \(volume "data"\)$/,
    );
    await assert.rejects(s.client.get("pods", "base", "x"), isNotFound);
    await rejects(s.client.create(pod("default", "x", HOSTPATH)), 403, "Forbidden", /violates PodSecurity "baseline:latest"/);
  });

  it("admits it where the namespace is privileged, and in kube-system (exempt)", async () => {
    await s.client.create(pod("priv", "host", { hostPID: true, ...HOSTPATH, containers: [{ name: "c", image: "i", securityContext: { privileged: true } }] }));
    await s.client.create(pod("kube-system", "host", { hostPID: true, ...HOSTPATH }));
  });

  it("restricted refuses a plain pod", async () => {
    // (A hardened pod is refused before admission, 422, while the api refuses the securityContext fields it does not enforce: unenforced.ts.)
    await rejects(s.client.create(pod("strict", "plain")), 403, "Forbidden", /violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);
  });

  it("warns and audits at the warn and audit levels, without refusing", async () => {
    const { warnings, audit } = await admitted((scope) => s.client.as(scope).create(pod("warned", "plain")));
    const want =
      'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
      'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
      'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")';
    assert.deepEqual(warnings, [want]);
    assert.equal(audit[AUDIT_VIOLATIONS], want);
    await s.client.get("pods", "warned", "plain");
  });

  it("a refused pod gets no warning beside its 403", async () => {
    const warnings: string[] = [];
    await rejects(s.client.as(admissionScope({ warn: (t) => warnings.push(t) })).create(pod("warned", "p2", HOSTPATH)), 403, "Forbidden");
    assert.deepEqual(warnings, []);
  });

  it("checks an ephemeral container added to a running pod, not a label or status change", async () => {
    await s.client.create(pod("base", "target"));
    const current = await s.registry.get({ resource: "pods", namespace: "base", name: "target" });
    if (current.kind?.$case !== "pod") throw new Error("not a pod");
    const p = current.kind.value;
    p.spec!.ephemeralContainers = [{ ...p.spec!.containers[0]!, name: "debug", securityContext: { privileged: true }, targetContainerName: "" } as never];
    await rejects(
      s.registry.update({ object: current, dryRun: false, fieldManager: "", subresource: "ephemeralcontainers" }),
      403,
      "Forbidden",
      /pods "target" is forbidden: violates PodSecurity "baseline:latest": privileged \(container "debug" must not set securityContext.privileged=true\)/,
    );
    // A label on a pod that would not pass today (the namespace was raised after it ran) is no new violation.
    await s.client.patch("pods", "priv", "host", "application/merge-patch+json", { metadata: { labels: { a: "b" } } });
  });

  it("warns of a workload template, never refuses it", async () => {
    const deployment = fromKubeJson({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d", namespace: "base" },
      spec: {
        selector: { matchLabels: { app: "d" } },
        template: { metadata: { labels: { app: "d" } }, spec: { hostPID: true, containers: [{ name: "c", image: "i" }] } },
      },
    });
    const { warnings } = await admitted((scope) => s.client.as(scope).create(deployment));
    assert.deepEqual(warnings, ['would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)']);
    const cron = fromKubeJson({
      apiVersion: "batch/v1",
      kind: "CronJob",
      metadata: { name: "cj", namespace: "warned" },
      spec: { schedule: "* * * * *", jobTemplate: { spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "c", image: "i" }] } } } } },
    });
    assert.deepEqual((await admitted((scope) => s.client.as(scope).create(cron))).warnings, [
      'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    ]);
    // An update that leaves the template alone (a label) warns no more.
    assert.deepEqual(
      (await admitted((scope) => s.client.as(scope).patch("cronjobs", "warned", "cj", "application/merge-patch+json", { metadata: { labels: { a: "b" } } })))
        .warnings,
      [],
    );
  });

  it("refuses an unknown level or version in a namespace's labels (422), on create and when changed", async () => {
    await rejects(
      s.client.create(ns("bad", { "pod-security.kubernetes.io/enforce": "strict" })),
      422,
      "Invalid",
      /metadata.labels\[pod-security.kubernetes.io\/enforce\]: Invalid value: "strict": must be one of privileged, baseline, restricted/,
    );
    await rejects(
      s.client.patch("namespaces", "", "base", "application/merge-patch+json", { metadata: { labels: { "pod-security.kubernetes.io/warn-version": "1.25" } } }),
      422,
      "Invalid",
      /pod-security.kubernetes.io\/warn-version\]: Invalid value: "1.25": must be "latest" or "v1.x"/,
    );
    await s.client.patch("namespaces", "", "base", "application/merge-patch+json", {
      metadata: { labels: { "pod-security.kubernetes.io/warn-version": "v1.31" } },
    });
  });

  it("raising a namespace's enforce level warns of the pods that break it", async () => {
    await s.client.create(ns("raise", { "pod-security.kubernetes.io/enforce": "privileged" }));
    for (const name of ["b", "a", "c"]) await s.client.create(pod("raise", name, HOSTPATH));
    await s.client.create(pod("raise", "net", { hostPID: true }));
    await s.client.create(pod("raise", "fine"));
    const { warnings } = await admitted((scope) =>
      s.client
        .as(scope)
        .patch("namespaces", "", "raise", "application/merge-patch+json", { metadata: { labels: { "pod-security.kubernetes.io/enforce": "baseline" } } }),
    );
    assert.deepEqual(warnings, [
      'existing pods in namespace "raise" violate the new PodSecurity enforce level "baseline:latest"',
      "a (and 2 other pods): hostPath volumes",
      "net: host namespaces",
    ]);
    // Lowering it, or another label, says nothing.
    const lowered = await admitted((scope) =>
      s.client.as(scope).patch("namespaces", "", "raise", "application/merge-patch+json", {
        metadata: { labels: { "pod-security.kubernetes.io/enforce": "privileged", x: "y" } },
      }),
    );
    assert.deepEqual(lowered.warnings, []);
  });
});

describe("pod security admission configuration", () => {
  let registry: Registry;
  before(async () => {
    registry = createRegistry({
      store: new MemoryStore(),
      serviceCidr: "10.96.0.0/16",
      log: silentLogger(),
      podSecurity: { ...DEFAULT_POD_SECURITY, defaults: { enforce: "restricted", warn: "restricted", audit: "restricted" }, exemptUsernames: ["ops"] },
    });
    await bootstrap(registry);
  });

  it("the default enforce level applies to namespaces without labels; exempt users pass", async () => {
    const plain = pod("default", "plain");
    await rejects(registry.create({ object: plain, dryRun: false, fieldManager: "" }), 403, "Forbidden", /violates PodSecurity "restricted:latest"/);
    await admitted((scope) => registry.create({ object: plain, dryRun: false, fieldManager: "" }, scope), "ops");
  });
});
