// Keeps the default RBAC policy (bootstrap-policy.ts) in place at every api
// start, as Kubernetes' rbac post-start hook: a missing default role or
// binding is created; an existing one is reconciled unless annotated
// rbac.authorization.kubernetes.io/autoupdate: "false" — missing rules
// added (an aggregated role's selectors instead: its rules are the
// aggregation controller's), labels and annotations filled, missing
// subjects added, a binding to another role re-created. Nothing is removed.
import { ApiError, kindByResource, wrap, type KindInfo } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import type { ClusterRole, ClusterRoleBinding, PolicyRule, Subject } from "@choreo/kit/gen/choreo/rbac/v1/rbac";
import type { LabelSelector } from "@choreo/kit/gen/choreo/meta/v1/meta";
import type { Registry } from "../registry.js";
import { AUTOUPDATE_ANNOTATION, bootstrapClusterRoleBindings, bootstrapClusterRoles } from "./bootstrap-policy.js";

const ATTEMPTS = 5;

function covers(have: string[], want: string[]): boolean {
  return have.includes("*") || want.every((w) => have.includes(w));
}

/** Whether `have` allows everything `want` does (per rule; Kubernetes' Covers, not split into single verbs). */
export function ruleCovers(have: PolicyRule, want: PolicyRule): boolean {
  return (
    covers(have.verbs, want.verbs) &&
    covers(have.apiGroups, want.apiGroups) &&
    covers(have.resources, want.resources) &&
    covers(have.nonResourceUrls, want.nonResourceUrls) &&
    (have.resourceNames.length === 0 || (want.resourceNames.length > 0 && covers(have.resourceNames, want.resourceNames)))
  );
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Fills `into` with the entries of `from` it lacks; whether it changed. */
function fillMap(into: Record<string, string>, from: Record<string, string>): boolean {
  let changed = false;
  for (const [k, v] of Object.entries(from))
    if (!(k in into)) {
      into[k] = v;
      changed = true;
    }
  return changed;
}

/** The reconciled role, or undefined when nothing needs to change (or it is protected). */
export function reconcileClusterRole(existing: ClusterRole, wanted: ClusterRole): ClusterRole | undefined {
  const meta = existing.metadata;
  if (!meta || meta.annotations[AUTOUPDATE_ANNOTATION] === "false") return undefined;
  const next = structuredClone(existing);
  const m = next.metadata ?? meta;
  let changed = fillMap(m.labels, wanted.metadata?.labels ?? {});
  changed = fillMap(m.annotations, wanted.metadata?.annotations ?? {}) || changed;
  if (wanted.aggregationRule) {
    next.aggregationRule ??= { clusterRoleSelectors: [] };
    const selectors: LabelSelector[] = next.aggregationRule.clusterRoleSelectors;
    for (const s of wanted.aggregationRule.clusterRoleSelectors)
      if (!selectors.some((h) => sameJson(h, s))) {
        selectors.push(s);
        changed = true;
      }
  } else {
    for (const r of wanted.rules)
      if (!next.rules.some((h) => ruleCovers(h, r))) {
        next.rules.push(r);
        changed = true;
      }
  }
  return changed ? next : undefined;
}

const sameSubject = (a: Subject, b: Subject) => a.kind === b.kind && a.apiGroup === b.apiGroup && a.name === b.name && a.namespace === b.namespace;

/** The reconciled binding ("recreate" when it binds another role), or undefined when nothing needs to change. */
export function reconcileClusterRoleBinding(existing: ClusterRoleBinding, wanted: ClusterRoleBinding): ClusterRoleBinding | "recreate" | undefined {
  const meta = existing.metadata;
  if (!meta || meta.annotations[AUTOUPDATE_ANNOTATION] === "false") return undefined;
  if (!sameJson(existing.roleRef, wanted.roleRef)) return "recreate";
  const next = structuredClone(existing);
  const m = next.metadata ?? meta;
  let changed = fillMap(m.labels, wanted.metadata?.labels ?? {});
  changed = fillMap(m.annotations, wanted.metadata?.annotations ?? {}) || changed;
  for (const s of wanted.subjects)
    if (!next.subjects.some((h) => sameSubject(h, s))) {
      next.subjects.push(s);
      changed = true;
    }
  return changed ? next : undefined;
}

const isReason = (err: unknown, ...reasons: string[]) => err instanceof ApiError && reasons.includes(err.reason);

/** Creates `wanted`, or reconciles what exists; conflicts (another api replica at the same time) are retried. */
async function ensureOne<T extends ClusterRole | ClusterRoleBinding>(
  registry: Registry,
  info: KindInfo,
  wanted: T,
  reconcile: (existing: T, wanted: T) => T | "recreate" | undefined,
  log: Logger | undefined,
): Promise<void> {
  const name = wanted.metadata?.name ?? "";
  for (let attempt = 1; ; attempt++) {
    try {
      await registry.createObject(info, structuredClone(wanted));
      log?.info({ kind: info.kind, name }, "rbac default created");
      return;
    } catch (err) {
      if (!isReason(err, "AlreadyExists")) throw err;
    }
    try {
      const existing = (await registry.get({ resource: info.resource, namespace: "", name })).kind?.value as T;
      const next = reconcile(existing, wanted);
      if (next === undefined) return;
      if (next === "recreate") {
        await registry.delete({ resource: info.resource, namespace: "", name, options: undefined });
        continue;
      }
      await registry.update({ object: wrap(info.case, next), dryRun: false });
      log?.info({ kind: info.kind, name }, "rbac default reconciled");
      return;
    } catch (err) {
      if (attempt >= ATTEMPTS || !isReason(err, "Conflict", "NotFound", "AlreadyExists")) throw err;
    }
  }
}

/** Creates the default ClusterRoles and ClusterRoleBindings, or reconciles them (idempotent; run by bootstrap). */
export async function ensureBootstrapPolicy(registry: Registry, log?: Logger): Promise<void> {
  const roles = kindByResource("clusterroles") as KindInfo;
  const bindings = kindByResource("clusterrolebindings") as KindInfo;
  for (const r of bootstrapClusterRoles()) await ensureOne(registry, roles, r, reconcileClusterRole, log);
  for (const b of bootstrapClusterRoleBindings()) await ensureOne(registry, bindings, b, reconcileClusterRoleBinding, log);
}
