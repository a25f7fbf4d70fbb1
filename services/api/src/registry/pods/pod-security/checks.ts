// The Pod Security Standards' checks, as Kubernetes' pod-security-admission
// policy package has them (version "latest"): each check looks at a pod's
// metadata and spec and says why it is forbidden, in Kubernetes' words.
import type { ObjectMeta } from "@choreo/kit";
import type { PodSpec, SecurityContext } from "@choreo/kit/gen/choreo/core/v1/core";

/** A check's verdict: allowed, or the reason (always shown) and the detail (shown for one pod). */
export interface CheckResult {
  allowed: boolean;
  reason?: string;
  detail?: string;
}

/** What a check looks at. */
export type CheckFn = (meta: ObjectMeta, spec: PodSpec) => CheckResult;

/** A check of a level; `overlap`: a baseline check the restricted level replaces with a stricter one. */
export interface Check {
  id: string;
  level: "baseline" | "restricted";
  overlap?: boolean;
  fn: CheckFn;
}

/** The part of a container the checks read (containers, init and ephemeral containers alike). */
interface AnyContainer {
  name: string;
  ports: { hostPort: number }[];
  securityContext?: SecurityContext | undefined;
}

const ALLOWED: CheckResult = { allowed: true };
const forbid = (reason: string, detail: string): CheckResult => ({ allowed: false, reason, detail });

// Init containers, containers, ephemeral containers: Kubernetes' visitContainers order.
function containersOf(spec: PodSpec): AnyContainer[] {
  return [...spec.initContainers, ...spec.containers, ...spec.ephemeralContainers];
}

export function joinQuote(items: readonly string[]): string {
  return items.length === 0 ? "" : `"${items.join('", "')}"`;
}

export function pluralize(singular: string, plural: string, n: number): string {
  return n === 1 ? singular : plural;
}

const sortedUnique = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();
const containers = (names: readonly string[]): string => `${pluralize("container", "containers", names.length)} ${joinQuote(names)}`;
const isWindows = (spec: PodSpec): boolean => spec.os?.name === "windows";

// ---- baseline ----

const APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/";

const appArmorTypeAllowed = (type: string): boolean => type === "RuntimeDefault" || type === "Localhost";

function appArmorProfile(meta: ObjectMeta, spec: PodSpec): CheckResult {
  const setters: string[] = [];
  const values = new Set<string>();
  const podProfile = spec.securityContext?.appArmorProfile;
  if (podProfile && !appArmorTypeAllowed(podProfile.type)) {
    setters.push("pod");
    values.add(podProfile.type);
  }
  const bad: string[] = [];
  for (const c of containersOf(spec)) {
    const p = c.securityContext?.appArmorProfile;
    if (p && !appArmorTypeAllowed(p.type)) {
      bad.push(c.name);
      values.add(p.type);
    }
  }
  if (bad.length) setters.push(containers(bad));
  const annotations = Object.entries(meta.annotations)
    .filter(([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && !(v === "" || v === "runtime/default" || v.startsWith("localhost/")))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .sort();
  if (annotations.length) setters.push(pluralize("annotation", "annotations", annotations.length));
  if (setters.length === 0) return ALLOWED;
  const list = [...sortedUnique(values), ...annotations];
  return forbid(
    pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", list.length),
    `${setters.join(" and ")} must not set AppArmor profile type to ${joinQuote(list)}`,
  );
}

function hostNamespaces(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const set: string[] = [];
  if (spec.hostNetwork) set.push("hostNetwork=true");
  if (spec.hostPid) set.push("hostPID=true");
  if (spec.hostIpc) set.push("hostIPC=true");
  return set.length ? forbid("host namespaces", set.join(", ")) : ALLOWED;
}

function hostPorts(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad: string[] = [];
  const ports = new Set<number>();
  for (const c of containersOf(spec)) {
    const used = c.ports.filter((p) => p.hostPort !== 0);
    for (const p of used) ports.add(p.hostPort);
    if (used.length) bad.push(c.name);
  }
  if (bad.length === 0) return ALLOWED;
  const list = [...ports].map(String).sort();
  return forbid("hostPort", `${containers(bad)} ${pluralize("uses", "use", bad.length)} ${pluralize("hostPort", "hostPorts", list.length)} ${list.join(", ")}`);
}

function privileged(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad = containersOf(spec)
    .filter((c) => c.securityContext?.privileged === true)
    .map((c) => c.name);
  return bad.length ? forbid("privileged", `${containers(bad)} must not set securityContext.privileged=true`) : ALLOWED;
}

function procMount(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad: string[] = [];
  const types = new Set<string>();
  for (const c of containersOf(spec)) {
    const pm = c.securityContext?.procMount;
    if (pm !== undefined && pm !== "Default") {
      bad.push(c.name);
      types.add(pm);
    }
  }
  return bad.length ? forbid("procMount", `${containers(bad)} must not set securityContext.procMount to ${joinQuote(sortedUnique(types))}`) : ALLOWED;
}

const SELINUX_TYPES = new Set(["", "container_t", "container_init_t", "container_kvm_t"]);

function seLinuxOptions(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const badTypes = new Set<string>();
  let setUser = false;
  let setRole = false;
  const valid = (o: { type: string; user: string; role: string }): boolean => {
    let ok = true;
    if (!SELINUX_TYPES.has(o.type)) {
      ok = false;
      badTypes.add(o.type);
    }
    if (o.user) {
      ok = false;
      setUser = true;
    }
    if (o.role) {
      ok = false;
      setRole = true;
    }
    return ok;
  };
  const setters: string[] = [];
  const podOpts = spec.securityContext?.seLinuxOptions;
  if (podOpts && !valid(podOpts)) setters.push("pod");
  const bad = containersOf(spec)
    .filter((c) => c.securityContext?.seLinuxOptions && !valid(c.securityContext.seLinuxOptions))
    .map((c) => c.name);
  if (bad.length) setters.push(containers(bad));
  if (setters.length === 0) return ALLOWED;
  // As Kubernetes: user and role are named only beside a bad type.
  const data: string[] = [];
  if (badTypes.size) {
    data.push(`${pluralize("type", "types", badTypes.size)} ${joinQuote(sortedUnique(badTypes))}`);
    if (setUser) data.push("user may not be set");
    if (setRole) data.push("role may not be set");
  }
  return forbid("seLinuxOptions", `${setters.join(" and ")} set forbidden securityContext.seLinuxOptions: ${data.join("; ")}`);
}

const seccompValid = (type: string): boolean => type === "RuntimeDefault" || type === "Localhost";

function seccompProfileBaseline(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const setters: string[] = [];
  const values = new Set<string>();
  const podProfile = spec.securityContext?.seccompProfile;
  if (podProfile && !seccompValid(podProfile.type)) {
    setters.push("pod");
    values.add(podProfile.type);
  }
  const bad: string[] = [];
  for (const c of containersOf(spec)) {
    const p = c.securityContext?.seccompProfile;
    if (p && !seccompValid(p.type)) {
      bad.push(c.name);
      values.add(p.type);
    }
  }
  if (bad.length) setters.push(containers(bad));
  if (setters.length === 0) return ALLOWED;
  return forbid("seccompProfile", `${setters.join(" and ")} must not set securityContext.seccompProfile.type to ${joinQuote(sortedUnique(values))}`);
}

const SAFE_SYSCTLS = new Set([
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
  "net.ipv4.tcp_rmem",
  "net.ipv4.tcp_wmem",
]);

function sysctls(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad = (spec.securityContext?.sysctls ?? []).map((s) => s.name).filter((n) => !SAFE_SYSCTLS.has(n));
  return bad.length ? forbid("forbidden sysctls", bad.join(", ")) : ALLOWED;
}

function windowsHostProcess(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const setters: string[] = [];
  if (spec.securityContext?.windowsOptions?.hostProcess === true) setters.push("pod");
  const bad = containersOf(spec)
    .filter((c) => c.securityContext?.windowsOptions?.hostProcess === true)
    .map((c) => c.name);
  if (bad.length) setters.push(containers(bad));
  return setters.length ? forbid("hostProcess", `${setters.join(" and ")} must not set securityContext.windowsOptions.hostProcess=true`) : ALLOWED;
}

const BASELINE_CAPABILITIES = new Set([
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
]);

function capabilitiesBaseline(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad: string[] = [];
  const caps = new Set<string>();
  for (const c of containersOf(spec)) {
    const extra = (c.securityContext?.capabilities?.add ?? []).filter((a) => !BASELINE_CAPABILITIES.has(a));
    for (const a of extra) caps.add(a);
    if (extra.length) bad.push(c.name);
  }
  if (bad.length === 0) return ALLOWED;
  return forbid("non-default capabilities", `${containers(bad)} must not include ${joinQuote(sortedUnique(caps))} in securityContext.capabilities.add`);
}

function hostPathVolumes(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const names = spec.volumes.filter((v) => v.hostPath).map((v) => v.name);
  return names.length ? forbid("hostPath volumes", `${pluralize("volume", "volumes", names.length)} ${joinQuote(names)}`) : ALLOWED;
}

// ---- restricted ----

function allowPrivilegeEscalation(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  if (isWindows(spec)) return ALLOWED;
  const bad = containersOf(spec)
    .filter((c) => c.securityContext?.allowPrivilegeEscalation !== false)
    .map((c) => c.name);
  return bad.length ? forbid("allowPrivilegeEscalation != false", `${containers(bad)} must set securityContext.allowPrivilegeEscalation=false`) : ALLOWED;
}

function capabilitiesRestricted(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  if (isWindows(spec)) return ALLOWED; // Windows pods may not set capabilities (pod validation)
  const missingDrop: string[] = [];
  const adding: string[] = [];
  const caps = new Set<string>();
  for (const c of containersOf(spec)) {
    const cc = c.securityContext?.capabilities;
    if (!cc?.drop.includes("ALL")) missingDrop.push(c.name);
    const extra = (cc?.add ?? []).filter((a) => a !== "NET_BIND_SERVICE");
    for (const a of extra) caps.add(a);
    if (extra.length) adding.push(c.name);
  }
  const details: string[] = [];
  if (missingDrop.length) details.push(`${containers(missingDrop)} must set securityContext.capabilities.drop=["ALL"]`);
  if (adding.length) details.push(`${containers(adding)} must not include ${joinQuote(sortedUnique(caps))} in securityContext.capabilities.add`);
  return details.length ? forbid("unrestricted capabilities", details.join("; ")) : ALLOWED;
}

const RESTRICTED_OK_VOLUMES = ["configMap", "downwardApi", "emptyDir", "persistentVolumeClaim", "projected", "secret"] as const;
// The source a volume names, as Kubernetes spells it.
const VOLUME_TYPE_NAMES: Record<string, string> = { hostPath: "hostPath", downwardApi: "downwardAPI" };

function restrictedVolumes(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  const bad: string[] = [];
  const types = new Set<string>();
  for (const v of spec.volumes) {
    const sources = Object.entries(v).filter(([k, s]) => k !== "name" && s !== undefined && s !== null);
    if (sources.some(([k]) => (RESTRICTED_OK_VOLUMES as readonly string[]).includes(k))) continue;
    bad.push(v.name);
    const type = sources[0]?.[0];
    if (type) types.add(VOLUME_TYPE_NAMES[type] ?? type);
  }
  if (bad.length === 0) return ALLOWED;
  const t = sortedUnique(types);
  return forbid(
    "restricted volume types",
    `${pluralize("volume", "volumes", bad.length)} ${joinQuote(bad)} ${pluralize("uses", "use", bad.length)} ${pluralize("restricted volume type", "restricted volume types", t.length)} ${joinQuote(t)}`,
  );
}

function runAsNonRoot(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  if (spec.hostUsers === false) return ALLOWED; // user namespaces: root in the pod is not root on the node
  const setters: string[] = [];
  const podValue = spec.securityContext?.runAsNonRoot;
  if (podValue === false) setters.push("pod");
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of containersOf(spec)) {
    const v = c.securityContext?.runAsNonRoot;
    if (v === false) explicit.push(c.name);
    else if (v === undefined && podValue === undefined) implicit.push(c.name);
  }
  if (explicit.length) setters.push(containers(explicit));
  if (setters.length) return forbid("runAsNonRoot != true", `${setters.join(" and ")} must not set securityContext.runAsNonRoot=false`);
  if (implicit.length) return forbid("runAsNonRoot != true", `pod or ${containers(implicit)} must set securityContext.runAsNonRoot=true`);
  return ALLOWED;
}

function runAsUser(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  if (spec.hostUsers === false) return ALLOWED;
  const setters: string[] = [];
  if (spec.securityContext?.runAsUser === 0) setters.push("pod");
  const bad = containersOf(spec)
    .filter((c) => c.securityContext?.runAsUser === 0)
    .map((c) => c.name);
  if (bad.length) setters.push(containers(bad));
  return setters.length ? forbid("runAsUser=0", `${setters.join(" and ")} must not set runAsUser=0`) : ALLOWED;
}

function seccompProfileRestricted(_meta: ObjectMeta, spec: PodSpec): CheckResult {
  if (isWindows(spec)) return ALLOWED;
  const setters: string[] = [];
  const values = new Set<string>();
  let podSet = false;
  const podProfile = spec.securityContext?.seccompProfile;
  if (podProfile) {
    if (seccompValid(podProfile.type)) podSet = true;
    else {
      setters.push("pod");
      values.add(podProfile.type);
    }
  }
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of containersOf(spec)) {
    const p = c.securityContext?.seccompProfile;
    if (p) {
      if (!seccompValid(p.type)) {
        explicit.push(c.name);
        values.add(p.type);
      }
    } else if (!podSet) implicit.push(c.name);
  }
  if (explicit.length) setters.push(containers(explicit));
  if (setters.length)
    return forbid("seccompProfile", `${setters.join(" and ")} must not set securityContext.seccompProfile.type to ${joinQuote(sortedUnique(values))}`);
  if (implicit.length)
    return forbid("seccompProfile", `pod or ${containers(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`);
  return ALLOWED;
}

/**
 * Every check, in Kubernetes' order (its check files' order): a level runs
 * its baseline checks, then baseline's overlapping ones (baseline) or the
 * restricted ones (restricted) — the order of the reasons in a message.
 */
export const CHECKS: readonly Check[] = [
  { id: "allowPrivilegeEscalation", level: "restricted", fn: allowPrivilegeEscalation },
  { id: "appArmorProfile", level: "baseline", fn: appArmorProfile },
  { id: "capabilities_baseline", level: "baseline", overlap: true, fn: capabilitiesBaseline },
  { id: "capabilities_restricted", level: "restricted", fn: capabilitiesRestricted },
  { id: "hostNamespaces", level: "baseline", fn: hostNamespaces },
  { id: "hostPathVolumes", level: "baseline", overlap: true, fn: hostPathVolumes },
  { id: "hostPorts", level: "baseline", fn: hostPorts },
  { id: "privileged", level: "baseline", fn: privileged },
  { id: "procMount", level: "baseline", fn: procMount },
  { id: "restrictedVolumes", level: "restricted", fn: restrictedVolumes },
  { id: "runAsNonRoot", level: "restricted", fn: runAsNonRoot },
  { id: "runAsUser", level: "restricted", fn: runAsUser },
  { id: "seLinuxOptions", level: "baseline", fn: seLinuxOptions },
  { id: "seccompProfile_baseline", level: "baseline", overlap: true, fn: seccompProfileBaseline },
  { id: "seccompProfile_restricted", level: "restricted", fn: seccompProfileRestricted },
  { id: "sysctls", level: "baseline", fn: sysctls },
  { id: "windowsHostProcess", level: "baseline", fn: windowsHostProcess },
];

/** The checks a level runs, in order (privileged: none). */
export function checksOf(level: "privileged" | "baseline" | "restricted"): Check[] {
  if (level === "privileged") return [];
  const base = CHECKS.filter((c) => c.level === "baseline" && !c.overlap);
  if (level === "baseline") return [...base, ...CHECKS.filter((c) => c.level === "baseline" && c.overlap)];
  return [...base, ...CHECKS.filter((c) => c.level === "restricted")];
}

/** The failed checks of a pod at a level, in order. */
export function evaluatePod(level: "privileged" | "baseline" | "restricted", meta: ObjectMeta, spec: PodSpec): CheckResult[] {
  return checksOf(level)
    .map((c) => c.fn(meta, spec))
    .filter((r) => !r.allowed);
}

/** `host ports (8080), privileged` — the reasons with their details, as Kubernetes' ForbiddenDetail. */
export function forbiddenDetail(results: readonly CheckResult[]): string {
  return results.map((r) => (r.detail ? `${r.reason ?? "unknown forbidden reason"} (${r.detail})` : (r.reason ?? "unknown forbidden reason"))).join(", ");
}

/** `host ports, privileged` — the reasons alone, as Kubernetes' ForbiddenReason. */
export function forbiddenReason(results: readonly CheckResult[]): string {
  return results.map((r) => r.reason ?? "unknown forbidden reason").join(", ");
}
