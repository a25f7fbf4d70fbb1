// test-tier: servers
// kubectl 1.20 and 1.32 against the security kinds on a real control plane
// (api, nats-server, redis-server, the replication actor — aggregation and
// default ServiceAccounts): the generators (create role, clusterrole with an
// aggregation rule, rolebinding, clusterrolebinding, serviceaccount), get
// -o wide, the describers (which read the typed fields), auth can-i --list,
// auth reconcile creating then updating, get sa -o yaml, create token and
// auth whoami (1.32; 1.20 has neither), and kubectl apply of a typical
// operator's RBAC manifest — every printout as a real Kubernetes prints it.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { waitFor } from "@choreo/kit/testing";
import { startCluster, withLogsOnFailure, type TestCluster } from "./support/cluster.js";
import { run, writeKubeconfig } from "./support/kubectl.js";

const KUBECTL_120 = "/var/lib/choreo/tools/kubectl-1.20/usr/bin/kubectl";
const WAIT = { timeoutMs: 60_000, intervalMs: 300 };
const CLIENTS: { name: string; bin: string; v132: boolean }[] = [
  { name: "1.32", bin: "kubectl", v132: true },
  ...(existsSync(KUBECTL_120) ? [{ name: "1.20", bin: KUBECTL_120, v132: false }] : []),
];

/** An operator's RBAC: its namespace and account, an aggregated manager role and its part, a view extension, the bindings. */
const operatorManifest = (p: string) => `apiVersion: v1
kind: Namespace
metadata: {name: ${p}-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: ${p}-controller, namespace: ${p}-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${p}-manager
  labels: {app.kubernetes.io/name: ${p}}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {${p}.example.com/aggregate-to-manager: "true"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${p}-manager-core
  labels: {${p}.example.com/aggregate-to-manager: "true"}
rules:
- apiGroups: [""]
  resources: [pods, configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [apps]
  resources: [deployments, deployments/status]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ${p}-viewer
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
rules:
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [${p}-config]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ${p}-manager-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${p}-manager}
subjects:
- {kind: ServiceAccount, name: ${p}-controller, namespace: ${p}-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ${p}-leader-election, namespace: ${p}-system}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ${p}-leader-election, namespace: ${p}-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ${p}-leader-election}
subjects:
- {kind: ServiceAccount, name: ${p}-controller, namespace: ${p}-system}
`;

/** Roles and bindings for kubectl auth reconcile, the Role's verbs given. */
const reconcileManifest = (ns: string, verbs: string, subjects: string) => `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rec-role, namespace: ${ns}}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [${verbs}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rec-binding, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rec-role}
subjects:
${subjects}
`;

describe("kubectl 1.20 and 1.32 against the RBAC kinds and ServiceAccounts", () => {
  let c: TestCluster;
  let kc: string;

  before(async () => {
    c = await startCluster({ actors: [{ name: "replication", env: { CHOREO_EVENTS: "0" } }] });
    kc = writeKubeconfig(c);
  });
  after(async () => {
    await c?.stop();
  });

  for (const client of CLIENTS) {
    const k = (...args: string[]) => run(client.bin, args, kc);
    const ok = async (...args: string[]): Promise<string> => {
      const r = await k(...args);
      assert.equal(r.code, 0, `kubectl ${client.name} ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    const ns = `k${client.name.replace(".", "")}`;

    it(`kubectl ${client.name}: the generators, get -o wide and the describers`, () =>
      withLogsOnFailure(c, async () => {
        await ok("create", "namespace", ns);
        await ok("create", "serviceaccount", "bot", "-n", ns);
        await ok("create", "role", "reader", "-n", ns, "--verb=get,list", "--resource=pods,deployments.apps", "--resource-name=web");
        await ok("create", "clusterrole", `${ns}-probe`, "--verb=get", "--non-resource-url=/healthz,/version");
        await ok("create", "clusterrole", `${ns}-aggregate`, `--aggregation-rule=${ns}.example.com/part=true`);
        await ok("create", "clusterrole", `${ns}-part`, "--verb=list", "--resource=secrets");
        await ok("label", "clusterrole", `${ns}-part`, `${ns}.example.com/part=true`);
        await ok("create", "rolebinding", "readers", "-n", ns, "--role=reader", "--user=alice", "--group=devs", `--serviceaccount=${ns}:bot`);
        await ok("create", "clusterrolebinding", `${ns}-probers`, `--clusterrole=${ns}-probe`, "--group=probers");

        assert.match(await ok("get", "roles", "-n", ns, "-o", "wide"), /^NAME\s+CREATED AT\nreader\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
        assert.match(await ok("get", "clusterroles", `${ns}-probe`, "-o", "wide"), /^NAME\s+CREATED AT\nk\d+-probe\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
        assert.match(
          await ok("get", "rolebindings", "readers", "-n", ns, "-o", "wide"),
          new RegExp(`^NAME\\s+ROLE\\s+AGE\\s+USERS\\s+GROUPS\\s+SERVICEACCOUNTS\\nreaders\\s+Role/reader\\s+\\d+s\\s+alice\\s+devs\\s+${ns}/bot\\n$`),
        );
        assert.match(
          await ok("get", "clusterrolebindings", `${ns}-probers`, "-o", "wide"),
          new RegExp(`^NAME\\s+ROLE\\s+AGE\\s+USERS\\s+GROUPS\\s+SERVICEACCOUNTS\\n${ns}-probers\\s+ClusterRole/${ns}-probe\\s+\\d+s\\s+probers\\s*\\n$`),
        );
        assert.match(await ok("get", "sa", "-n", ns), /^NAME\s+SECRETS\s+AGE\nbot\s+0\s+\d+s\ndefault\s+0\s+\d+s\n$/);

        assert.equal(
          await ok("describe", "role", "reader", "-n", ns),
          `Name:         reader
Labels:       <none>
Annotations:  <none>
PolicyRule:
  Resources         Non-Resource URLs  Resource Names  Verbs
  ---------         -----------------  --------------  -----
  pods              []                 [web]           [get list]
  deployments.apps  []                 [web]           [get list]
`,
        );
        assert.equal(
          await ok("describe", "clusterrole", `${ns}-probe`),
          `Name:         ${ns}-probe
Labels:       <none>
Annotations:  <none>
PolicyRule:
  Resources  Non-Resource URLs  Resource Names  Verbs
  ---------  -----------------  --------------  -----
             [/healthz]         []              [get]
             [/version]         []              [get]
`,
        );
        assert.equal(
          await ok("describe", "rolebinding", "readers", "-n", ns),
          `Name:         readers
Labels:       <none>
Annotations:  <none>
Role:
  Kind:  Role
  Name:  reader
Subjects:
  Kind            Name   Namespace
  ----            ----   ---------
  User            alice  
  Group           devs   
  ServiceAccount  bot    ${ns}
`,
        );
        // The aggregated role, once the controller has filled it, describes with its part's rule.
        await waitFor(async () => /secrets\s+\[\]\s+\[\]\s+\[list\]/.test(await ok("describe", "clusterrole", `${ns}-aggregate`)) || undefined, {
          ...WAIT,
          message: `${ns}-aggregate gains ${ns}-part's rule`,
        });
        const agg = JSON.parse(await ok("get", "clusterrole", `${ns}-aggregate`, "-o", "json")) as { aggregationRule: unknown; rules: unknown };
        assert.deepEqual(agg.aggregationRule, { clusterRoleSelectors: [{ matchLabels: { [`${ns}.example.com/part`]: "true" } }] });
        assert.deepEqual(agg.rules, [{ apiGroups: [""], resources: ["secrets"], verbs: ["list"] }]);

        // A ServiceAccount as yaml: no secrets listed, the fields a real apiserver returns.
        const sa = await ok("get", "sa", "bot", "-n", ns, "-o", "yaml");
        assert.match(
          sa,
          new RegExp(
            `^apiVersion: v1\\nkind: ServiceAccount\\nmetadata:\\n  creationTimestamp: "[^"]+"\\n(  generation: 1\\n)?  name: bot\\n  namespace: ${ns}\\n  resourceVersion: "\\d+"\\n  uid: [0-9a-f-]{36}\\n$`,
          ),
        );
      }));

    it(`kubectl ${client.name}: auth can-i --list, and as a ServiceAccount`, () =>
      withLogsOnFailure(c, async () => {
        const admin = await ok("auth", "can-i", "--list", "-n", ns);
        const lines = admin.split("\n");
        assert.match(lines[0] ?? "", /^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs$/);
        assert.match(lines[1] ?? "", /^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$/, "the administrator may do anything");
        // cluster-admin's rules through its binding to system:masters, once: the privileged group resolves no rules of its own.
        assert.equal(lines.filter((l) => /^\s+\[\*\]\s+\[\]\s+\[\*\]$/.test(l)).length, 1, admin);
        const bot = await ok("auth", "can-i", "--list", "-n", ns, `--as=system:serviceaccount:${ns}:bot`);
        assert.match(bot, /\npods\s+\[\]\s+\[web\]\s+\[get list\]\n/);
        assert.match(bot, /\ndeployments\.apps\s+\[\]\s+\[web\]\s+\[get list\]\n/);
        assert.match(bot, /\nselfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]\n/);
        assert.doesNotMatch(bot, /\*\.\*/);
        const can = async (...args: string[]) => (await k("auth", "can-i", ...args, "-n", ns, `--as=system:serviceaccount:${ns}:bot`)).stdout.trim();
        assert.equal(await can("get", "pods/web"), "yes");
        assert.equal(await can("get", "pods/other"), "no");
        assert.equal(await can("delete", "pods/web"), "no");
      }));

    it(`kubectl ${client.name}: auth reconcile creates, then adds the missing rule and subject`, () =>
      withLogsOnFailure(c, async () => {
        const file = path.join(c.dir, `reconcile-${ns}.yaml`);
        writeFileSync(file, reconcileManifest(ns, "get", "- {kind: ServiceAccount, name: bot}"));
        const first = await k("auth", "reconcile", "-f", file, "-v=6");
        assert.equal(first.code, 0, first.stderr);
        // What was done goes to stdout, why to stderr.
        assert.equal(first.stdout, "role.rbac.authorization.k8s.io/rec-role reconciled\nrolebinding.rbac.authorization.k8s.io/rec-binding reconciled\n");
        assert.match(first.stderr, /\treconciliation required create\n\tmissing rules added:\n\t\t\{Verbs:\[get\] APIGroups:\[\] Resources:\[configmaps\]/);
        assert.match(first.stderr, /POST https:\/\/[^ ]+\/apis\/rbac\.authorization\.k8s\.io\/v1\/namespaces\/\w+\/roles 201 Created/);
        // A ServiceAccount subject without a namespace is stored so, and read as the binding's namespace.
        const binding = JSON.parse(await ok("get", "rolebinding", "rec-binding", "-n", ns, "-o", "json")) as { subjects: unknown };
        assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: "bot" }]);
        await waitFor(
          async () => (await k("auth", "can-i", "get", "configmaps", "-n", ns, `--as=system:serviceaccount:${ns}:bot`)).stdout.trim() === "yes" || undefined,
          { ...WAIT, message: "the bot may get configmaps through rec-binding" },
        );

        writeFileSync(
          file,
          reconcileManifest(ns, "get, list", `- {kind: ServiceAccount, name: bot}\n- {kind: User, name: carol, apiGroup: rbac.authorization.k8s.io}`),
        );
        const second = await k("auth", "reconcile", "-f", file, "-v=6");
        assert.equal(second.code, 0, second.stderr);
        assert.match(second.stderr, /\treconciliation required update\n\tmissing rules added:\n\t\t\{Verbs:\[list\] APIGroups:\[\] Resources:\[configmaps\]/);
        assert.match(
          second.stderr,
          /\treconciliation required update\n\tmissing subjects added:\n\t\t\{Kind:User APIGroup:rbac.authorization.k8s.io Name:carol/,
        );
        assert.match(second.stderr, /PUT https:\/\/[^ ]+\/roles\/rec-role 200 OK/);
        const role = JSON.parse(await ok("get", "role", "rec-role", "-n", ns, "-o", "json")) as { rules: unknown };
        assert.deepEqual(role.rules, [
          { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] },
          { apiGroups: [""], resources: ["configmaps"], verbs: ["list"] },
        ]);
        const third = await k("auth", "reconcile", "-f", file);
        assert.equal(third.code, 0, third.stderr);
        assert.doesNotMatch(third.stderr, /reconciliation required/, "nothing left to do");
        await waitFor(async () => (await k("auth", "can-i", "list", "configmaps", "-n", ns, "--as=carol")).stdout.trim() === "yes" || undefined, {
          ...WAIT,
          message: "carol may list configmaps",
        });
      }));

    it(`kubectl ${client.name}: apply of an operator's RBAC manifest, twice`, () =>
      withLogsOnFailure(c, async () => {
        const p = `op${client.name.replace(".", "")}`;
        const file = path.join(c.dir, `${p}.yaml`);
        writeFileSync(file, operatorManifest(p));
        const first = await ok("apply", "-f", file);
        assert.equal(
          first,
          `namespace/${p}-system created
serviceaccount/${p}-controller created
clusterrole.rbac.authorization.k8s.io/${p}-manager created
clusterrole.rbac.authorization.k8s.io/${p}-manager-core created
clusterrole.rbac.authorization.k8s.io/${p}-viewer created
clusterrolebinding.rbac.authorization.k8s.io/${p}-manager-binding created
role.rbac.authorization.k8s.io/${p}-leader-election created
rolebinding.rbac.authorization.k8s.io/${p}-leader-election created
`,
        );
        const as = `--as=system:serviceaccount:${p}-system:${p}-controller`;
        await waitFor(async () => (await k("auth", "can-i", "patch", "deployments/status", "-n", "anywhere", as)).stdout.trim() === "yes" || undefined, {
          ...WAIT,
          message: "the operator's account may patch deployments/status through the aggregated manager role",
        });
        assert.equal((await k("auth", "can-i", "create", "leases", "-n", `${p}-system`, as)).stdout.trim(), "yes");
        assert.equal((await k("auth", "can-i", "create", "leases", "-n", "default", as)).stdout.trim(), "no");
        assert.equal((await k("auth", "can-i", "list", "secrets", "-n", `${p}-system`, as)).stdout.trim(), "no");
        // The view extension reaches view.
        await waitFor(
          async () => {
            const view = JSON.parse(await ok("get", "clusterrole", "view", "-o", "json")) as { rules: { resourceNames?: string[] }[] };
            return view.rules.some((r) => r.resourceNames?.includes(`${p}-config`)) || undefined;
          },
          { ...WAIT, message: "view aggregates the operator's viewer role" },
        );
        // Applied again: what has no aggregation is unchanged.
        const second = await ok("apply", "-f", file);
        for (const line of [
          `serviceaccount/${p}-controller unchanged`,
          `clusterrole.rbac.authorization.k8s.io/${p}-manager-core unchanged`,
          `clusterrolebinding.rbac.authorization.k8s.io/${p}-manager-binding unchanged`,
          `role.rbac.authorization.k8s.io/${p}-leader-election unchanged`,
          `rolebinding.rbac.authorization.k8s.io/${p}-leader-election unchanged`,
        ]) {
          assert.ok(second.split("\n").includes(line), `${line} in:\n${second}`);
        }
        assert.match(await ok("describe", "clusterrolebinding", `${p}-manager-binding`), new RegExp(`ServiceAccount  ${p}-controller  ${p}-system\\n$`));
      }));

    if (client.v132) {
      it(`kubectl ${client.name}: create token and auth whoami as the ServiceAccount`, () =>
        withLogsOnFailure(c, async () => {
          const token = (await ok("create", "token", "bot", "-n", ns, "--duration=10m")).trim();
          assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
          const tr = JSON.parse(await ok("create", "token", "bot", "-n", ns, "--audience=vault", "-o", "json")) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- kubectl's JSON
          assert.equal(tr["kind"], "TokenRequest");
          assert.deepEqual(tr["spec"], { audiences: ["vault"], boundObjectRef: null, expirationSeconds: 3600 });
          const short = await k("create", "token", "bot", "-n", ns, "--duration=5m");
          assert.equal(short.code, 1);
          assert.match(short.stderr, /spec\.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes/);
          assert.match((await k("create", "token", "ghost", "-n", ns)).stderr, /serviceaccounts "ghost" not found/);

          const asBot = path.join(c.dir, `bot-${ns}.kubeconfig`);
          writeFileSync(asBot, readFileSync(kc, "utf8").replace(/token: .*/, `token: ${token}`));
          const who = await run("kubectl", ["auth", "whoami"], asBot);
          assert.equal(who.code, 0, who.stderr);
          assert.match(
            who.stdout,
            new RegExp(
              `^ATTRIBUTE\\s+VALUE\\nUsername\\s+system:serviceaccount:${ns}:bot\\nUID\\s+[0-9a-f-]{36}\\nGroups\\s+\\[system:serviceaccounts system:serviceaccounts:${ns} system:authenticated\\]\\nExtra: authentication.kubernetes.io/credential-id\\s+\\[JTI=[0-9a-f-]{36}\\]\\n$`,
            ),
          );
          const impersonated = await ok("auth", "whoami", "--as=dora", "--as-group=ops", "-o", "json");
          assert.deepEqual((JSON.parse(impersonated) as { status: unknown }).status, {
            userInfo: { username: "dora", groups: ["ops", "system:authenticated"] },
          });
          // readers lets the bot get pods/web (absent: 404), and nothing else.
          assert.match((await run("kubectl", ["get", "pod", "web", "-n", ns], asBot)).stderr, /pods "web" not found/);
          assert.match(
            (await run("kubectl", ["get", "pod", "other", "-n", ns], asBot)).stderr,
            new RegExp(`pods "other" is forbidden: User "system:serviceaccount:${ns}:bot" cannot get resource "pods" in API group "" in the namespace "${ns}"`),
          );
        }));
    }
  }
});
