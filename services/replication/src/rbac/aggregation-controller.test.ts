import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conflict, unwrap, type ApiObject } from "@choreo/kit";
import type { ClusterRole } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache } from "../testing.js";
import { AggregationController } from "./aggregation-controller.js";

function role(name: string, labels: Record<string, string>, rules: Record<string, unknown>[], aggregateTo?: string): ClusterRole {
  return unwrap(
    fromKubeJson({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name, labels, resourceVersion: "1" },
      rules,
      ...(aggregateTo ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregateTo]: "true" } }] } } : {}),
    }),
  ) as ClusterRole;
}

const TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view";
const readPods = { verbs: ["get"], apiGroups: [""], resources: ["pods"] };
const readJobs = { verbs: ["get"], apiGroups: ["batch"], resources: ["jobs"] };

function setup() {
  const updates: ClusterRole[] = [];
  let fail: Error | undefined;
  const client = {
    update: (o: ApiObject): Promise<ApiObject> => {
      if (fail) return Promise.reject(fail);
      updates.push(unwrap(o) as ClusterRole);
      return Promise.resolve(o);
    },
  };
  const roles = new FakeCache<ClusterRole>();
  const ctl = new AggregationController({ client, clusterRoles: roles, log: silentLogger() });
  return { roles, ctl, updates, failWith: (e: Error | undefined) => (fail = e) };
}

const rulesOf = (r: ClusterRole | undefined) => r?.rules.map((x) => `${x.apiGroups.join()}/${x.resources.join()}:${x.verbs.join()}`);

describe("clusterrole aggregation controller", () => {
  it("writes the union of the matching roles' rules, in name order, each once; nothing when it already holds them", async () => {
    const t = setup();
    t.roles.put(role("view", {}, [], TO_VIEW));
    t.roles.put(role("b-jobs", { [TO_VIEW]: "true" }, [readJobs, readPods]));
    t.roles.put(role("a-pods", { [TO_VIEW]: "true" }, [readPods]));
    t.roles.put(role("other", { team: "x" }, [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]));
    await t.ctl.reconcile("view");
    assert.deepEqual(rulesOf(t.updates.at(-1)), ["/pods:get", "batch/jobs:get"]);
    assert.equal(t.updates.at(-1)?.metadata?.resourceVersion, "1", "written on the version read");
    // The cache now holds the written role: a sync writes nothing.
    t.roles.put(t.updates.at(-1)!);
    const n = t.updates.length;
    await t.ctl.reconcile("view");
    assert.equal(t.updates.length, n);
  });

  it("follows roles as they come, change and go", async () => {
    const t = setup();
    t.roles.put(role("view", {}, [], TO_VIEW));
    t.roles.put(role("pods", { [TO_VIEW]: "true" }, [readPods]));
    await t.ctl.reconcile("view");
    t.roles.put(t.updates.at(-1)!);
    // A label removed: the rule leaves view.
    t.roles.put(role("pods", {}, [readPods]));
    await t.ctl.reconcile("view");
    assert.deepEqual(rulesOf(t.updates.at(-1)), []);
    t.roles.put(t.updates.at(-1)!);
    t.roles.put(role("jobs", { [TO_VIEW]: "true" }, [readJobs]));
    await t.ctl.reconcile("view");
    assert.deepEqual(rulesOf(t.updates.at(-1)), ["batch/jobs:get"]);
    t.roles.put(t.updates.at(-1)!);
    t.roles.remove("jobs");
    await t.ctl.reconcile("view");
    assert.deepEqual(rulesOf(t.updates.at(-1)), []);
    // A role without an aggregationRule is never written; one gone is nothing to do.
    const n = t.updates.length;
    await t.ctl.reconcile("pods");
    await t.ctl.reconcile("gone");
    assert.equal(t.updates.length, n);
  });

  it("chains: a role aggregated into another carries its aggregated rules there", async () => {
    const t = setup();
    t.roles.put(role("edit", {}, [], "rbac.authorization.k8s.io/aggregate-to-edit"));
    t.roles.put(role("view", { "rbac.authorization.k8s.io/aggregate-to-edit": "true" }, [], TO_VIEW));
    t.roles.put(role("pods", { [TO_VIEW]: "true" }, [readPods]));
    await t.ctl.reconcile("view");
    t.roles.put(t.updates.at(-1)!);
    await t.ctl.reconcile("edit");
    assert.equal(t.updates.at(-1)?.metadata?.name, "edit");
    assert.deepEqual(rulesOf(t.updates.at(-1)), ["/pods:get"]);
  });

  it("leaves a conflicting write to the next sync", async () => {
    const t = setup();
    t.roles.put(role("view", {}, [], TO_VIEW));
    t.roles.put(role("pods", { [TO_VIEW]: "true" }, [readPods]));
    t.failWith(conflict("clusterroles", "view", "the object has been modified"));
    await t.ctl.reconcile("view");
    t.failWith(new Error("bus down"));
    await assert.rejects(t.ctl.reconcile("view"), /bus down/);
  });
});
