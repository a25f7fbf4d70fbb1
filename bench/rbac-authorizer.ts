// Benchmark of the RBAC authorizer: ns per decision with 10, 100, 1,000 and
// 10,000 RoleBindings and ClusterRoleBindings (each its own user; half of
// the ClusterRoleBindings to groups), for a request allowed by a namespace
// RoleBinding, one allowed by a group's ClusterRoleBinding, and one denied
// (a user with groups and no binding: every candidate visited). Then the
// cost of rebuilding the subject index after a binding changes. Prints
// figures only.
//   node --import tsx bench/rbac-authorizer.ts [-- --decisions 200000]
import { parseArgs } from "node:util";
import {
  RbacAuthorizer,
  RBAC_GROUP,
  type ClusterRole,
  type ClusterRoleBinding,
  type PolicyRule,
  type RbacSource,
  type Role,
  type RoleBinding,
  type Subject,
} from "@choreo/api/auth/rbac";

type Attributes = Parameters<RbacAuthorizer["authorize"]>[0];
type UserInfo = Attributes["user"];

const policyRule = (r: Partial<PolicyRule>): PolicyRule => ({ verbs: [], apiGroups: [], resources: [], resourceNames: [], nonResourceUrls: [], ...r });
const user = (name: string, ...groups: string[]): UserInfo => ({ name, uid: "", groups, extra: {} });
const userSubject = (name: string): Subject => ({ kind: "User", apiGroup: RBAC_GROUP, name, namespace: "" });
const groupSubject = (name: string): Subject => ({ kind: "Group", apiGroup: RBAC_GROUP, name, namespace: "" });
const role = (namespace: string, name: string, ...rules: PolicyRule[]): Role => ({ metadata: { namespace, name }, rules });
const clusterRole = (name: string, ...rules: PolicyRule[]): ClusterRole => ({ metadata: { name }, rules });
const ref = (kind: string, name: string) => ({ apiGroup: RBAC_GROUP, kind, name });
const roleBinding = (namespace: string, name: string, roleName: string, ...subjects: Subject[]): RoleBinding => ({
  metadata: { namespace, name },
  subjects,
  roleRef: ref("Role", roleName),
});
const clusterRoleBinding = (name: string, roleName: string, ...subjects: Subject[]): ClusterRoleBinding => ({
  metadata: { name },
  subjects,
  roleRef: ref("ClusterRole", roleName),
});

/** Maps, as the RbacCache keeps them. */
class MapSource implements RbacSource {
  private v = 0;
  private readonly roles = new Map<string, Role>();
  private readonly clusterRoles = new Map<string, ClusterRole>();
  private readonly bindings = new Map<string, RoleBinding[]>();
  constructor(
    roles: Role[],
    clusterRoles: ClusterRole[],
    bindings: RoleBinding[],
    private readonly clusterBindings: ClusterRoleBinding[],
  ) {
    for (const r of roles) this.roles.set(`${r.metadata?.namespace}/${r.metadata?.name}`, r);
    for (const r of clusterRoles) this.clusterRoles.set(r.metadata?.name ?? "", r);
    for (const b of bindings) {
      const ns = b.metadata?.namespace ?? "";
      this.bindings.set(ns, [...(this.bindings.get(ns) ?? []), b]);
    }
  }
  getRole(namespace: string, name: string): Role | undefined {
    return this.roles.get(`${namespace}/${name}`);
  }
  getClusterRole(name: string): ClusterRole | undefined {
    return this.clusterRoles.get(name);
  }
  roleBindings(namespace: string): Iterable<RoleBinding> {
    return this.bindings.get(namespace) ?? [];
  }
  clusterRoleBindings(): Iterable<ClusterRoleBinding> {
    return this.clusterBindings;
  }
  version(): number {
    return this.v;
  }
  changed(): void {
    this.v++;
  }
}

const { values } = parseArgs({ options: { decisions: { type: "string", default: "200000" } } });
const DECISIONS = Number(values.decisions);

function world(n: number): MapSource {
  const roles: Role[] = [];
  const bindings: RoleBinding[] = [];
  const clusterBindings: ClusterRoleBinding[] = [
    // As a default cluster's: discovery and self-review for everyone.
    clusterRoleBinding("system:discovery", "system:discovery", groupSubject("system:authenticated")),
    clusterRoleBinding("system:basic-user", "system:basic-user", groupSubject("system:authenticated")),
  ];
  const namespaces = Math.max(1, Math.floor(n / 20));
  for (let i = 0; i < n; i++) {
    const ns = `ns${i % namespaces}`;
    roles.push(
      role(
        ns,
        `r${i}`,
        policyRule({ verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods", "configmaps"] }),
        policyRule({ verbs: ["*"], apiGroups: ["apps"], resources: ["deployments"] }),
      ),
    );
    bindings.push(roleBinding(ns, `b${i}`, `r${i}`, userSubject(`user${i}`)));
    clusterBindings.push(clusterRoleBinding(`c${i}`, "viewer", i % 2 ? groupSubject(`team${i}`) : userSubject(`user${i}`)));
  }
  return new MapSource(
    roles,
    [
      clusterRole("system:discovery", policyRule({ verbs: ["get"], nonResourceUrls: ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/version"] })),
      clusterRole(
        "system:basic-user",
        policyRule({ verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] }),
      ),
      clusterRole("viewer", policyRule({ verbs: ["get", "list"], apiGroups: [""], resources: ["nodes"] })),
    ],
    bindings,
    clusterBindings,
  );
}

const req = (u: UserInfo, verb: string, group: string, resource: string, ns: string, name: string): Attributes => ({
  user: u,
  verb,
  resourceRequest: true,
  apiGroup: group,
  apiVersion: "v1",
  resource,
  subresource: "",
  namespace: ns,
  name,
  path: "",
});

function nsPerDecision(z: RbacAuthorizer, attrs: Attributes[], expect: boolean): number {
  for (let i = 0; i < 1000; i++) z.authorize(attrs[i % attrs.length]);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < DECISIONS; i++) {
    if (z.authorize(attrs[i % attrs.length]).allowed !== expect) throw new Error(`unexpected decision for ${attrs[i % attrs.length].user.name}`);
  }
  return Number(process.hrtime.bigint() - t0) / DECISIONS;
}

console.log(`RBAC authorizer, ${DECISIONS} decisions per figure (ns/decision)`);
console.log("bindings  allowed-by-RoleBinding  allowed-by-group-CRB  denied  index-rebuild");
for (const n of [10, 100, 1_000, 10_000]) {
  const src = world(n);
  const z = new RbacAuthorizer(src);
  const namespaces = Math.max(1, Math.floor(n / 20));
  const groups = ["system:authenticated", "devs", "qa", "oncall"];
  const byRole: Attributes[] = [];
  const byGroup: Attributes[] = [];
  const denied: Attributes[] = [];
  for (let i = 0; i < Math.min(n, 500); i++) {
    byRole.push(req(user(`user${i}`, ...groups), "update", "apps", "deployments", `ns${i % namespaces}`, "web"));
    if (i % 2) byGroup.push(req(user(`someone${i}`, ...groups, `team${i}`), "list", "", "nodes", "", ""));
    denied.push(req(user(`stranger${i}`, ...groups), "delete", "", "secrets", `ns${i % namespaces}`, "s"));
  }
  const a = nsPerDecision(z, byRole, true);
  const b = nsPerDecision(z, byGroup, true);
  const d = nsPerDecision(z, denied, false);
  // A binding changed: the next decision rebuilds the cluster index (the namespace's on first use).
  const rebuilds = 50;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < rebuilds; i++) {
    src.changed();
    z.authorize(byRole[i % byRole.length]);
  }
  const rebuild = Number(process.hrtime.bigint() - t0) / rebuilds / 1e3;
  console.log(
    `${String(n).padStart(8)}  ${a.toFixed(0).padStart(22)}  ${b.toFixed(0).padStart(20)}  ${d.toFixed(0).padStart(6)}  ${rebuild.toFixed(1).padStart(10)} µs`,
  );
}
