// Kubernetes' validation of what a pod takes from ConfigMaps, Secrets and
// the downward API (pkg/apis/core/validation): env valueFrom and envFrom,
// configMap / secret / downwardAPI / projected volumes. The node agent
// resolves them (services/node-agent/src/config-sources); what it could not
// make sense of (a file path out of its volume, a mode over 0777) is
// refused here first, with 422 naming the field.
import type { Container, DownwardAPIVolumeFile, KeyToPath, PodSpec, ResourceFieldSelector } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Errors } from "../shared/validation.js";

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const ENV_NAME_MSG = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const MODE_MSG = "must be a number between 0 and 0777 (octal), both inclusive";
const ENV_RESOURCES = ["limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"];
const VOLUME_FIELDS = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"];

/** Validates the pod spec's references at `path` (a pod's `spec` or a template's). */
export function validateConfigRefs(e: Errors, spec: PodSpec, path: string): void {
  spec.volumes.forEach((v, i) => {
    const f = `${path}.volumes[${i}]`;
    if (v.configMap) {
      e.required(`${f}.configMap.name`, v.configMap.name);
      mode(e, `${f}.configMap.defaultMode`, v.configMap.defaultMode);
      keyToPaths(e, `${f}.configMap.items`, v.configMap.items);
    }
    if (v.secret) {
      e.required(`${f}.secret.secretName`, v.secret.secretName);
      mode(e, `${f}.secret.defaultMode`, v.secret.defaultMode);
      keyToPaths(e, `${f}.secret.items`, v.secret.items);
    }
    if (v.downwardApi) {
      mode(e, `${f}.downwardAPI.defaultMode`, v.downwardApi.defaultMode);
      downwardFiles(e, `${f}.downwardAPI.items`, v.downwardApi.items);
    }
    if (v.projected) {
      mode(e, `${f}.projected.defaultMode`, v.projected.defaultMode);
      const paths = new Set<string>();
      v.projected.sources.forEach((s, j) => {
        const sf = `${f}.projected.sources[${j}]`;
        const kinds = [s.configMap, s.secret, s.downwardApi, s.serviceAccountToken].filter(Boolean).length;
        if (kinds === 0) e.required(sf, "must specify exactly one projection type");
        if (kinds > 1) e.forbidden(sf, "may not specify more than 1 volume type per source");
        if (s.configMap) keyToPaths(e, `${sf}.configMap.items`, s.configMap.items);
        if (s.secret) keyToPaths(e, `${sf}.secret.items`, s.secret.items);
        if (s.downwardApi) downwardFiles(e, `${sf}.downwardAPI.items`, s.downwardApi.items);
        const mine = [...(s.configMap?.items ?? []), ...(s.secret?.items ?? []), ...(s.downwardApi?.items ?? [])].map((it) => it.path);
        for (const p of mine) {
          if (paths.has(p)) e.invalid(`${sf}`, p, "conflicting duplicate paths");
          paths.add(p);
        }
      });
    }
  });
  const containers = (cs: Container[], at: string): void => cs.forEach((c, i) => container(e, c, `${path}.${at}[${i}]`));
  containers(spec.initContainers, "initContainers");
  containers(spec.containers, "containers");
}

function container(e: Errors, c: Container, f: string): void {
  c.envFrom.forEach((s, j) => {
    const ff = `${f}.envFrom[${j}]`;
    if (s.prefix && !ENV_NAME.test(s.prefix)) e.invalid(`${ff}.prefix`, s.prefix, ENV_NAME_MSG);
    const refs = [s.configMapRef, s.secretRef].filter(Boolean).length;
    if (refs === 0) e.required(ff, "must specify one of: `configMapRef` or `secretRef`");
    if (refs > 1) e.forbidden(ff, "may not have more than one field specified at a time");
    if (s.configMapRef) e.required(`${ff}.configMapRef.name`, s.configMapRef.name);
    if (s.secretRef) e.required(`${ff}.secretRef.name`, s.secretRef.name);
  });
  c.env.forEach((v, j) => {
    const from = v.valueFrom;
    if (!from) return;
    const ff = `${f}.env[${j}].valueFrom`;
    const refs = [from.fieldRef, from.resourceFieldRef, from.configMapKeyRef, from.secretKeyRef].filter(Boolean).length;
    if (refs === 0) e.required(ff, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`");
    if (refs > 1) e.invalid(ff, "", "may not have more than one field specified at a time");
    if (v.value) e.invalid(ff, "", "may not be specified when `value` is not empty");
    for (const [name, ref] of [
      ["configMapKeyRef", from.configMapKeyRef],
      ["secretKeyRef", from.secretKeyRef],
    ] as const) {
      if (!ref) continue;
      e.required(`${ff}.${name}.name`, ref.name);
      e.required(`${ff}.${name}.key`, ref.key);
      if (ref.key && !CONFIG_KEY.test(ref.key)) e.invalid(`${ff}.${name}.key`, ref.key, CONFIG_KEY_MSG);
    }
    if (from.resourceFieldRef) resourceField(e, `${ff}.resourceFieldRef`, from.resourceFieldRef, false);
  });
}

function mode(e: Errors, f: string, m: number | undefined): void {
  if (m !== undefined && (m < 0 || m > 0o777)) e.invalid(f, m, MODE_MSG);
}

/** Kubernetes' validateLocalNonReservedPath: relative, no `..` component, not starting with `..`. */
function localPath(e: Errors, f: string, p: string): void {
  e.required(f, p);
  if (!p) return;
  if (p.startsWith("/")) e.invalid(f, p, "must be a relative path");
  if (p.split("/").includes("..")) e.invalid(f, p, "must not contain '..'");
  else if (p.startsWith("..")) e.invalid(f, p, "must not start with '..'");
}

function keyToPaths(e: Errors, f: string, items: readonly KeyToPath[]): void {
  items.forEach((it, i) => {
    e.required(`${f}[${i}].key`, it.key);
    localPath(e, `${f}[${i}].path`, it.path);
    mode(e, `${f}[${i}].mode`, it.mode);
  });
}

function downwardFiles(e: Errors, f: string, items: readonly DownwardAPIVolumeFile[]): void {
  items.forEach((it, i) => {
    const ff = `${f}[${i}]`;
    localPath(e, `${ff}.path`, it.path);
    mode(e, `${ff}.mode`, it.mode);
    if (it.fieldRef && it.resourceFieldRef) e.invalid(ff, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously");
    if (it.fieldRef) {
      const p = it.fieldRef.fieldPath;
      if (!VOLUME_FIELDS.includes(p) && !/^metadata\.(labels|annotations)\['.+'\]$/.test(p)) e.notSupported(`${ff}.fieldRef.fieldPath`, p, VOLUME_FIELDS);
    }
    if (it.resourceFieldRef) resourceField(e, `${ff}.resourceFieldRef`, it.resourceFieldRef, true);
  });
}

function resourceField(e: Errors, f: string, r: ResourceFieldSelector, volume: boolean): void {
  if (volume) e.required(`${f}.containerName`, r.containerName);
  e.required(`${f}.resource`, r.resource);
  if (r.resource && !ENV_RESOURCES.includes(r.resource)) e.notSupported(`${f}.resource`, r.resource, ENV_RESOURCES);
  if (r.divisor) e.quantity(`${f}.divisor`, r.divisor);
}
