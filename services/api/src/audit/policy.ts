// Kubernetes' audit policy (audit.k8s.io/v1 Policy): parsing, validation and
// the rule checker. First matching rule wins; no match → level None.
import { parse as parseYaml } from "yaml";
import type { Attributes } from "../auth/types.js";

export const LEVELS = ["None", "Metadata", "Request", "RequestResponse"] as const;
export type Level = (typeof LEVELS)[number];

export const STAGES = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"] as const;
export type Stage = (typeof STAGES)[number];

export interface GroupResources {
  /** "" is the core group. */
  group: string;
  /** `pods`, `pods/log`, `pods/*` (and any subresource of pods), `*`, star-slash-`status` (any status); empty: the whole group. */
  resources: string[];
  /** Empty: any name. */
  resourceNames: string[];
}

export interface PolicyRule {
  level: Level;
  users: string[];
  userGroups: string[];
  verbs: string[];
  resources: GroupResources[];
  /** "" matches cluster-scoped requests. */
  namespaces: string[];
  /** Exact paths, `*`, or a prefix ending in `*`. */
  nonResourceURLs: string[];
  omitStages: Stage[];
  /** undefined: the policy's. */
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** What the checker decides for one request. */
export interface RuleEvaluation {
  level: Level;
  omitStages: Stage[];
  omitManagedFields: boolean;
}

/** A policy file that is not a valid audit.k8s.io/v1 Policy; `message` names each bad field (`rules[2].level: …`). */
export class AuditPolicyError extends Error {
  override name = "AuditPolicyError";
}

/**
 * The policy used when none is given: nothing for health and version paths,
 * nothing for reads of leases (every node agent and leader renews one every
 * few seconds), nor for nodes' reads of Nodes and for Events (as the policy
 * kube-up and GKE ship: high volume, low risk — at 30,000 pods they were 41 %
 * of the lines), Metadata for everything else.
 */
export const DEFAULT_POLICY: Policy = {
  omitStages: ["RequestReceived"],
  omitManagedFields: false,
  rules: [
    rule({ level: "None", nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/version/"] }),
    rule({ level: "None", verbs: ["get", "list", "watch"], resources: [{ group: "coordination.k8s.io", resources: ["leases"], resourceNames: [] }] }),
    // As the audit policy of kube-up and GKE: a node reading its Node (every 10 s, the kubelet's status check)…
    rule({ level: "None", userGroups: ["system:nodes"], verbs: ["get"], resources: [{ group: "", resources: ["nodes", "nodes/status"], resourceNames: [] }] }),
    // …and Events ("because of performance impact": two or more per pod started) are left out.
    rule({
      level: "None",
      resources: [
        { group: "", resources: ["events"], resourceNames: [] },
        { group: "events.k8s.io", resources: ["events"], resourceNames: [] },
      ],
    }),
    rule({ level: "Metadata" }),
  ],
};

function rule(r: Partial<PolicyRule> & { level: Level }): PolicyRule {
  return { users: [], userGroups: [], verbs: [], resources: [], namespaces: [], nonResourceURLs: [], omitStages: [], ...r };
}

/** Parses and validates a policy file's text (YAML or JSON — JSON is YAML). Throws AuditPolicyError listing every problem. */
export function parsePolicy(text: string): Policy {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new AuditPolicyError(`audit policy: not YAML or JSON: ${(err as Error).message}`);
  }
  return validatePolicy(doc);
}

/** Validates a decoded policy document as the apiserver does (apis/audit/validation). */
export function validatePolicy(doc: unknown): Policy {
  const errs: string[] = [];
  if (!isObject(doc)) throw new AuditPolicyError("audit policy: expected an object of kind Policy");
  if (doc["kind"] !== undefined && doc["kind"] !== "Policy") errs.push(`kind: Invalid value: ${JSON.stringify(doc["kind"])}: must be Policy`);
  const av = doc["apiVersion"];
  if (av !== undefined && av !== "audit.k8s.io/v1") errs.push(`apiVersion: Unsupported value: ${JSON.stringify(av)}: supported values: "audit.k8s.io/v1"`);
  const omitStages = stages(doc["omitStages"], "omitStages", errs);
  const rawRules = doc["rules"];
  const rules: PolicyRule[] = [];
  if (!Array.isArray(rawRules)) errs.push("rules: Required value: a policy needs a list of rules");
  else rawRules.forEach((r, i) => rules.push(policyRule(r, `rules[${i}]`, errs)));
  if (errs.length) throw new AuditPolicyError(`audit policy: ${errs.join("; ")}`);
  return { rules, omitStages, omitManagedFields: doc["omitManagedFields"] === true };
}

function policyRule(r: unknown, path: string, errs: string[]): PolicyRule {
  if (!isObject(r)) {
    errs.push(`${path}: Invalid value: expected an object`);
    return rule({ level: "None" });
  }
  const level = r["level"];
  if (!(LEVELS as readonly unknown[]).includes(level)) {
    errs.push(
      `${path}.level: ${level === undefined ? "Required value" : `Unsupported value: ${JSON.stringify(level)}`}: supported values: ${LEVELS.map((l) => `"${l}"`).join(", ")}`,
    );
  }
  const out = rule({
    level: (LEVELS as readonly unknown[]).includes(level) ? (level as Level) : "None",
    users: strings(r["users"], `${path}.users`, errs),
    userGroups: strings(r["userGroups"], `${path}.userGroups`, errs),
    verbs: strings(r["verbs"], `${path}.verbs`, errs),
    namespaces: strings(r["namespaces"], `${path}.namespaces`, errs),
    nonResourceURLs: strings(r["nonResourceURLs"], `${path}.nonResourceURLs`, errs),
    omitStages: stages(r["omitStages"], `${path}.omitStages`, errs),
    resources: groupResources(r["resources"], `${path}.resources`, errs),
  });
  if (typeof r["omitManagedFields"] === "boolean") out.omitManagedFields = r["omitManagedFields"];
  if (out.nonResourceURLs.length && (out.resources.length || out.namespaces.length)) {
    errs.push(`${path}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs`);
  }
  out.nonResourceURLs.forEach((u, i) => {
    if (u.slice(0, -1).includes("*")) errs.push(`${path}.nonResourceURLs[${i}]: Invalid value: ${JSON.stringify(u)}: a "*" is allowed only at the end`);
    else if (u !== "*" && !u.startsWith("/")) errs.push(`${path}.nonResourceURLs[${i}]: Invalid value: ${JSON.stringify(u)}: must start with "/"`);
  });
  return out;
}

function groupResources(v: unknown, path: string, errs: string[]): GroupResources[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) {
    errs.push(`${path}: Invalid value: expected a list`);
    return [];
  }
  return v.map((g, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(g)) {
      errs.push(`${p}: Invalid value: expected an object`);
      return { group: "", resources: [], resourceNames: [] };
    }
    const group = g["group"] ?? "";
    if (typeof group !== "string") errs.push(`${p}.group: Invalid value: expected a string`);
    const resources = strings(g["resources"], `${p}.resources`, errs);
    const resourceNames = strings(g["resourceNames"], `${p}.resourceNames`, errs);
    resources.forEach((res, j) => {
      if (res.length === 0) errs.push(`${p}.resources[${j}]: Invalid value: "": must not be empty`);
      else if (res.includes("*") && !(res === "*" || /^\*\/[^*/]+$/.test(res) || /^[^*/]+\/\*$/.test(res))) {
        errs.push(`${p}.resources[${j}]: Invalid value: ${JSON.stringify(res)}: "*" only as "*", "*/subresource" or "resource/*"`);
      }
    });
    if (resourceNames.length && resources.some((res) => res.includes("*"))) {
      errs.push(`${p}.resourceNames: Invalid value: resourceNames cannot be used with a wildcard resource`);
    }
    return { group: typeof group === "string" ? group : "", resources, resourceNames };
  });
}

function strings(v: unknown, path: string, errs: string[]): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) {
    errs.push(`${path}: Invalid value: expected a list of strings`);
    return [];
  }
  return v as string[];
}

function stages(v: unknown, path: string, errs: string[]): Stage[] {
  const list = strings(v, path, errs);
  list.forEach((s, i) => {
    if (!(STAGES as readonly string[]).includes(s)) {
      errs.push(`${path}[${i}]: Unsupported value: ${JSON.stringify(s)}: supported values: ${STAGES.map((x) => `"${x}"`).join(", ")}`);
    }
  });
  return list.filter((s): s is Stage => (STAGES as readonly string[]).includes(s));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The first rule matching `a` decides its level; omit stages are the policy's and the rule's together. */
export function evaluatePolicy(policy: Policy, a: Attributes): RuleEvaluation {
  for (const r of policy.rules) {
    if (ruleMatches(r, a)) {
      return {
        level: r.level,
        omitStages: unionStages(policy.omitStages, r.omitStages),
        omitManagedFields: r.omitManagedFields ?? policy.omitManagedFields,
      };
    }
  }
  return { level: "None", omitStages: unionStages(policy.omitStages, []), omitManagedFields: policy.omitManagedFields };
}

export function unionStages(a: readonly Stage[], b: readonly Stage[]): Stage[] {
  return [...new Set([...a, ...b])];
}

function ruleMatches(r: PolicyRule, a: Attributes): boolean {
  if (r.users.length && !r.users.includes(a.user.name)) return false;
  if (r.userGroups.length && !a.user.groups.some((g) => r.userGroups.includes(g))) return false;
  if (r.verbs.length && !r.verbs.includes(a.verb)) return false;
  if (a.resourceRequest) {
    if (r.nonResourceURLs.length) return false;
    if ((r.namespaces.length || r.resources.length) && !resourceMatches(r, a)) return false;
  } else {
    if (r.namespaces.length || r.resources.length) return false;
    if (r.nonResourceURLs.length && !r.nonResourceURLs.some((u) => urlMatches(u, a.path))) return false;
  }
  return true;
}

function urlMatches(spec: string, path: string): boolean {
  if (spec === "*" || spec === path) return true;
  return spec.endsWith("*") && path.startsWith(spec.slice(0, -1));
}

function resourceMatches(r: PolicyRule, a: Attributes): boolean {
  if (r.namespaces.length && !r.namespaces.includes(a.namespace)) return false;
  if (!r.resources.length) return true;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  for (const gr of r.resources) {
    if (gr.group !== a.apiGroup) continue;
    if (!gr.resources.length) return true;
    if (gr.resourceNames.length && !gr.resourceNames.includes(a.name)) continue;
    for (const res of gr.resources) {
      if (res === "*" || res === combined) return true;
      if (a.subresource && res.startsWith("*/") && res.slice(2) === a.subresource) return true;
      if (res.endsWith("/*") && res.slice(0, -2) === a.resource) return true;
    }
  }
  return false;
}
