import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { alreadyExists, emptyMeta, unwrap, type ApiObject } from "@choreo/kit";
import { Namespace, type ServiceAccount } from "@choreo/kit/gen/choreo/core/v1/core";
import { silentLogger } from "@choreo/kit/log";
import { FakeCache } from "../testing.js";
import { ServiceAccountsController } from "./serviceaccounts-controller.js";

const ns = (name: string, phase = "Active", deleting = false): Namespace =>
  Namespace.fromPartial({ metadata: emptyMeta({ name, deletionTimestamp: deleting ? "2026-11-26T00:00:00Z" : "" }), status: { phase } });

function setup() {
  const created: ServiceAccount[] = [];
  let fail: Error | undefined;
  const client = {
    create: (o: ApiObject): Promise<ApiObject> => {
      if (fail) return Promise.reject(fail);
      created.push(unwrap(o) as ServiceAccount);
      return Promise.resolve(o);
    },
  };
  const namespaces = new FakeCache<Namespace>();
  const serviceAccounts = new FakeCache<ServiceAccount>();
  const ctl = new ServiceAccountsController({ client, namespaces, serviceAccounts, log: silentLogger() });
  return { namespaces, serviceAccounts, ctl, created, failWith: (e: Error | undefined) => (fail = e) };
}

describe("serviceaccounts controller", () => {
  it("creates default in an active namespace that lacks it, and again after it is deleted", async () => {
    const t = setup();
    t.namespaces.put(ns("team-a"));
    await t.ctl.reconcile("team-a");
    assert.deepEqual(
      t.created.map((s) => [s.kind, s.metadata?.namespace, s.metadata?.name]),
      [["ServiceAccount", "team-a", "default"]],
    );
    t.serviceAccounts.put(t.created[0]!);
    await t.ctl.reconcile("team-a");
    assert.equal(t.created.length, 1, "nothing while it exists");
    t.serviceAccounts.remove("team-a/default");
    await t.ctl.reconcile("team-a");
    assert.equal(t.created.length, 2);
  });

  it("leaves terminating and unknown namespaces alone; AlreadyExists is no error", async () => {
    const t = setup();
    t.namespaces.put(ns("going", "Terminating"));
    t.namespaces.put(ns("deleted", "Active", true));
    for (const n of ["going", "deleted", "unknown"]) await t.ctl.reconcile(n);
    assert.equal(t.created.length, 0);
    t.namespaces.put(ns("raced"));
    t.failWith(alreadyExists("serviceaccounts", "default"));
    await t.ctl.reconcile("raced");
    t.failWith(new Error("bus down"));
    await assert.rejects(t.ctl.reconcile("raced"), /bus down/);
  });
});
