// test-tier: servers
// The security controllers and doors of issue 14 through faults of the
// control plane, on one cluster (RBAC on, every actor its own identity and
// NATS user, two hollow nodes): kill -9 of the replication actor while
// namespaces come and an aggregated ClusterRole's parts change (each
// namespace gets its one `default` ServiceAccount, the aggregated rules are
// the union of the parts); kill -9 of the api in the middle of a RoleBinding's
// create (a user's access is what the stored bindings say, a binding deleted
// right after the restart stops allowing within seconds, the audit log has no
// torn line); redis-server down 3 s under a user's requests (clean 5xx
// Statuses, never a hang, never a wrong allow or deny; RBAC changes after it
// honoured); nats-server kill -9 (the actors carry on with their identities,
// the `kubernetes` Endpoints and kube-root-ca.crt stay right — both deleted
// during the outage are re-created — and no node is taken for failed);
// the token file changed while the api is down and while it runs. The time
// from each fault's end to convergence is printed.
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { unwrap } from "@choreo/kit";
import type { Node } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ClusterRole, PolicyRule } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const NODES = ["hollow-0", "hollow-1"];
const REPLICATION_ENV = { CHOREO_EVENTS: "0" };
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One answer of the gateway; `status` 0 when it did not answer within the timeout (a hang) or the connection failed. */
interface Answer {
  status: number;
  json: Record<string, unknown>;
  ms: number;
  error?: string;
}

describe("security controllers and doors through kill -9 and outages", () => {
  let c: TestCluster;
  let admin: string;
  const tokenFile = (): string => path.join(c.dir, "api", "tokens");
  const auditFile = (): string => path.join(c.dir, "api", "audit", "audit.log");

  /** A request to the gateway with `token`, given up after `timeoutMs`. */
  const call = async (token: string, method: string, p: string, body?: unknown, timeoutMs = 15_000): Promise<Answer> => {
    const t0 = Date.now();
    try {
      const res = await fetch(`${c.httpUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${token}`, accept: "application/json", ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON: left empty, the assertion names the status
      }
      return { status: res.status, json, ms: Date.now() - t0 };
    } catch (err) {
      return { status: 0, json: {}, ms: Date.now() - t0, error: String(err) };
    }
  };
  const adminCall = (method: string, p: string, body?: unknown): Promise<Answer> => call(c.token, method, p, body);
  const mustAdmin = async (method: string, p: string, body?: unknown): Promise<Record<string, unknown>> => {
    const a = await adminCall(method, p, body);
    assert.ok(a.status >= 200 && a.status < 300, `${method} ${p}: ${a.status} ${JSON.stringify(a.json)} ${a.error ?? ""}`);
    return a.json;
  };
  /** A line `token,user,uid,"groups"` in the api's token file. */
  const tokenLine = (user: string): string => `tok-${user}-0123456789abcdef,${user},uid-${user},"sf-users"`;
  const tokenOf = (user: string): string => `tok-${user}-0123456789abcdef`;
  /** A kubeconfig for `user`'s token at the api's https gateway. */
  const kubeconfigFor = (user: string): string => {
    const file = path.join(c.dir, `kubeconfig-${user}`);
    writeFileSync(file, readFileSync(admin, "utf8").replace(`token: ${c.token}`, `token: ${tokenOf(user)}`));
    return file;
  };
  const canI = async (kc: string, ...args: string[]): Promise<string> => {
    const r = await run("kubectl", ["auth", "can-i", ...args], kc);
    return r.stdout.trim() || `(${r.code}) ${r.stderr.trim()}`;
  };
  const roleBinding = (ns: string, name: string, user: string, clusterRole: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name, namespace: ns },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
  });
  const namespace = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });

  /** Every audit line parses as JSON: the torn ones by number. */
  const tornAuditLines = (): string[] =>
    readFileSync(auditFile(), "utf8")
      .split("\n")
      .map((l, i) => [l, i + 1] as const)
      .filter(([l]) => {
        if (l === "") return false;
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      })
      .map(([l, i]) => `line ${i}: ${l.slice(0, 120)}`);

  /** The node failures so far: NodeNotReady and TaintManagerEviction Events. */
  const nodeFailureEvents = async (): Promise<string[]> =>
    (await c.client.list("events")).items
      .map((o) => unwrap(o) as { metadata?: { uid: string }; reason?: string; involvedObject?: { name: string } })
      .filter((e) => e.reason === "NodeNotReady" || e.reason === "TaintManagerEviction")
      .map((e) => `${e.reason} ${e.involvedObject?.name} ${e.metadata?.uid}`);
  const assertNodesHealthy = async (failuresBefore: string[]): Promise<void> => {
    const failures = (await nodeFailureEvents()).filter((e) => !failuresBefore.includes(e));
    assert.deepEqual(failures, [], "no node taken for failed (NodeNotReady), no pod evicted by a taint");
    const nodes = (await c.client.list("nodes")).items.map((o) => unwrap(o) as Node);
    assert.equal(nodes.length, NODES.length);
    for (const n of nodes) {
      assert.equal(n.status?.conditions.find((x) => x.type === "Ready")?.status, "True", `${n.metadata?.name} Ready`);
      assert.deepEqual(
        n.spec?.taints.filter((t) => t.key.startsWith("node.kubernetes.io/")).map((t) => t.key),
        [],
        `${n.metadata?.name} not tainted unreachable / not-ready`,
      );
    }
  };

  before(async () => {
    // bob is in the token file from the start; the others come and go in scenario 5.
    c = await startCluster({
      actors: [
        { name: "node-agent", env: { CHOREO_HOLLOW_NODES: String(NODES.length) } },
        { name: "scheduler" },
        { name: "replication", env: REPLICATION_ENV },
      ],
    });
    admin = writeKubeconfig(c);
    appendFileSync(tokenFile(), `${tokenLine("bob")}\n`);
    await withLogsOnFailure(c, async () => {
      await waitFor(async () => (await c.client.list("nodes")).items.length === NODES.length, { ...WAIT, message: "2 hollow nodes" });
    });
  });
  after(async () => {
    await c?.stop();
  });

  it("kill -9 of the replication actor while 20 namespaces come and an aggregated role's parts change: one default ServiceAccount each, the union of the parts", () =>
    withLogsOnFailure(c, async () => {
      const part = (name: string, rules: Partial<PolicyRule>[], labelled = true) => ({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name, labels: labelled ? { "sf.example.com/aggregate": "true" } : {} },
        rules,
      });
      await mustAdmin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "sf-aggregated" },
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { "sf.example.com/aggregate": "true" } }] },
      });
      await mustAdmin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", part("sf-part-a", [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }]));
      await mustAdmin(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        part("sf-part-b", [{ apiGroups: [""], resources: ["services"], verbs: ["list"] }]),
      );
      const ruleKey = (r: PolicyRule): string => JSON.stringify([r.verbs, r.apiGroups, r.resources, r.resourceNames, r.nonResourceUrls]);
      /** The aggregated role's rules and the union of its labelled parts' rules, as sorted keys. */
      const aggregation = async (): Promise<{ have: string[]; want: string[] }> => {
        const roles = (await c.client.list("clusterroles")).items.map((o) => unwrap(o) as ClusterRole);
        const agg = roles.find((r) => r.metadata?.name === "sf-aggregated");
        const parts = roles.filter((r) => r.metadata?.labels["sf.example.com/aggregate"] === "true");
        return { have: [...new Set((agg?.rules ?? []).map(ruleKey))].sort(), want: [...new Set(parts.flatMap((r) => r.rules.map(ruleKey)))].sort() };
      };
      const aggregated = async (): Promise<boolean> => {
        const { have, want } = await aggregation();
        return want.length > 0 && JSON.stringify(have) === JSON.stringify(want);
      };
      await waitFor(aggregated, { ...WAIT, message: "sf-aggregated holds the rules of sf-part-a and sf-part-b" });

      // The namespaces and the parts' changes go on; the actor is killed once a few namespaces exist, and restarted at once.
      const names = Array.from({ length: 20 }, (_, i) => `sf-ns-${i}`);
      let created = 0;
      const creating = (async () => {
        for (let i = 0; i < names.length; i += 4) {
          await Promise.all(
            names.slice(i, i + 4).map(async (n) => {
              await c.client.create(fromKubeJson(namespace(n)));
              created++;
            }),
          );
        }
      })();
      const changing = (async () => {
        await mustAdmin(
          "POST",
          "/apis/rbac.authorization.k8s.io/v1/clusterroles",
          part("sf-part-c", [{ apiGroups: [""], resources: ["configmaps"], verbs: ["watch"] }]),
        );
        await mustAdmin(
          "PUT",
          "/apis/rbac.authorization.k8s.io/v1/clusterroles/sf-part-a",
          part("sf-part-a", [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }]),
        );
        await mustAdmin(
          "PUT",
          "/apis/rbac.authorization.k8s.io/v1/clusterroles/sf-part-b",
          part("sf-part-b", [{ apiGroups: [""], resources: ["services"], verbs: ["list"] }], false),
        );
      })();
      await waitFor(() => created >= 4, { ...WAIT, intervalMs: 5, message: "the first namespaces created" });
      await c.actors.get("replication")?.kill();
      await Promise.all([creating, changing]);
      // One more part while the actor is away.
      await mustAdmin(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        part("sf-part-d", [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["get"] }]),
      );
      await c.startActor("replication", REPLICATION_ENV);
      const back = Date.now();

      const serviceAccounts = async (ns: string): Promise<string[]> =>
        (await c.client.list("serviceaccounts", { namespace: ns })).items.map((o) => unwrap(o).metadata?.name ?? "");
      await waitFor(
        async () => {
          for (const n of names) if ((await serviceAccounts(n)).length === 0) return false;
          return true;
        },
        { ...WAIT, message: "every namespace has its default ServiceAccount" },
      );
      const accountsAt = Date.now();
      await waitFor(aggregated, WAIT).catch(async (err: Error) => {
        err.message += `\n${JSON.stringify(await aggregation())}`;
        throw err;
      });
      const aggregatedAt = Date.now();
      for (const n of names) assert.deepEqual(await serviceAccounts(n), ["default"], `${n}: exactly one ServiceAccount, default`);
      const { want } = await aggregation();
      assert.equal(want.length, 3, "parts a (get, list pods), c (watch configmaps), d (get deployments); b no longer labelled");
      console.log(
        `security faults: replication kill -9: default ServiceAccounts in all 20 namespaces ${accountsAt - back} ms after the restart, ` +
          `aggregated role converged ${aggregatedAt - back} ms after`,
      );
    }));

  it("kill -9 of the api in the middle of a RoleBinding's create: access is what is stored, a deleted binding stops allowing, no torn audit line", () =>
    withLogsOnFailure(c, async () => {
      const bob = kubeconfigFor("bob");
      // Eight namespaces, a RoleBinding giving bob view in each created at once; the api is killed when the first answer comes.
      const spaces = Array.from({ length: 8 }, (_, i) => `sf-2-${i}`);
      for (const ns of spaces) await mustAdmin("POST", "/api/v1/namespaces", namespace(ns));
      assert.equal(await canI(bob, "list", "pods", "-n", "sf-2-0"), "no");
      let first!: () => void;
      const firstAnswer = new Promise<void>((r) => (first = r));
      const creating = spaces.map((ns) =>
        adminCall("POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, roleBinding(ns, "bob-view", "bob", "view")).then((a) => {
          first();
          return a;
        }),
      );
      await firstAnswer;
      await c.killApi(0);
      const answered = await Promise.all(creating);
      await c.startApi(0);
      const up = Date.now();
      assert.deepEqual(tornAuditLines(), [], "every audit line parses after the kill -9");

      // Each namespace: bob's access is what its stored binding says, and a create answered 201 is stored.
      const stored = new Map<string, boolean>();
      for (const [i, ns] of spaces.entries()) {
        const has = (await adminCall("GET", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/bob-view`)).status === 200;
        stored.set(ns, has);
        if (answered[i]!.status === 201) assert.ok(has, `${ns}: a create answered 201 is stored`);
        assert.equal((await call(tokenOf("bob"), "GET", `/api/v1/namespaces/${ns}/pods`)).status, has ? 200 : 403, `${ns}: bob's access as stored (${has})`);
      }
      const kept = spaces.filter((ns) => stored.get(ns));
      assert.ok(kept.length >= 1, "the create answered first is stored");
      const ns = kept[0]!;
      assert.equal(await canI(bob, "list", "pods", "-n", ns), "yes", `kubectl auth can-i in ${ns}`);
      // Deleted right after the restart: no stale allow.
      await mustAdmin("DELETE", `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/bob-view`);
      const deleted = Date.now();
      await waitFor(async () => (await canI(bob, "list", "pods", "-n", ns)) === "no", { ...WAIT, message: "bob's access gone with the binding" });
      const flipped = Date.now();
      assert.equal((await call(tokenOf("bob"), "GET", `/api/v1/namespaces/${ns}/pods`)).status, 403);

      // A kill -9 can stop the audit writer in the middle of a batch (the kernel gives up a large write on a fatal signal): what it
      // leaves is a line's first part without its newline. The api started again must not glue its first line onto it.
      await c.killApi(0);
      appendFileSync(auditFile(), '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"torn-by-kill');
      await c.startApi(0);
      await mustAdmin("GET", "/api/v1/namespaces/sf-2-0");
      await waitFor(() => readFileSync(auditFile(), "utf8").endsWith("\n"), { ...WAIT, message: "the audit log written after the restart" });
      assert.deepEqual(tornAuditLines(), [], "every audit line parses after a torn write");
      console.log(
        `security faults: api kill -9: creates answered ${answered.map((a) => a.status || "none").join(" ")}, stored ${kept.length} of ${spaces.length}; ` +
          `bob's access gone ${flipped - deleted} ms after a binding's delete (api up ${deleted - up} ms before)`,
      );
    }));

  it("redis-server down 3 s under a user's requests: clean Statuses, no hang, no wrong decision; RBAC changes after it honoured", () =>
    withLogsOnFailure(c, async () => {
      await mustAdmin("POST", "/api/v1/namespaces", namespace("sf-3"));
      await mustAdmin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/sf-3/rolebindings", roleBinding("sf-3", "bob-view", "bob", "view"));
      const bob = tokenOf("bob");
      await waitFor(async () => (await call(bob, "GET", "/api/v1/namespaces/sf-3/pods")).status === 200, { ...WAIT, message: "bob may list pods in sf-3" });
      // A ServiceAccount with view in sf-3 and a token for it, first used once Redis is down: the token's check that its
      // account still exists (remembered 5 s once it passed) meets the outage.
      await mustAdmin("POST", "/api/v1/namespaces/sf-3/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot" } });
      await mustAdmin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/sf-3/rolebindings", {
        ...roleBinding("sf-3", "robot-view", "", "view"),
        subjects: [{ kind: "ServiceAccount", name: "robot", namespace: "sf-3" }],
      });
      const robot = (
        (
          await mustAdmin("POST", "/api/v1/namespaces/sf-3/serviceaccounts/robot/token", {
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenRequest",
            spec: {},
          })
        )["status"] as { token: string }
      ).token;
      // bob and robot may list pods (view) but not secrets (view has none) in sf-3.
      const answers: { who: string; allowed: boolean; a: Answer }[] = [];
      let stop = false;
      let redisDown = false;
      const load = (async () => {
        while (!stop) {
          const robotToo = redisDown;
          const [pods, secrets, robotPods] = await Promise.all([
            call(bob, "GET", "/api/v1/namespaces/sf-3/pods"),
            call(bob, "GET", "/api/v1/namespaces/sf-3/secrets"),
            robotToo ? call(robot, "GET", "/api/v1/namespaces/sf-3/pods") : undefined,
          ]);
          answers.push({ who: "bob", allowed: true, a: pods }, { who: "bob", allowed: false, a: secrets });
          if (robotPods) answers.push({ who: "robot", allowed: true, a: robotPods });
          await sleep(50);
        }
      })();
      await sleep(500);
      // A namespace made just before: the api's root CA publisher and the ServiceAccount controller meet the outage with it.
      await mustAdmin("POST", "/api/v1/namespaces", namespace("sf-3-blip"));
      await c.redis.kill();
      redisDown = true;
      const down = Date.now();
      await sleep(3_000);
      await c.redis.restart();
      const cleared = Date.now();
      await waitFor(async () => (await call(bob, "GET", "/api/v1/namespaces/sf-3/pods", undefined, 5_000)).status === 200, {
        ...WAIT,
        message: "bob's list works again",
      });
      const working = Date.now();
      stop = true;
      await load;
      for (const ns of ["sf-3", "sf-3-blip"]) {
        await waitFor(async () => (await adminCall("GET", `/api/v1/namespaces/${ns}/configmaps/kube-root-ca.crt`)).status === 200, {
          ...WAIT,
          message: `kube-root-ca.crt in ${ns}`,
        });
        await waitFor(async () => (await adminCall("GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200, {
          ...WAIT,
          message: `the default ServiceAccount in ${ns}`,
        });
      }
      await waitFor(async () => (await call(robot, "GET", "/api/v1/namespaces/sf-3/pods", undefined, 5_000)).status === 200, {
        ...WAIT,
        message: "robot's list works again",
      });

      const during = answers.filter(({ a }) => a.status >= 500);
      assert.ok(during.length > 0, `some requests met the outage (${answers.length} answers)`);
      assert.ok(
        answers.some((x) => x.who === "robot"),
        "robot asked during the outage",
      );
      for (const { who, allowed, a } of answers) {
        assert.notEqual(a.status, 0, `${who}: an answer, not a hang or a dropped connection: ${a.error} after ${a.ms} ms`);
        if (a.status >= 500) {
          assert.equal(a.json["kind"], "Status", `${who}: a 5xx is a Status: ${JSON.stringify(a.json)}`);
          assert.equal(a.json["code"], a.status);
        } else assert.equal(a.status, allowed ? 200 : 403, `${who}: ${allowed ? "allowed" : "denied"} request answered ${a.status}: ${JSON.stringify(a.json)}`);
      }
      const slowest = Math.max(...answers.map(({ a }) => a.ms));
      assert.ok(slowest < 15_000, `no request hangs (slowest ${slowest} ms)`);

      // RBAC changes after the blip: the authorizer's cache follows them.
      await mustAdmin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/sf-3/rolebindings", roleBinding("sf-3", "bob-edit", "bob", "edit"));
      const granted = Date.now();
      await waitFor(async () => (await call(bob, "GET", "/api/v1/namespaces/sf-3/secrets")).status === 200, { ...WAIT, message: "edit lets bob read secrets" });
      const grantSeen = Date.now();
      await mustAdmin("DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/sf-3/rolebindings/bob-edit");
      const revoked = Date.now();
      await waitFor(async () => (await call(bob, "GET", "/api/v1/namespaces/sf-3/secrets")).status === 403, {
        ...WAIT,
        message: "bob's secrets gone with edit",
      });
      const revokeSeen = Date.now();
      console.log(
        `security faults: redis down ${cleared - down} ms: ${answers.length} answers, ${during.length} 5xx, slowest ${slowest} ms; ` +
          `working ${working - cleared} ms after redis came back; a grant after it honoured in ${grantSeen - granted} ms, a revoke in ${revokeSeen - revoked} ms`,
      );
    }));

  it("nats-server kill -9: the actors carry on as themselves, the kubernetes Endpoints and kube-root-ca.crt stay right, no node failed", () =>
    withLogsOnFailure(c, async () => {
      const failuresBefore = await nodeFailureEvents();
      const endpoints = async (): Promise<string> => JSON.stringify((await mustAdmin("GET", "/api/v1/namespaces/default/endpoints/kubernetes"))["subsets"]);
      const endpointsBefore = await endpoints();
      const rootCa = async (ns: string): Promise<string | undefined> => {
        const a = await adminCall("GET", `/api/v1/namespaces/${ns}/configmaps/kube-root-ca.crt`);
        return a.status === 200 ? (a.json["data"] as Record<string, string>)["ca.crt"] : undefined;
      };
      const ca = await rootCa("default");
      assert.ok(ca?.includes("BEGIN CERTIFICATE"));

      const bob = tokenOf("bob");
      assert.equal((await call(bob, "GET", "/api/v1/namespaces/sf-3/pods")).status, 200, "bob may list pods in sf-3 (view)");

      await c.nats.kill();
      const down = Date.now();
      // The watches cannot tell the api while the event log is away: it relists the roles every second meanwhile.
      const afterRevoke: { at: number; status: number }[] = [];
      let revoked = 0;
      // A failure in here must not leave the next scenario without NATS.
      try {
        // While NATS is away the gateway still writes (Redis); the publisher hears of it once the event log is back.
        await mustAdmin("DELETE", "/api/v1/namespaces/sf-3/configmaps/kube-root-ca.crt");
        await mustAdmin("DELETE", "/api/v1/namespaces/default/endpoints/kubernetes");
        // And bob's binding goes: from its delete on, never an allow.
        await mustAdmin("DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/sf-3/rolebindings/bob-view");
        revoked = Date.now();
        while (Date.now() - down < 4_000) {
          afterRevoke.push({ at: Date.now() - revoked, status: (await call(bob, "GET", "/api/v1/namespaces/sf-3/pods", undefined, 5_000)).status });
          await sleep(100);
        }
      } finally {
        await c.nats.restart();
      }
      const cleared = Date.now();
      const seen = afterRevoke.map((x) => `${x.status}@${x.at}`).join(" ");
      const firstRefusal = afterRevoke.findIndex((x) => x.status === 403);
      assert.ok(firstRefusal !== -1, `bob refused while NATS is still down: ${seen}`);
      assert.ok(afterRevoke[firstRefusal]!.at < 2_500, `refused within a relist's period: ${seen}`);
      assert.deepEqual(
        afterRevoke.slice(firstRefusal).filter((x) => x.status === 200),
        [],
        `once refused, never allowed again: ${seen}`,
      );
      const refusedIn = afterRevoke[firstRefusal]!.at;
      assert.equal((await call(bob, "GET", "/api/v1/namespaces/sf-3/pods")).status, 403, "bob refused in sf-3 after the outage");

      await waitFor(async () => (await rootCa("sf-3")) === ca, { ...WAIT, message: "kube-root-ca.crt re-created in sf-3" });
      const caBack = Date.now();
      // The replication actor (the ServiceAccount controller) and the scheduler act again with their own identities.
      await c.client.create(fromKubeJson(namespace("sf-4")));
      await waitFor(async () => (await c.client.list("serviceaccounts", { namespace: "sf-4" })).items.some((o) => unwrap(o).metadata?.name === "default"), {
        ...WAIT,
        message: "the ServiceAccount controller made sf-4's default",
      });
      const accountAt = Date.now();
      await c.client.create(
        fromKubeJson({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "after-nats", namespace: "sf-4" },
          spec: { containers: [{ name: "app", image: "nginx" }] },
        }),
      );
      await waitFor(async () => (toKubeJson(await c.client.get("pods", "sf-4", "after-nats")) as { status?: { phase?: string } }).status?.phase === "Running", {
        ...WAIT,
        message: "a pod created after the outage is scheduled and runs",
      });
      const podAt = Date.now();
      await waitFor(async () => (await adminCall("GET", "/api/v1/namespaces/default/endpoints/kubernetes")).status === 200, {
        ...WAIT,
        message: "the kubernetes Endpoints re-created",
      });
      assert.equal(await endpoints(), endpointsBefore, "the kubernetes Endpoints as they were");
      assert.equal(await rootCa("sf-4"), ca, "kube-root-ca.crt in the new namespace");
      // No actor was refused as unauthenticated since the outage (its log would say Unauthorized, or a Status code 401).
      for (const actor of ["replication", "scheduler", "node-agent"]) {
        const refused = readFileSync(path.join(c.dir, `${actor}.log`), "utf8")
          .split("\n")
          .filter((l) => /Unauthorized|"code":401/.test(l))
          .filter((l) => Date.parse(String((JSON.parse(l) as { time?: unknown }).time)) >= down);
        assert.deepEqual(refused, [], `${actor}: no 401 since the outage`);
      }
      await assertNodesHealthy(failuresBefore);
      console.log(
        `security faults: nats-server down ${cleared - down} ms: a binding deleted during it refused ${refusedIn} ms after the delete ` +
          `(answers during the outage: ${seen}); kube-root-ca.crt back ${caBack - cleared} ms after, a new namespace's ServiceAccount ${accountAt - cleared} ms, ` +
          `a new pod running ${podAt - cleared} ms after`,
      );
    }));

  it("the token file changed while the api is down is in force after the restart; a change while it runs within seconds", () =>
    withLogsOnFailure(c, async () => {
      const whoami = async (user: string): Promise<number> => (await call(tokenOf(user), "GET", "/api/v1/namespaces/default")).status;
      appendFileSync(tokenFile(), `${tokenLine("dave")}\n`);
      await waitFor(async () => (await whoami("dave")) === 403, { ...WAIT, message: "dave known (403: no role), not 401" });
      const removeLine = (user: string): void =>
        writeFileSync(
          tokenFile(),
          readFileSync(tokenFile(), "utf8")
            .split("\n")
            .filter((l) => !l.startsWith(`tok-${user}-`))
            .join("\n"),
        );

      await c.killApi(0);
      appendFileSync(tokenFile(), `${tokenLine("carol")}\n`);
      removeLine("dave");
      await c.startApi(0);
      assert.equal(await whoami("carol"), 403, "carol, added while the api was down, is known");
      assert.equal(await whoami("dave"), 401, "dave, removed while the api was down, is not");
      assert.equal(await whoami("bob"), 403, "bob still known");

      // While it runs: carol removed — her own token must notice, no unknown token comes to make the api look — then erin added.
      removeLine("carol");
      const removed = Date.now();
      await waitFor(async () => (await whoami("carol")) === 401, { ...WAIT, message: "carol, removed, no longer known" });
      const removedSeen = Date.now();
      appendFileSync(tokenFile(), `${tokenLine("erin")}\n`);
      const added = Date.now();
      await waitFor(async () => (await whoami("erin")) === 403, { ...WAIT, message: "erin known" });
      const addedSeen = Date.now();
      assert.equal(await whoami("bob"), 403, "bob still known");
      console.log(
        `security faults: token file changed while the api runs: a removal in force ${removedSeen - removed} ms after, an addition ${addedSeen - added} ms after`,
      );
    }));
});
