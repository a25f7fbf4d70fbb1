import type { Container, PodSpec, PodTemplateSpec, Probe } from "@choreo/kit/gen/choreo/core/v1/core";
import { compareQuantities, parseQuantity, selectorFromSet } from "@choreo/kit/apimachinery";
import { validateDns1123Label, validateDns1123Subdomain } from "@choreo/kit/apimachinery";
import type { Errors } from "../shared/validation.js";
import { validateConfigRefs } from "./config-refs.js";
import { refuseUnenforced } from "./unenforced.js";
import { defaultEphemeralContainer, refuseEphemeralContainers, validateEphemeralContainer } from "./ephemeral-containers.js";

const RESTART_POLICIES = ["Always", "OnFailure", "Never"] as const;
const PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;
const PROTOCOLS = ["TCP", "UDP", "SCTP"] as const;
const DNS_POLICIES = ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"] as const;
const RESOURCES = ["cpu", "memory", "ephemeral-storage", "pods"];

/** Kubernetes' defaults for a pod spec (also inside templates). */
export function defaultPodSpec(spec: PodSpec): void {
  spec.restartPolicy ||= "Always";
  spec.dnsPolicy ||= "ClusterFirst";
  spec.schedulerName ||= "default-scheduler";
  spec.terminationGracePeriodSeconds ??= 30;
  spec.enableServiceLinks ||= false;
  for (const c of [...spec.initContainers, ...spec.containers]) defaultContainer(c);
  for (const c of spec.ephemeralContainers) defaultEphemeralContainer(c);
}

function defaultContainer(c: Container): void {
  if (!c.imagePullPolicy) {
    const tag = c.image.includes("@") ? "digest" : c.image.split("/").pop()?.split(":")[1];
    c.imagePullPolicy = tag === undefined || tag === "latest" ? "Always" : "IfNotPresent";
  }
  c.terminationMessagePath ||= "/dev/termination-log";
  c.terminationMessagePolicy ||= "File";
  for (const p of c.ports) p.protocol ||= "TCP";
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) if (probe) defaultProbe(probe);
}

function defaultProbe(p: Probe): void {
  p.timeoutSeconds ||= 1;
  p.periodSeconds ||= 10;
  p.successThreshold ||= 1;
  p.failureThreshold ||= 3;
  if (p.httpGet) {
    p.httpGet.path ||= "/";
    p.httpGet.scheme ||= "HTTP";
  }
}

/** Validates a pod spec at `path` (e.g. "spec" or "spec.template.spec"). */
export function validatePodSpec(e: Errors, spec: PodSpec | undefined, path: string): void {
  if (!spec) {
    e.required(path, undefined);
    return;
  }
  const volumes = new Set<string>();
  spec.volumes.forEach((v, i) => {
    const f = `${path}.volumes[${i}]`;
    e.required(`${f}.name`, v.name);
    if (v.name) e.messages(`${f}.name`, v.name, validateDns1123Label(v.name));
    if (volumes.has(v.name)) e.duplicate(`${f}.name`, v.name);
    volumes.add(v.name);
    const sources = [v.emptyDir, v.hostPath, v.configMap, v.secret, v.persistentVolumeClaim, v.downwardApi, v.projected].filter(Boolean).length;
    if (sources === 0) e.required(f, "must specify a volume type");
    if (sources > 1) e.forbidden(f, "may not specify more than 1 volume type");
    if (v.hostPath && !v.hostPath.path.startsWith("/")) e.invalid(`${f}.hostPath.path`, v.hostPath.path, "must be an absolute path");
    if (v.emptyDir?.sizeLimit) e.quantity(`${f}.emptyDir.sizeLimit`, v.emptyDir.sizeLimit);
  });
  e.required(`${path}.containers`, spec.containers);
  const names = new Set<string>();
  const check = (c: Container, f: string): void => {
    e.required(`${f}.name`, c.name);
    if (c.name) e.messages(`${f}.name`, c.name, validateDns1123Label(c.name));
    if (names.has(c.name)) e.duplicate(`${f}.name`, c.name);
    names.add(c.name);
    e.required(`${f}.image`, c.image.trim());
    e.oneOf(`${f}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES);
    const portNames = new Set<string>();
    c.ports.forEach((p, j) => {
      e.port(`${f}.ports[${j}].containerPort`, p.containerPort);
      if (p.hostPort) e.port(`${f}.ports[${j}].hostPort`, p.hostPort);
      e.oneOf(`${f}.ports[${j}].protocol`, p.protocol, PROTOCOLS);
      if (p.name) {
        if (p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) || !/[a-z]/.test(p.name)) {
          e.invalid(
            `${f}.ports[${j}].name`,
            p.name,
            "must be no more than 15 characters, contain only lower case letters, digits and '-', and contain at least one letter",
          );
        }
        if (portNames.has(p.name)) e.duplicate(`${f}.ports[${j}].name`, p.name);
        portNames.add(p.name);
      }
    });
    c.env.forEach((v, j) => {
      e.required(`${f}.env[${j}].name`, v.name);
      if (v.name && !/^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(v.name))
        e.invalid(
          `${f}.env[${j}].name`,
          v.name,
          "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
        );
    });
    validateResources(e, c, `${f}.resources`);
    c.volumeMounts.forEach((m, j) => {
      if (!volumes.has(m.name))
        e.causes.push({ field: `${f}.volumeMounts[${j}].name`, reason: "FieldValueNotFound", message: `Not found: ${JSON.stringify(m.name)}` });
      e.required(`${f}.volumeMounts[${j}].mountPath`, m.mountPath);
      // Kubernetes' validateLocalDescendingPath: a subPath stays inside its volume.
      if (m.subPath.startsWith("/")) e.invalid(`${f}.volumeMounts[${j}].subPath`, m.subPath, "must be a relative path");
      if (m.subPath.split("/").includes("..")) e.invalid(`${f}.volumeMounts[${j}].subPath`, m.subPath, "must not contain '..'");
    });
    for (const [name, probe] of [
      ["livenessProbe", c.livenessProbe],
      ["readinessProbe", c.readinessProbe],
      ["startupProbe", c.startupProbe],
    ] as const) {
      if (!probe) continue;
      const handlers = [probe.exec, probe.httpGet, probe.tcpSocket, probe.grpc].filter(Boolean).length;
      if (handlers === 0) e.required(`${f}.${name}`, undefined);
      if (handlers > 1) e.forbidden(`${f}.${name}`, "may not specify more than 1 handler type");
      for (const k of ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"] as const)
        e.nonNegative(`${f}.${name}.${k}`, probe[k]);
      if ((name === "livenessProbe" || name === "startupProbe") && probe.successThreshold > 1)
        e.invalid(`${f}.${name}.successThreshold`, probe.successThreshold, "must be 1");
    }
  };
  spec.initContainers.forEach((c, i) => check(c, `${path}.initContainers[${i}]`));
  // Kubernetes' validateInitContainers: one that is not a sidecar runs to completion before the app starts, so probes and hooks have nothing to act on.
  spec.initContainers.forEach((c, i) => {
    if (c.restartPolicy === "Always") return; // a sidecar: unenforced.ts refuses it
    for (const k of ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] as const)
      if (c[k]) e.forbidden(`${path}.initContainers[${i}].${k}`, "may not be set for init containers without restartPolicy=Always");
  });
  spec.containers.forEach((c, i) => check(c, `${path}.containers[${i}]`));
  // Names unique across containers, init and ephemeral containers; then what only an ephemeral one may not have.
  spec.ephemeralContainers.forEach((c, i) => {
    check(c, `${path}.ephemeralContainers[${i}]`);
    validateEphemeralContainer(e, c, `${path}.ephemeralContainers[${i}]`, spec);
  });
  e.oneOf(`${path}.restartPolicy`, spec.restartPolicy, RESTART_POLICIES);
  e.oneOf(`${path}.dnsPolicy`, spec.dnsPolicy, DNS_POLICIES);
  if (spec.hostNetwork) e.notSupported(`${path}.hostNetwork`, true, ["false"]);
  e.nonNegative(`${path}.terminationGracePeriodSeconds`, spec.terminationGracePeriodSeconds);
  if (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds <= 0)
    e.invalid(`${path}.activeDeadlineSeconds`, spec.activeDeadlineSeconds, "must be greater than 0");
  e.labelMap(`${path}.nodeSelector`, spec.nodeSelector);
  if (spec.nodeName) e.messages(`${path}.nodeName`, spec.nodeName, validateDns1123Subdomain(spec.nodeName));
  // The node gives them to the pod's UTS namespace and /etc/hosts (and once to `hostname`): DNS labels, as in Kubernetes.
  if (spec.hostname) e.messages(`${path}.hostname`, spec.hostname, validateDns1123Label(spec.hostname));
  if (spec.subdomain) e.messages(`${path}.subdomain`, spec.subdomain, validateDns1123Label(spec.subdomain));
  spec.tolerations.forEach((t, i) => {
    const f = `${path}.tolerations[${i}]`;
    if (t.operator) e.oneOf(`${f}.operator`, t.operator, ["Exists", "Equal"]);
    if (t.operator === "Exists" && t.value) e.invalid(`${f}.operator`, t.operator, "value must be empty when `operator` is 'Exists'");
    if (t.effect) e.oneOf(`${f}.effect`, t.effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"]);
  });
  if (spec.preemptionPolicy) e.oneOf(`${path}.preemptionPolicy`, spec.preemptionPolicy, ["PreemptLowerPriority", "Never"]);
  validateConfigRefs(e, spec, path);
  refuseUnenforced(e, spec, path);
}

function validateResources(e: Errors, c: Container, f: string): void {
  const r = c.resources;
  if (!r) return;
  for (const kind of ["limits", "requests"] as const) {
    for (const [name, q] of Object.entries(r[kind])) {
      if (!RESOURCES.includes(name) && !name.includes("/")) e.notSupported(`${f}.${kind}[${name}]`, name, RESOURCES);
      e.quantity(`${f}.${kind}[${name}]`, q);
    }
  }
  for (const [name, req] of Object.entries(r.requests)) {
    const lim = r.limits[name];
    if (lim === undefined) continue;
    try {
      if (compareQuantities(parseQuantity(req), parseQuantity(lim)) > 0)
        e.invalid(`${f}.requests`, req, `must be less than or equal to ${name} limit of ${lim}`);
    } catch {
      // reported above
    }
  }
}

/** Validates a pod template whose labels must be selected by `selector`. */
export function validateTemplate(
  e: Errors,
  t: PodTemplateSpec | undefined,
  path: string,
  selector: Record<string, string> | undefined,
  restartPolicies: readonly string[],
): void {
  if (!t) {
    e.required(path, undefined);
    return;
  }
  const labels = t.metadata?.labels ?? {};
  e.labelMap(`${path}.metadata.labels`, labels);
  if (selector && !selectorFromSet(selector).matches(labels)) e.invalid(`${path}.metadata.labels`, labels, "`selector` does not match template `labels`");
  validatePodSpec(e, t.spec, `${path}.spec`);
  refuseEphemeralContainers(e, t.spec, `${path}.spec`, "ephemeral containers not allowed in pod template");
  if (t.spec && !restartPolicies.includes(t.spec.restartPolicy)) e.notSupported(`${path}.spec.restartPolicy`, t.spec.restartPolicy, restartPolicies);
}

/** Guaranteed / Burstable / BestEffort, as Kubernetes computes it. */
export function qosClass(spec: PodSpec): string {
  let any = false;
  let guaranteed = true;
  for (const c of spec.containers) {
    const { requests = {}, limits = {} } = c.resources ?? {};
    if (Object.keys(requests).length || Object.keys(limits).length) any = true;
    for (const r of ["cpu", "memory"]) {
      const lim = limits[r];
      const req = requests[r] ?? lim;
      if (!lim || req !== lim) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}
