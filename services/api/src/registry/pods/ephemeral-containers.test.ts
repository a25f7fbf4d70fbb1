// pods/ephemeralcontainers on the in-memory registry: what Kubernetes' podEphemeralContainersStrategy and
// ValidatePodEphemeralContainersUpdate allow and refuse (422 with the field path, nothing stored).
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { ApiError, unwrap } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import type { Pod } from "@choreo/kit/gen/choreo/core/v1/core";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";
import { testPod } from "../../testing/objects.js";

const SMP = "application/strategic-merge-patch+json";

describe("pods/ephemeralcontainers", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });
  /** A strategic merge patch on the subresource adding `containers` (what kubectl debug sends). */
  const add = (name: string, ...containers: Record<string, unknown>[]) =>
    s.registry.patch({
      resource: "pods",
      namespace: "default",
      name,
      patchType: SMP,
      patch: JSON.stringify({ spec: { ephemeralContainers: containers } }),
      subresource: "ephemeralcontainers",
      dryRun: false,
    });
  const read = async (name: string): Promise<Pod> => unwrap(await s.client.get("pods", "default", name)) as Pod;
  /** The refusal's causes as `field: message`, after checking it is a 422 that changed nothing. */
  const refused = async (name: string, write: Promise<unknown>): Promise<string[]> => {
    const rv = (await read(name)).metadata?.resourceVersion;
    const err = await rejects(write, 422, "Invalid");
    assert.equal((await read(name)).metadata?.resourceVersion, rv, "nothing was stored");
    return (err as ApiError).status.details?.causes.map((c) => `${c.field}: ${c.message}`) ?? [];
  };

  it("a patch adds an ephemeral container, defaulted, targeting a container; nothing else of the patch is taken", async () => {
    await s.client.create(testPod("dbg"));
    const added = unwrap(
      await s.registry.patch({
        resource: "pods",
        namespace: "default",
        name: "dbg",
        patchType: SMP,
        patch: JSON.stringify({
          metadata: { labels: { sneaked: "in" } },
          spec: { activeDeadlineSeconds: 5, ephemeralContainers: [{ name: "debugger", image: "busybox:1.35", command: ["ps"], targetContainerName: "c" }] },
        }),
        subresource: "ephemeralcontainers",
        dryRun: false,
      }),
    ) as Pod;
    const ec = added.spec?.ephemeralContainers[0];
    assert.equal(ec?.name, "debugger");
    assert.equal(ec?.targetContainerName, "c");
    assert.equal(ec?.imagePullPolicy, "IfNotPresent");
    assert.equal(ec?.terminationMessagePolicy, "File");
    assert.equal(added.metadata?.labels["sneaked"], undefined, "metadata is not changed through the subresource");
    assert.equal(added.spec?.activeDeadlineSeconds, undefined, "the rest of the spec is not changed through it");
    assert.equal((await read("dbg")).spec?.ephemeralContainers.length, 1);
    // A second one is added beside it (merged by name).
    await add("dbg", { name: "second", image: "busybox:1.35" });
    assert.deepEqual(
      (await read("dbg")).spec?.ephemeralContainers.map((c) => c.name),
      ["debugger", "second"],
    );
  });

  it("an existing ephemeral container can be neither changed nor removed", async () => {
    await s.client.create(testPod("frozen"));
    await add("frozen", { name: "debugger", image: "busybox:1.35" });
    assert.deepEqual(await refused("frozen", add("frozen", { name: "debugger", image: "busybox:1.36" })), [
      'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed',
    ]);
    const removal = s.registry.patch({
      resource: "pods",
      namespace: "default",
      name: "frozen",
      patchType: "application/json-patch+json",
      patch: JSON.stringify([{ op: "remove", path: "/spec/ephemeralContainers/0" }]),
      subresource: "ephemeralcontainers",
      dryRun: false,
    });
    assert.deepEqual(await refused("frozen", removal), ['spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed']);
  });

  it("ports, probes, resources, lifecycle, a restart policy and subPath mounts are refused, each with its field path", async () => {
    await s.client.create(testPod("strict", { spec: { containers: [{ name: "c", image: "nginx:1.25" }], volumes: [{ name: "v", emptyDir: {} }] } }));
    const forbidden = "Forbidden: cannot be set for an Ephemeral Container";
    const cases: [Record<string, unknown>, string][] = [
      [{ ports: [{ containerPort: 80 }] }, "ports"],
      [{ readinessProbe: { exec: { command: ["true"] } } }, "readinessProbe"],
      [{ livenessProbe: { exec: { command: ["true"] } } }, "livenessProbe"],
      [{ startupProbe: { exec: { command: ["true"] } } }, "startupProbe"],
      [{ resources: { limits: { cpu: "1" } } }, "resources"],
      [{ lifecycle: { preStop: { exec: { command: ["true"] } } } }, "lifecycle"],
      [{ restartPolicy: "Always" }, "restartPolicy"],
      [{ volumeMounts: [{ name: "v", mountPath: "/v", subPath: "x" }] }, "volumeMounts[0].subPath"],
    ];
    for (const [extra, field] of cases) {
      const causes = await refused("strict", add("strict", { name: "debugger", image: "busybox:1.35", ...extra }));
      assert.ok(causes.includes(`spec.ephemeralContainers[0].${field}: ${forbidden}`), `${field}: ${causes.join("; ")}`);
    }
    // ConfigMap and Secret references are not delivered to a container added to a running pod: refused, not ignored.
    const env = [{ name: "K", valueFrom: { configMapKeyRef: { name: "cm", key: "k" } } }];
    assert.deepEqual(
      (await refused("strict", add("strict", { name: "debugger", image: "busybox:1.35", env, envFrom: [{ secretRef: { name: "s" } }] }))).map(
        (c) => c.split(": Forbidden")[0],
      ),
      ["spec.ephemeralContainers[0].env[0].valueFrom.configMapKeyRef", "spec.ephemeralContainers[0].envFrom"],
    );
  });

  it("a name used by any container, or a target that is not a container of the pod, is refused", async () => {
    await s.client.create(testPod("names"));
    assert.deepEqual(await refused("names", add("names", { name: "c", image: "busybox:1.35" })), ['spec.ephemeralContainers[0].name: Duplicate value: "c"']);
    assert.deepEqual(await refused("names", add("names", { name: "d", image: "busybox:1.35", targetContainerName: "nope" })), [
      'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"',
    ]);
    assert.deepEqual(await refused("names", add("names", { name: "d" })), ["spec.ephemeralContainers[0].image: Required value"]);
  });

  it("an ordinary update or patch may not change them, and a create may not carry them", async () => {
    await s.client.create(testPod("plain"));
    const patch = s.registry.patch({
      resource: "pods",
      namespace: "default",
      name: "plain",
      patchType: SMP,
      patch: JSON.stringify({ spec: { ephemeralContainers: [{ name: "debugger", image: "busybox:1.35" }] } }),
      subresource: "",
      dryRun: false,
    });
    const [cause] = await refused("plain", patch);
    assert.match(cause ?? "", /^spec: Forbidden: pod updates may not change fields other than/);
    const withEphemeral = fromKubeJson({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "born-with", namespace: "default" },
      spec: { containers: [{ name: "c", image: "nginx:1.25" }], ephemeralContainers: [{ name: "debugger", image: "busybox:1.35" }] },
    });
    const err = await rejects(s.client.create(withEphemeral), 422, "Invalid");
    assert.deepEqual(
      err.status.details?.causes.map((c) => `${c.field}: ${c.message}`),
      ["spec.ephemeralContainers: Forbidden: cannot be set on create"],
    );
  });

  it("PUT on the subresource replaces the list, with the body's resourceVersion as a precondition", async () => {
    const created = unwrap(await s.client.create(testPod("put"))) as Pod;
    const body = structuredClone(created);
    body.spec!.ephemeralContainers = [
      {
        ...(
          unwrap(
            fromKubeJson({
              apiVersion: "v1",
              kind: "Pod",
              metadata: { name: "x" },
              spec: { ephemeralContainers: [{ name: "debugger", image: "busybox:1.35" }] },
            }),
          ) as Pod
        ).spec!.ephemeralContainers[0]!,
      },
    ];
    body.metadata!.labels = { changed: "no" };
    const put = unwrap(await s.registry.update({ object: { kind: { $case: "pod", value: body } }, dryRun: false, subresource: "ephemeralcontainers" })) as Pod;
    assert.deepEqual(
      put.spec?.ephemeralContainers.map((c) => c.name),
      ["debugger"],
    );
    assert.deepEqual(put.metadata?.labels, { app: "web" }, "labels are not changed through the subresource");
    // The same body again: its resourceVersion is stale now.
    await rejects(s.registry.update({ object: { kind: { $case: "pod", value: body } }, dryRun: false, subresource: "ephemeralcontainers" }), 409, "Conflict");
  });

  it("a pod template may not carry ephemeral containers", async () => {
    const rc = fromKubeJson({
      apiVersion: "v1",
      kind: "ReplicationController",
      metadata: { name: "rc", namespace: "default" },
      spec: {
        replicas: 1,
        selector: { app: "x" },
        template: {
          metadata: { labels: { app: "x" } },
          spec: { containers: [{ name: "c", image: "nginx:1.25" }], ephemeralContainers: [{ name: "debugger", image: "busybox:1.35" }] },
        },
      },
    });
    const err = await rejects(s.client.create(rc), 422, "Invalid");
    assert.ok(
      err.status.details?.causes.some(
        (c) => c.field === "spec.template.spec.ephemeralContainers" && /ephemeral containers not allowed in pod template/.test(c.message),
      ),
      err.message,
    );
  });
});
