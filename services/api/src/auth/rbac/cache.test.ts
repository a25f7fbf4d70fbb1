// test-tier: servers
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { expired } from "@choreo/kit";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { silentLogger } from "@choreo/kit/log";
import { waitFor } from "@choreo/kit/testing";
import type { WatchEvent, WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import { startStack, type Stack } from "../../testing/stack.js";
import type { ApiHandlers } from "../../handlers/api-handlers.js";
import type { Attributes, UserInfo } from "../types.js";
import { RbacAuthorizer } from "./authorizer.js";
import { RbacCache } from "./cache.js";

const RBAC = "rbac.authorization.k8s.io/v1";
const G = "rbac.authorization.k8s.io";
const obj = (kind: string, name: string, body: Record<string, unknown>, namespace?: string) =>
  fromKubeJson({ apiVersion: RBAC, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, ...body });
const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: "", groups, extra: {} });
/** A RoleBinding in "default" of the Role `role` to the user `userName`. */
const roleBinding = (name: string, role: string, userName: string) =>
  obj("RoleBinding", name, { roleRef: { apiGroup: G, kind: "Role", name: role }, subjects: [{ kind: "User", apiGroup: G, name: userName }] }, "default");
const get = (u: UserInfo, resource: string, namespace: string, name = "x"): Attributes => ({
  user: u,
  verb: "get",
  resourceRequest: true,
  apiGroup: "",
  apiVersion: "v1",
  resource,
  subresource: "",
  namespace,
  name,
  path: "",
});

describe("RbacCache on the registry's handlers (nats-server, redis-server)", () => {
  let s: Stack;
  let cache: RbacCache;
  let z: RbacAuthorizer;
  // The registry's list and watch; `failWatch` makes the next watches fail
  // (as a lost revision would), `errorEvent` end with an ERROR event, and
  // `breakWatches.abort()` fails the running ones.
  let failWatch = 0;
  let errorEvent = 0;
  let breakWatches = new AbortController();
  // `deaf` drops every watch event (the event log away while the store takes writes); `stale` says so to the cache.
  let deaf = false;
  let stale = false;

  before(async () => {
    s = await startStack();
    await s.client.create(obj("Role", "pod-reader", { rules: [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }] }, "default"));
    await s.client.create(roleBinding("alice", "pod-reader", "alice"));
    await s.client.create(obj("ClusterRole", "node-reader", { rules: [{ verbs: ["get"], apiGroups: [""], resources: ["nodes"] }] }));
    const registry = s.registry;
    const handlers: Pick<ApiHandlers, "list" | "watch"> = {
      list: (req) => registry.list(req),
      watch(req: WatchRequest, signal: AbortSignal): AsyncIterable<WatchEvent> {
        if (failWatch > 0) {
          failWatch--;
          return (async function* () {
            await Promise.resolve();
            throw expired("too old resource version");
          })();
        }
        if (errorEvent > 0) {
          errorEvent--;
          return (async function* () {
            await Promise.resolve();
            yield {
              type: "ERROR",
              object: undefined,
              status: expired("too old resource version").status,
              revision: 0,
              prevLabels: {},
              prevFields: {},
              hasPrev: false,
            };
          })();
        }
        const broken = breakWatches.signal;
        return (async function* () {
          for await (const ev of registry.watch(req, AbortSignal.any([signal, broken]))) if (!deaf) yield ev;
          if (broken.aborted && !signal.aborted) throw new Error("connection lost");
        })();
      },
    };
    cache = new RbacCache({ handlers, log: silentLogger(), retryMs: 10, stale: () => stale, stalePollMs: 50 });
    z = new RbacAuthorizer(cache);
    assert.equal(cache.synced(), false);
    cache.start();
    await cache.waitSynced();
  });

  after(async () => {
    await cache.stop();
    await s.stop();
  });

  it("lists the four resources, then is synced", () => {
    assert.equal(cache.synced(), true);
    assert.equal(cache.lists, 4);
    assert.equal(z.authorize(get(user("alice"), "pods", "default")).allowed, true);
    assert.equal(z.authorize(get(user("alice"), "pods", "kube-system")).allowed, false);
    assert.ok(cache.getClusterRole("node-reader"));
  });

  it("follows creates, updates and deletes through the watch", async () => {
    const nsVersion = cache.version("default");
    await s.client.create(
      obj("ClusterRoleBinding", "readers", {
        roleRef: { apiGroup: G, kind: "ClusterRole", name: "node-reader" },
        subjects: [{ kind: "Group", apiGroup: G, name: "ops" }],
      }),
    );
    await waitFor(() => z.authorize(get(user("bob", "ops"), "nodes", "")).allowed, { message: "the new ClusterRoleBinding" });
    assert.equal(cache.version("default"), nsVersion, "a ClusterRoleBinding leaves the namespace's bindings' version");
    const clusterVersion = cache.version("");
    await s.client.patch("clusterroles", "", "node-reader", "application/merge-patch+json", {
      rules: [{ verbs: ["get"], apiGroups: [""], resources: ["configmaps"] }],
    });
    await waitFor(() => z.authorize(get(user("bob", "ops"), "configmaps", "default")).allowed, { message: "the ClusterRole's new rules" });
    assert.equal(z.authorize(get(user("bob", "ops"), "nodes", "")).allowed, false);
    await s.client.delete("rolebindings", "default", "alice");
    await waitFor(() => !z.authorize(get(user("alice"), "pods", "default")).allowed, { message: "the RoleBinding deleted" });
    assert.equal(cache.version(""), clusterVersion, "a RoleBinding leaves the ClusterRoleBindings' version");
    assert.ok(cache.version("default") > nsVersion);
    assert.equal(z.authorize(get(user("bob", "ops"), "configmaps", "default")).allowed, true);
    assert.equal(cache.lists, 4, "no relist: the changes came through the watches");
  });

  it("a kept decision ends when a Role's rules or a binding change: revoke and grant seen once the cache holds them", async () => {
    await s.client.create(obj("Role", "cm-reader", { rules: [{ verbs: ["get"], apiGroups: [""], resources: ["configmaps"] }] }, "default"));
    await s.client.create(roleBinding("grace", "cm-reader", "grace"));
    const grace = user("grace");
    await waitFor(() => z.authorize(get(grace, "configmaps", "default")).allowed, { message: "grace's binding" });
    const kept = z.authorize(get(grace, "configmaps", "default", "y"));
    assert.equal(z.authorize(get(grace, "configmaps", "default", "z")), kept, "kept while nothing changed");
    // The Role's rule revoked (the binding untouched): denied once the cache has the update.
    let generation = cache.generation();
    await s.client.patch("roles", "default", "cm-reader", "application/merge-patch+json", {
      rules: [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }],
    });
    await waitFor(() => cache.generation() > generation, { message: "the Role's update in the cache" });
    assert.equal(z.authorize(get(grace, "configmaps", "default")).allowed, false, "revoked as soon as the cache holds it");
    assert.equal(z.authorize(get(grace, "secrets", "default")).allowed, true);
    // Granted back.
    generation = cache.generation();
    await s.client.patch("roles", "default", "cm-reader", "application/merge-patch+json", {
      rules: [{ verbs: ["get"], apiGroups: [""], resources: ["configmaps"] }],
    });
    await waitFor(() => cache.generation() > generation, { message: "the Role's second update in the cache" });
    assert.equal(z.authorize(get(grace, "configmaps", "default")).allowed, true);
    // The binding deleted.
    generation = cache.generation();
    await s.client.delete("rolebindings", "default", "grace");
    await waitFor(() => cache.generation() > generation, { message: "the RoleBinding's delete in the cache" });
    assert.equal(z.authorize(get(grace, "configmaps", "default")).allowed, false);
  });

  it("relists after failed watches and ERROR events, missing nothing changed meanwhile", async () => {
    const lists = cache.lists;
    failWatch = 6;
    errorEvent = 6;
    breakWatches.abort();
    breakWatches = new AbortController();
    await s.client.create(roleBinding("carol", "pod-reader", "carol"));
    await waitFor(() => failWatch + errorEvent === 0 && z.authorize(get(user("carol"), "pods", "default")).allowed, {
      message: "a binding created while the watches failed",
    });
    // 4 broken watches, 6 failed and 6 ended by an ERROR event: one relist each.
    await waitFor(() => cache.lists === lists + 16, { message: "every failure relisted once" });
    // The watches run again: a later change arrives without a relist.
    await s.client.delete("rolebindings", "default", "carol");
    await waitFor(() => !z.authorize(get(user("carol"), "pods", "default")).allowed, { message: "the delete through the watch" });
    assert.equal(cache.lists, lists + 16);
  });

  it("relists every poll while the watches may lag the store (stale), and only then", async () => {
    await s.client.create(roleBinding("dave", "pod-reader", "dave"));
    await waitFor(() => z.authorize(get(user("dave"), "pods", "default")).allowed, { message: "dave's binding" });
    deaf = true;
    await s.client.delete("rolebindings", "default", "dave");
    // Not stale: the change stays unseen (the watch hears nothing) — what the polling is for.
    const lists = cache.lists;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(z.authorize(get(user("dave"), "pods", "default")).allowed, true, "a deaf watch missed the delete");
    assert.equal(cache.lists, lists, "no relist while not stale");
    stale = true;
    await waitFor(() => !z.authorize(get(user("dave"), "pods", "default")).allowed, { message: "the delete seen by a relist" });
    await waitFor(() => cache.lists >= lists + 8, { message: "two rounds of relists" });
    stale = false;
    deaf = false;
    // The watches, restarted from the last lists, carry on.
    const after = cache.lists;
    await s.client.create(roleBinding("erin", "pod-reader", "erin"));
    await waitFor(() => z.authorize(get(user("erin"), "pods", "default")).allowed, { message: "a later binding through the watch" });
    assert.ok(cache.lists - after <= 4, `at most the round of relists under way when stale ended (${cache.lists - after})`);
    assert.equal(z.authorize(get(user("dave"), "pods", "default")).allowed, false);
  });
});
