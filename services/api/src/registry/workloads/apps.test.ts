import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { fromKubeJson, toKubeJson, type KubeJson } from "@choreo/kit/kube-json";
import { rejects } from "../../testing/api-assert.js";
import { startMemoryRegistry, type MemoryRegistry } from "../../testing/memory-registry.js";

// ReplicaSet and Deployment (apps/v1) over the in-memory registry: Kubernetes'
// defaults, the 422s of pkg/apis/apps/validation, generation and the scale subresource.

function deployment(name: string, spec: KubeJson = {}): KubeJson {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "default" },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "c", image: "nginx" }] } },
      ...spec,
    },
  };
}

function replicaSet(name: string, spec: KubeJson = {}): KubeJson {
  return { ...deployment(name, spec), kind: "ReplicaSet" };
}

const spec = (o: KubeJson): KubeJson => o["spec"] as KubeJson;

describe("apps/v1 ReplicaSet and Deployment", () => {
  let s: MemoryRegistry;
  before(async () => {
    s = await startMemoryRegistry();
  });

  /** Creates, expects a 422 naming `field` (and `message`), and proves nothing was stored. */
  async function refused(resource: string, obj: KubeJson, field: string, message: RegExp): Promise<void> {
    const err = await rejects(s.client.create(fromKubeJson(obj)), 422, "Invalid");
    const causes = err.status.details?.causes ?? [];
    const cause = causes.find((c) => c.field === field);
    assert.ok(cause, `no cause on ${field}: ${JSON.stringify(causes)}`);
    assert.match(cause.message, message);
    const name = (obj["metadata"] as KubeJson)["name"] as string;
    await rejects(s.client.get(resource, "default", name), 404, "NotFound");
  }

  it("defaults a Deployment as Kubernetes' apps/v1 SetDefaults does", async () => {
    const d = toKubeJson(await s.client.create(fromKubeJson(deployment("defaults"))));
    const sp = spec(d);
    assert.equal(sp["replicas"], 1);
    assert.deepEqual(sp["strategy"], { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%" } });
    assert.equal(sp["revisionHistoryLimit"], 10);
    assert.equal(sp["progressDeadlineSeconds"], 600);
    const pod = (sp["template"] as KubeJson)["spec"] as KubeJson;
    assert.equal(pod["restartPolicy"], "Always");
    assert.equal(pod["dnsPolicy"], "ClusterFirst");
    assert.equal((d["metadata"] as KubeJson)["generation"], 1);
  });

  it("keeps what was given and gives Recreate no rollingUpdate", async () => {
    const d = toKubeJson(await s.client.create(fromKubeJson(deployment("recreate", { replicas: 0, strategy: { type: "Recreate" }, revisionHistoryLimit: 0 }))));
    assert.equal(spec(d)["replicas"], 0);
    assert.deepEqual(spec(d)["strategy"], { type: "Recreate" });
    assert.equal(spec(d)["revisionHistoryLimit"], 0);
  });

  it("defaults a ReplicaSet's replicas to 1 and drops a status given on create", async () => {
    const rs = toKubeJson(await s.client.create(fromKubeJson({ ...replicaSet("rs-defaults"), status: { replicas: 7, readyReplicas: 7 } })));
    assert.deepEqual(rs["status"], { replicas: 0 });
    const selected = await s.client.list("replicasets", { namespace: "default", fieldSelector: "status.replicas=0" });
    const names = selected.items.map((o) => (toKubeJson(o)["metadata"] as KubeJson)["name"]);
    assert.ok(names.includes("rs-defaults"), "status.replicas reads 0, as Kubernetes' int32");
    assert.equal(spec(rs)["replicas"], 1);
    assert.equal(((spec(rs)["template"] as KubeJson)["spec"] as KubeJson)["restartPolicy"], "Always");
  });

  for (const resource of ["deployments", "replicasets"]) {
    const make = resource === "deployments" ? deployment : replicaSet;
    it(`refuses a ${resource} selector that is missing, empty, invalid or does not select the template`, async () => {
      const noSel = make("no-sel");
      delete spec(noSel)["selector"];
      await refused(resource, noSel, "spec.selector", /Required value/);
      await refused(resource, make("empty-sel", { selector: {} }), "spec.selector", /empty selector is invalid for deployment/);
      await refused(
        resource,
        make("mismatch", { selector: { matchLabels: { app: "other" } } }),
        "spec.template.metadata.labels",
        /`selector` does not match template `labels`/,
      );
      const expr = (e: KubeJson): KubeJson => ({ selector: { matchLabels: { app: "e" }, matchExpressions: [e] } });
      const tplE = { template: { metadata: { labels: { app: "e" } }, spec: { containers: [{ name: "c", image: "nginx" }] } } };
      await refused(
        resource,
        make("bad-op", { ...expr({ key: "app", operator: "Near", values: ["x"] }), ...tplE }),
        "spec.selector.matchExpressions[0].operator",
        /not a valid selector operator/,
      );
      await refused(
        resource,
        make("in-empty", { ...expr({ key: "tier", operator: "In", values: [] }), ...tplE }),
        "spec.selector.matchExpressions[0].values",
        /Required value/,
      );
      await refused(
        resource,
        make("exists-values", { ...expr({ key: "tier", operator: "Exists", values: ["a"] }), ...tplE }),
        "spec.selector.matchExpressions[0].values",
        /may not be specified when `operator` is 'Exists' or 'DoesNotExist'/,
      );
      await refused(
        resource,
        make("bad-value", { ...expr({ key: "tier", operator: "NotIn", values: ["not valid!"] }), ...tplE }),
        "spec.selector.matchExpressions[0].values[0]",
        /Invalid value/,
      );
    });

    it(`refuses a ${resource} template that is not restartPolicy Always, has activeDeadlineSeconds, or asks for an unenforced field`, async () => {
      const tpl = (restartPolicy: string, extra: KubeJson = {}): KubeJson => ({
        metadata: { labels: { app: "t" } },
        spec: { restartPolicy, containers: [{ name: "c", image: "nginx" }], ...extra },
      });
      const sel = { selector: { matchLabels: { app: "t" } } };
      await refused(resource, make("never", { ...sel, template: tpl("Never") }), "spec.template.spec.restartPolicy", /Unsupported value: "Never"/);
      await refused(
        resource,
        make("deadline", { ...sel, template: tpl("Always", { activeDeadlineSeconds: 5 }) }),
        "spec.template.spec.activeDeadlineSeconds",
        /activeDeadlineSeconds in ReplicaSet is not Supported/,
      );
      await refused(
        resource,
        make("runtime-class", { ...sel, template: tpl("Always", { runtimeClassName: "gvisor" }) }),
        "spec.template.spec.runtimeClassName",
        /does not enforce/,
      );
      await refused(resource, make("negative", { replicas: -1 }), "spec.replicas", /must be greater than or equal to 0/);
    });

    it(`refuses changing a ${resource} selector, storing nothing`, async () => {
      const name = `immutable-${resource}`;
      const created = toKubeJson(await s.client.create(fromKubeJson(make(name))));
      const changed = structuredClone(created);
      spec(changed)["selector"] = { matchLabels: { app: name, tier: "web" } };
      ((spec(changed)["template"] as KubeJson)["metadata"] as KubeJson)["labels"] = { app: name, tier: "web" };
      const err = await rejects(s.client.update(fromKubeJson(changed)), 422, "Invalid");
      assert.ok(
        err.status.details?.causes.some((c) => c.field === "spec.selector" && /field is immutable/.test(c.message)),
        err.message,
      );
      assert.deepEqual(toKubeJson(await s.client.get(resource, "default", name)), created);
    });
  }

  it("refuses a Deployment strategy Kubernetes refuses", async () => {
    const ru = (maxSurge: unknown, maxUnavailable: unknown): KubeJson => ({ strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge, maxUnavailable } } });
    await refused("deployments", deployment("zero-zero", ru(0, 0)), "spec.strategy.rollingUpdate.maxUnavailable", /may not be 0 when `maxSurge` is 0/);
    await refused("deployments", deployment("zero-pct", ru("0%", 0)), "spec.strategy.rollingUpdate.maxUnavailable", /may not be 0 when `maxSurge` is 0/);
    await refused("deployments", deployment("over-100", ru(1, "101%")), "spec.strategy.rollingUpdate.maxUnavailable", /must not be greater than 100%/);
    await refused(
      "deployments",
      deployment("not-pct", ru("20Percent", 1)),
      "spec.strategy.rollingUpdate.maxSurge",
      /a valid percent string must be a numeric string/,
    );
    await refused("deployments", deployment("neg-surge", ru(-1, 1)), "spec.strategy.rollingUpdate.maxSurge", /must be greater than or equal to 0/);
    await refused(
      "deployments",
      deployment("recreate-ru", { strategy: { type: "Recreate", rollingUpdate: { maxSurge: 1 } } }),
      "spec.strategy.rollingUpdate",
      /may not be specified when strategy `type` is 'Recreate'/,
    );
    await refused("deployments", deployment("bad-type", { strategy: { type: "BlueGreen" } }), "spec.strategy", /Unsupported value/);
    await refused(
      "deployments",
      deployment("deadline", { minReadySeconds: 30, progressDeadlineSeconds: 30 }),
      "spec.progressDeadlineSeconds",
      /must be greater than minReadySeconds/,
    );
    await refused("deployments", deployment("neg-history", { revisionHistoryLimit: -1 }), "spec.revisionHistoryLimit", /must be greater than or equal to 0/);
  });

  it("bumps generation on a spec change (and a Deployment's annotations) only; status goes through the status subresource", async () => {
    const created = toKubeJson(await s.client.create(fromKubeJson(deployment("gen"))));
    const labelled = structuredClone(created);
    (labelled["metadata"] as KubeJson)["labels"] = { team: "a" };
    const afterLabel = toKubeJson(await s.client.update(fromKubeJson(labelled)));
    assert.equal((afterLabel["metadata"] as KubeJson)["generation"], 1);
    // A Deployment's annotations are a new generation (Kubernetes copies them to its ReplicaSets); a ReplicaSet's are not.
    const annotated = structuredClone(afterLabel);
    (annotated["metadata"] as KubeJson)["annotations"] = { note: "x" };
    const afterAnnotation = toKubeJson(await s.client.update(fromKubeJson(annotated)));
    assert.equal((afterAnnotation["metadata"] as KubeJson)["generation"], 2);
    const rs = toKubeJson(await s.client.create(fromKubeJson(replicaSet("gen-rs"))));
    (rs["metadata"] as KubeJson)["annotations"] = { note: "x" };
    assert.equal((toKubeJson(await s.client.update(fromKubeJson(rs)))["metadata"] as KubeJson)["generation"], 1);
    const scaled = structuredClone(afterAnnotation);
    spec(scaled)["replicas"] = 4;
    const afterSpec = toKubeJson(await s.client.update(fromKubeJson(scaled)));
    assert.equal((afterSpec["metadata"] as KubeJson)["generation"], 3);
    const withStatus = structuredClone(afterSpec);
    withStatus["status"] = { observedGeneration: 3, replicas: 4, updatedReplicas: 4, readyReplicas: 3, availableReplicas: 3 };
    const afterStatus = toKubeJson(await s.client.updateStatus(fromKubeJson(withStatus)));
    assert.equal((afterStatus["metadata"] as KubeJson)["generation"], 3);
    assert.equal((afterStatus["status"] as KubeJson)["observedGeneration"], 3);
    assert.equal((afterStatus["status"] as KubeJson)["readyReplicas"], 3);
  });

  it("scales a Deployment and a ReplicaSet, with the selector as a string", async () => {
    await s.client.create(
      fromKubeJson(
        deployment("scale-d", {
          selector: { matchLabels: { app: "scale-d" }, matchExpressions: [{ key: "tier", operator: "In", values: ["web", "api"] }] },
          template: { metadata: { labels: { app: "scale-d", tier: "web" } }, spec: { containers: [{ name: "c", image: "nginx" }] } },
        }),
      ),
    );
    const scale = await s.client.getScale("deployments", "default", "scale-d");
    assert.equal(scale.spec?.replicas, 1);
    assert.equal(scale.status?.selector, "app=scale-d,tier in (api,web)");
    assert.equal((await s.client.updateScale("deployments", "default", "scale-d", 5)).spec?.replicas, 5);
    const d = toKubeJson(await s.client.get("deployments", "default", "scale-d"));
    assert.equal(spec(d)["replicas"], 5);
    assert.equal((d["metadata"] as KubeJson)["generation"], 2);

    await s.client.create(fromKubeJson(replicaSet("scale-rs")));
    assert.equal((await s.client.getScale("replicasets", "default", "scale-rs")).status?.selector, "app=scale-rs");
    assert.equal((await s.client.updateScale("replicasets", "default", "scale-rs", 0)).spec?.replicas, 0);
    await rejects(s.client.updateScale("replicasets", "default", "scale-rs", -1), 422, "Invalid");
  });
});
