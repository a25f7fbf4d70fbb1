// RBAC and ServiceAccount columns, after kubectl's printRole/printClusterRole
// (NAME, CREATED AT), printRoleBinding/printClusterRoleBinding (NAME, ROLE
// as Kind/name, AGE; wide: USERS, GROUPS, SERVICEACCOUNTS as namespace/name,
// rbac.SubjectsStrings) and printServiceAccount (NAME, SECRETS, AGE).
import { since } from "./age.js";
import { rec, recs, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, wide, type KindTable } from "./types.js";

const CREATED_AT = col(
  "Created At",
  "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.",
  { type: "date" },
);

/** Roles and ClusterRoles: the name and the creation time (RFC 3339, UTC). */
export const roleTable: KindTable = {
  columns: [NAME_COLUMN, CREATED_AT],
  cells(r) {
    const meta = rec(r["metadata"]);
    // Go's zero time when unset, as Kubernetes' CreationTimestamp.UTC().Format(time.RFC3339).
    return [str(meta["name"]), str(meta["creationTimestamp"]) || "0001-01-01T00:00:00Z"];
  },
};

/** RoleBindings and ClusterRoleBindings: the role and, wide, the subjects by kind. */
export const roleBindingTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Role", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
    AGE_COLUMN,
    wide("Users", "Users in the roleBinding"),
    wide("Groups", "Groups in the roleBinding"),
    wide("ServiceAccounts", "ServiceAccounts in the roleBinding"),
  ],
  cells(b, now) {
    const meta = rec(b["metadata"]);
    const ref = rec(b["roleRef"]);
    const users: string[] = [];
    const groups: string[] = [];
    const sas: string[] = [];
    for (const s of recs(b["subjects"])) {
      if (s["kind"] === "User") users.push(str(s["name"]));
      else if (s["kind"] === "Group") groups.push(str(s["name"]));
      else if (s["kind"] === "ServiceAccount") sas.push(`${str(s["namespace"])}/${str(s["name"])}`);
    }
    return [
      str(meta["name"]),
      `${str(ref["kind"])}/${str(ref["name"])}`,
      since(meta["creationTimestamp"], now),
      users.join(", "),
      groups.join(", "),
      sas.join(", "),
    ];
  },
};

/** ServiceAccounts: the number of secrets listed. */
export const serviceAccountTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.", {
      type: "integer",
    }),
    AGE_COLUMN,
  ],
  cells(sa, now) {
    const meta = rec(sa["metadata"]);
    return [str(meta["name"]), recs(sa["secrets"]).length, since(meta["creationTimestamp"], now)];
  },
};
