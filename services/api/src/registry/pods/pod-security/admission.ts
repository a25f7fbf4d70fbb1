// Pod Security Admission (Kubernetes' pod-security-admission): pods are
// checked against their namespace's levels at create and at updates that
// can change what they run; workload templates are warned and audited,
// never refused; a namespace whose enforce level is raised hears which of
// its pods violate it.
import { emptyMeta, forbidden, kindByCase, kindByResource, type AnyObject, type KindInfo, type ObjectMeta } from "@choreo/kit";
import { PodSpec, type Namespace, type Pod, type PodTemplateSpec } from "@choreo/kit/gen/choreo/core/v1/core";
import type { CronJob } from "@choreo/kit/gen/choreo/batch/v1/batch";
import { canonicalJson } from "../../shared/canonical.js";
import { addAuditAnnotation, addWarning, requestUser } from "../../generic/admission-context.js";
import type { GenericStore } from "../../generic/store.js";
import type { Strategy } from "../../generic/strategy.js";
import { evaluatePod, forbiddenDetail, forbiddenReason, type CheckResult } from "./checks.js";
import { compareLevels, MODES, policyName, policyOf, type Level, type LevelVersion, type Policy, type PodSecurityConfig } from "./policy.js";

export const AUDIT_VIOLATIONS = "pod-security.kubernetes.io/audit-violations";
export const ENFORCE_POLICY = "pod-security.kubernetes.io/enforce-policy";
export const EXEMPT = "pod-security.kubernetes.io/exempt";

type Admit = NonNullable<Strategy["admit"]>;

/** The pod template of a workload (CronJob: its job template's). */
function templateOf(kind: KindInfo["case"], obj: AnyObject): PodTemplateSpec | undefined {
  if (kind === "cronJob") return (obj as CronJob).spec?.jobTemplate?.spec?.template;
  return (obj as { spec?: { template?: PodTemplateSpec } }).spec?.template;
}

const TEMPLATE_KINDS: readonly string[] = ["deployment", "replicaSet", "replicationController", "daemonSet", "job", "cronJob"];

/**
 * Whether a pod update can change what the checks see (Kubernetes'
 * isSignificantPodUpdate): containers added or removed, an image or a
 * container's seccomp annotation changed, an ephemeral container added.
 */
export function isSignificantPodUpdate(pod: Pod, old: Pod): boolean {
  const spec = pod.spec;
  const was = old.spec;
  if (!spec || !was) return spec !== was;
  if (spec.containers.length !== was.containers.length || spec.initContainers.length !== was.initContainers.length) return true;
  const ann = pod.metadata?.annotations ?? {};
  const oldAnn = old.metadata?.annotations ?? {};
  const changed = (c: { name: string; image: string }, o: { image: string }): boolean => {
    const key = `container.seccomp.security.alpha.kubernetes.io/${c.name}`;
    return c.image !== o.image || ann[key] !== oldAnn[key];
  };
  if (spec.containers.some((c, i) => changed(c, was.containers[i]!))) return true;
  if (spec.initContainers.some((c, i) => changed(c, was.initContainers[i]!))) return true;
  return spec.ephemeralContainers.some((c) => {
    const o = was.ephemeralContainers.find((e) => e.name === c.name);
    return !o || changed(c, o);
  });
}

/** Pod Security Admission over the api's configuration: the `admit` hooks of pods, namespaces and workloads. */
export class PodSecurityAdmission {
  constructor(readonly config: PodSecurityConfig) {}

  /** The admit hook of each kind it checks. */
  admitters(): Partial<Record<KindInfo["case"], Admit>> {
    const hooks: Partial<Record<KindInfo["case"], Admit>> = {
      pod: (store, obj, old) => this.admitPod(store, obj as Pod, old as Pod | undefined),
      namespace: (store, obj, old) => this.admitNamespace(store, obj as Namespace, old as Namespace | undefined),
    };
    for (const k of TEMPLATE_KINDS) {
      const kind = k as KindInfo["case"];
      hooks[kind] = (store, obj, old) => this.admitTemplate(store, kind, obj, old);
    }
    return hooks;
  }

  private exemptUser(store: GenericStore): boolean {
    const user = requestUser(store);
    return user !== "" && this.config.exemptUsernames.includes(user);
  }

  /** The policy of a namespace; with invalid labels, enforce is restricted (as Kubernetes). */
  async policyIn(store: GenericStore, namespace: string): Promise<Policy> {
    const info = kindByResource("namespaces") as KindInfo;
    const stored = await store.storage.get("namespaces", "", namespace);
    const labels = stored ? (store.decode(info, stored).metadata?.labels ?? {}) : {};
    const { policy, errors } = policyOf(labels, this.config.defaults);
    if (errors.length) policy.enforce = { level: "restricted", version: "latest" };
    return policy;
  }

  /** Evaluates each level once. */
  private evaluator(meta: ObjectMeta, spec: PodSpec): (lv: LevelVersion) => CheckResult[] {
    const done = new Map<Level, CheckResult[]>();
    return (lv) => {
      let r = done.get(lv.level);
      if (!r) done.set(lv.level, (r = evaluatePod(lv.level, meta, spec)));
      return r;
    };
  }

  /** A pod's create, or an update that can change what it runs: enforce (403), audit, warn. */
  async admitPod(store: GenericStore, pod: Pod, old?: Pod): Promise<void> {
    const meta = pod.metadata ?? emptyMeta();
    if (this.config.exemptNamespaces.includes(meta.namespace)) return addAuditAnnotation(store, EXEMPT, "namespace");
    if (this.exemptUser(store)) return addAuditAnnotation(store, EXEMPT, "user");
    if (old && !isSignificantPodUpdate(pod, old)) return;
    const policy = await this.policyIn(store, meta.namespace);
    if (MODES.every((m) => policy[m].level === "privileged")) return;
    const evaluate = this.evaluator(meta, pod.spec ?? emptySpec());
    const refused = evaluate(policy.enforce);
    this.audit(store, "pods", meta, policy.audit, evaluate(policy.audit));
    if (refused.length) {
      addAuditAnnotation(store, ENFORCE_POLICY, policyName(policy.enforce));
      throw forbidden(`pods "${meta.name}" is forbidden: violates PodSecurity "${policyName(policy.enforce)}": ${forbiddenDetail(refused)}`);
    }
    const warned = evaluate(policy.warn);
    if (warned.length) addWarning(store, `would violate PodSecurity "${policyName(policy.warn)}": ${forbiddenDetail(warned)}`);
  }

  /** A workload's pod template: audit and warn, never refused (as Kubernetes). */
  async admitTemplate(store: GenericStore, kind: KindInfo["case"], obj: AnyObject, old?: AnyObject): Promise<void> {
    const template = templateOf(kind, obj);
    const meta = obj.metadata ?? emptyMeta();
    if (!template?.spec || this.config.exemptNamespaces.includes(meta.namespace) || this.exemptUser(store)) return;
    if (old && canonicalJson(templateOf(kind, old) ?? null) === canonicalJson(template)) return;
    const policy = await this.policyIn(store, meta.namespace);
    if (policy.warn.level === "privileged" && policy.audit.level === "privileged") return;
    const evaluate = this.evaluator(template.metadata ?? emptyMeta(), template.spec);
    this.audit(store, kindByCase(kind).resource, meta, policy.audit, evaluate(policy.audit));
    const warned = evaluate(policy.warn);
    if (warned.length) addWarning(store, `would violate PodSecurity "${policyName(policy.warn)}": ${forbiddenDetail(warned)}`);
  }

  private audit(store: GenericStore, resource: string, meta: ObjectMeta, lv: LevelVersion, results: CheckResult[]): void {
    if (results.length === 0) return;
    const violations = `would violate PodSecurity "${policyName(lv)}": ${forbiddenDetail(results)}`;
    addAuditAnnotation(store, AUDIT_VIOLATIONS, violations);
    store.log.info({ resource, namespace: meta.namespace, name: meta.name, policy: policyName(lv), violations }, "pod security audit violation");
  }

  /**
   * A namespace's enforce level set or raised: a warning per kind of
   * violation among its pods (Kubernetes' EvaluatePodsInNamespace), and one
   * for an exempt namespace given levels it will not have.
   */
  async admitNamespace(store: GenericStore, ns: Namespace, old?: Namespace): Promise<void> {
    const meta = ns.metadata ?? emptyMeta();
    const { policy } = policyOf(meta.labels, this.config.defaults);
    if (this.config.exemptNamespaces.includes(meta.name)) {
      const labelled = MODES.filter((m) => meta.labels[`pod-security.kubernetes.io/${m}`] !== undefined && policy[m].level !== "privileged");
      if (labelled.length) {
        const set = labelled.map((m) => `${m}=${policyName(policy[m])}`).join(", ");
        addWarning(store, `namespace "${meta.name}" is exempt from Pod Security, and the policy (${set}) will be ignored`);
      }
      return;
    }
    if (!old) return;
    const was = policyOf(old.metadata?.labels ?? {}, this.config.defaults).policy;
    const now = policy.enforce;
    if (now.level === was.enforce.level && now.version === was.enforce.version) return;
    if (now.level === "privileged") return;
    if (now.version === was.enforce.version && compareLevels(now.level, was.enforce.level) < 1) return;
    if (this.exemptUser(store)) return;
    for (const w of await this.violationsInNamespace(store, meta.name, now)) addWarning(store, w);
  }

  private async violationsInNamespace(store: GenericStore, namespace: string, lv: LevelVersion): Promise<string[]> {
    const info = kindByResource("pods") as KindInfo;
    const byReason = new Map<string, { first: string; count: number }>();
    let after: string | undefined;
    do {
      const page = await store.page(info, { namespace, limit: 500, after });
      for (const p of page.items as Pod[]) {
        const results = evaluatePod(lv.level, p.metadata ?? emptyMeta(), p.spec ?? emptySpec());
        if (results.length === 0) continue;
        const reason = forbiddenReason(results);
        const name = p.metadata?.name ?? "";
        const seen = byReason.get(reason);
        if (!seen) byReason.set(reason, { first: name, count: 1 });
        else {
          seen.count++;
          if (name < seen.first) seen.first = name;
        }
      }
      after = page.next;
    } while (after);
    if (byReason.size === 0) return [];
    const pods = [...byReason].map(([reason, { first, count }]) => {
      const who = count === 1 ? first : count === 2 ? `${first} (and 1 other pod)` : `${first} (and ${count - 1} other pods)`;
      return `${who}: ${reason}`;
    });
    return [`existing pods in namespace "${namespace}" violate the new PodSecurity enforce level "${policyName(lv)}"`, ...pods.sort()];
  }
}

function emptySpec(): PodSpec {
  return PodSpec.fromPartial({});
}
