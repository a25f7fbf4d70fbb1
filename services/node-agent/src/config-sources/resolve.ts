// What a pod's containers get from ConfigMaps, Secrets and the downward
// API, resolved as the kubelet does before it creates them: the
// environment (env[].valueFrom, envFrom) and the files of its configMap,
// secret, downwardAPI and projected volumes. Pure but for the lookups.
import { parseQuantity } from "@choreo/kit/apimachinery";
import type { Container, EnvVar, KeyToPath, Pod, ResourceFieldSelector, ServiceAccountTokenProjection, Volume } from "@choreo/kit/gen/choreo/core/v1/core";
import { fieldValue, isConfigVolume } from "../runtime/pod-spec.js";

/** A ConfigMap's or Secret's keys: `strings` is what env sees (a ConfigMap's data, a Secret's data as text), `files` what volumes see (binaryData too). */
export interface SourceData {
  strings: ReadonlyMap<string, string>;
  files: ReadonlyMap<string, Uint8Array>;
}

/** Reads the pod's namespace's ConfigMaps and Secrets; undefined when one does not exist. */
export interface Lookup {
  configMap(name: string): Promise<SourceData | undefined>;
  secret(name: string): Promise<SourceData | undefined>;
  /** The pod's token for a projected serviceAccountToken source (pod-tokens.ts); absent: such sources cannot be written. */
  serviceAccountToken?(pod: Pod, src: ServiceAccountTokenProjection): Promise<string>;
}

/** Node allocatable, what resourceFieldRef reports for a limit the container does not set (the kubelet's rule). */
export interface Allocatable {
  cpu: string;
  memory: string;
}

/** One file of a volume's payload. */
export interface FileProjection {
  data: Uint8Array;
  mode: number;
}

/** Path (relative to the volume) → file. */
export type Payload = Map<string, FileProjection>;

/** Kubernetes' default mode of configMap, secret, downwardAPI and projected files (0644). */
export const DEFAULT_MODE = 0o644;

/**
 * Why a pod cannot start yet: a container's configuration (a missing
 * ConfigMap, Secret or key: the kubelet's CreateContainerConfigError) or a
 * volume that cannot be set up (FailedMount; the containers wait in
 * ContainerCreating). The message is the kubelet's.
 */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    message: string,
    readonly where: { container: string } | { volume: string },
  ) {
    super(message);
  }
}

/** What a ConfigMap or Secret not found is called in the kubelet's message (`configmap "x" not found`). */
const notFound = (kind: "configmap" | "secret", name: string): string => `${kind} "${name}" not found`;

/** Kubernetes' (strict) environment variable name: what envFrom keys must be, else they are skipped. */
export function isEnvVarName(name: string): boolean {
  return /^[-._a-zA-Z][-._a-zA-Z0-9]*$/.test(name);
}

/** A value taken literally by the runtimes' `$(VAR)` expansion (`$` written `$$`): values from objects are never expanded. */
export function literal(value: string): string {
  return value.replaceAll("$", "$$");
}

/** The container's env once resolved: literal values for every ConfigMap, Secret and resource reference; fieldRefs stay (the runtime knows the pod IP). */
export interface ResolvedEnv {
  env: EnvVar[];
  /** The kubelet's InvalidEnvironmentVariableNames warnings (envFrom keys skipped). */
  warnings: string[];
}

/**
 * The kubelet's makeEnvironmentVariables: envFrom sources in order (keys
 * with `prefix`, invalid names skipped with a warning, a missing optional
 * source skipped), then `env`, which wins over them; configMapKeyRef and
 * secretKeyRef with `optional`, resourceFieldRef with its divisor. Throws
 * {@link ConfigError} naming the container for a missing non-optional
 * ConfigMap, Secret or key.
 */
export async function resolveEnv(pod: Pod, c: Container, lookup: Lookup, alloc: Allocatable): Promise<ResolvedEnv> {
  const ns = pod.metadata?.namespace ?? "";
  const fail = (message: string): never => {
    throw new ConfigError(message, { container: c.name });
  };
  const fromSources = new Map<string, string>();
  const warnings: string[] = [];
  for (const f of c.envFrom) {
    const ref = f.configMapRef ?? f.secretRef;
    if (!ref) continue;
    const kind = f.configMapRef ? "configmap" : "secret";
    const data = await (f.configMapRef ? lookup.configMap(ref.name) : lookup.secret(ref.name));
    if (!data) {
      if (ref.optional) continue;
      fail(notFound(kind, ref.name));
    }
    const invalid: string[] = [];
    for (const [k, v] of [...data!.strings].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const name = f.prefix + k;
      if (!isEnvVarName(name)) invalid.push(name);
      else fromSources.set(name, v);
    }
    if (invalid.length > 0)
      warnings.push(
        `Keys [${invalid.sort().join(", ")}] from the EnvFrom ${kind === "configmap" ? "configMap" : "secret"} ${ns}/${ref.name} were skipped since they are considered invalid environment variable names.`,
      );
  }
  const env: EnvVar[] = [...fromSources].map(([name, value]) => ({ name, value: literal(value), valueFrom: undefined }));
  for (const e of c.env) {
    const from = e.valueFrom;
    const cm = from?.configMapKeyRef;
    const sec = from?.secretKeyRef;
    if (cm || sec) {
      const ref = (cm ?? sec)!;
      const data = await (cm ? lookup.configMap(ref.name) : lookup.secret(ref.name));
      if (!data) {
        if (ref.optional) continue;
        fail(notFound(cm ? "configmap" : "secret", ref.name));
      }
      const value = data!.strings.get(ref.key);
      if (value === undefined) {
        if (ref.optional) continue;
        fail(`couldn't find key ${ref.key} in ${cm ? "ConfigMap" : "Secret"} ${ns}/${ref.name}`);
      }
      env.push({ name: e.name, value: literal(value!), valueFrom: undefined });
    } else if (from?.resourceFieldRef) {
      env.push({ name: e.name, value: literal(resourceValue(pod, from.resourceFieldRef, c.name, alloc)), valueFrom: undefined });
    } else {
      env.push(e);
    }
  }
  return { env, warnings };
}

/**
 * The kubelet's ExtractContainerResourceValue: limits.cpu|memory (node
 * allocatable when unset), requests.cpu|memory (the limit when only that is
 * set, else 0), divided by `divisor` (default 1) and rounded up; cpu in
 * millicores first. Unknown resources (ephemeral-storage, hugepages) are 0.
 */
export function resourceValue(pod: Pod, sel: ResourceFieldSelector, defaultContainer: string, alloc: Allocatable): string {
  const name = sel.containerName || defaultContainer;
  const c = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].find((x) => x.name === name);
  const limits = c?.resources?.limits ?? {};
  const requests = c?.resources?.requests ?? {};
  const [kind, resource] = sel.resource.split(".", 2) as [string, string];
  const allocatable: Record<string, string> = { cpu: alloc.cpu, memory: alloc.memory };
  const set = kind === "limits" ? limits[resource] || allocatable[resource] : requests[resource] || limits[resource];
  const q = parseQuantity(set || "0");
  const d = parseQuantity(sel.divisor || "1");
  if (resource === "cpu") return ceilDiv(q.milli, d.milli === 0n ? 1000n : d.milli).toString();
  return ceilDiv(q.value, d.value === 0n ? 1n : d.value).toString();
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? 0n : (a + b - 1n) / b;
}

/** Whether `path` is one a volume file may have: relative, no `..` component, not starting with `..` (the kubelet's AtomicWriter validatePath). */
export function validFilePath(p: string): boolean {
  if (p === "" || p.startsWith("/") || p.startsWith("..") || p.length > 4096) return false;
  return !p.split("/").some((s) => s === ".." || s === "");
}

const te = new TextEncoder();

/**
 * A volume's files (the kubelet's MakePayload for each kind): every key
 * at its own path, or with `items` only those, at their paths with their
 * modes (`defaultMode`, else 0644, for the rest); projected sources merged.
 * Throws {@link ConfigError} naming the volume (FailedMount) for a missing
 * non-optional ConfigMap or Secret, or a key its items name.
 */
export async function volumePayload(pod: Pod, v: Volume, lookup: Lookup, alloc: Allocatable): Promise<Payload> {
  const fail = (message: string): never => {
    throw new ConfigError(message, { volume: v.name });
  };
  const out: Payload = new Map();
  const keyed = async (kind: "configmap" | "secret", name: string, items: readonly KeyToPath[], optional: boolean | undefined, mode: number): Promise<void> => {
    const data = await (kind === "configmap" ? lookup.configMap(name) : lookup.secret(name));
    if (!data) {
      if (optional) return;
      fail(notFound(kind, name));
    }
    const files = data!.files;
    if (items.length === 0) {
      for (const [k, b] of files) out.set(k, { data: b, mode });
      return;
    }
    for (const it of items) {
      const b = files.get(it.key);
      if (!b) {
        if (optional) continue;
        fail(`${kind} references non-existent ${kind === "configmap" ? "config" : "secret"} key: ${it.key}`);
      }
      out.set(it.path, { data: b!, mode: it.mode ?? mode });
    }
  };
  const downward = (
    items: readonly {
      path: string;
      mode?: number | undefined;
      fieldRef?: { fieldPath: string } | undefined;
      resourceFieldRef?: ResourceFieldSelector | undefined;
    }[],
    mode: number,
  ): void => {
    for (const it of items) {
      const value = it.fieldRef ? downwardField(pod, it.fieldRef.fieldPath) : it.resourceFieldRef ? resourceValue(pod, it.resourceFieldRef, "", alloc) : "";
      out.set(it.path, { data: te.encode(value), mode: it.mode ?? mode });
    }
  };
  if (v.configMap) await keyed("configmap", v.configMap.name, v.configMap.items, v.configMap.optional, v.configMap.defaultMode ?? DEFAULT_MODE);
  if (v.secret) await keyed("secret", v.secret.secretName, v.secret.items, v.secret.optional, v.secret.defaultMode ?? DEFAULT_MODE);
  if (v.downwardApi) downward(v.downwardApi.items, v.downwardApi.defaultMode ?? DEFAULT_MODE);
  if (v.projected) {
    const mode = v.projected.defaultMode ?? DEFAULT_MODE;
    for (const s of v.projected.sources) {
      if (s.configMap) await keyed("configmap", s.configMap.name, s.configMap.items, s.configMap.optional, mode);
      if (s.secret) await keyed("secret", s.secret.name, s.secret.items, s.secret.optional, mode);
      if (s.downwardApi) downward(s.downwardApi.items, mode);
      if (s.serviceAccountToken) {
        if (!lookup.serviceAccountToken) fail("serviceAccountToken projections are not supported on this node");
        let token: string;
        try {
          token = await lookup.serviceAccountToken!(pod, s.serviceAccountToken);
        } catch (err) {
          // The kubelet's message; the api's refusal says why (never the token: there is none).
          fail(`failed to fetch token: ${err instanceof Error ? err.message : String(err)}`);
        }
        out.set(s.serviceAccountToken.path, { data: te.encode(token!), mode });
      }
    }
  }
  for (const p of out.keys()) if (!validFilePath(p)) fail(`invalid path ${JSON.stringify(p)}: must be relative and may not contain '..'`);
  return out;
}

/** A downwardAPI volume file's value: fieldPaths as for env, and the whole labels or annotations as sorted `key="value"` lines (the kubelet's FormatMap). */
export function downwardField(pod: Pod, fieldPath: string): string {
  const m = pod.metadata;
  if (fieldPath === "metadata.labels" || fieldPath === "metadata.annotations") {
    const map = (fieldPath === "metadata.labels" ? m?.labels : m?.annotations) ?? {};
    return Object.keys(map)
      .sort()
      .map((k) => `${k}=${JSON.stringify(map[k])}`)
      .join("\n");
  }
  return fieldValue(pod, fieldPath, { podIp: "", hostIp: "" });
}

/** A pod with its references resolved: what the runtime starts, and the files of its config volumes by volume name. */
export interface ResolvedPod {
  pod: Pod;
  volumes: Map<string, Payload>;
  /** InvalidEnvironmentVariableNames warnings. */
  warnings: string[];
}

/**
 * Resolves everything the pod refers to, volumes first (as the kubelet
 * mounts them before creating containers), then each container's env (init
 * containers too). The pod returned has literal env values in place of the
 * references, so the runtimes need not know about them. Throws
 * {@link ConfigError} for the first thing missing.
 */
export async function resolvePod(pod: Pod, lookup: Lookup, alloc: Allocatable): Promise<ResolvedPod> {
  const spec = pod.spec;
  if (!spec) return { pod, volumes: new Map(), warnings: [] };
  const volumes = new Map<string, Payload>();
  for (const v of spec.volumes) if (isConfigVolume(v)) volumes.set(v.name, await volumePayload(pod, v, lookup, alloc));
  const warnings: string[] = [];
  const resolve = async (cs: Container[]): Promise<Container[]> => {
    const out: Container[] = [];
    for (const c of cs) {
      if (c.envFrom.length === 0 && !c.env.some((e) => e.valueFrom?.configMapKeyRef || e.valueFrom?.secretKeyRef || e.valueFrom?.resourceFieldRef)) {
        out.push(c);
        continue;
      }
      const r = await resolveEnv(pod, c, lookup, alloc);
      warnings.push(...r.warnings);
      out.push({ ...c, env: r.env, envFrom: [] });
    }
    return out;
  };
  const initContainers = await resolve(spec.initContainers);
  const containers = await resolve(spec.containers);
  return { pod: { ...pod, spec: { ...spec, initContainers, containers } }, volumes, warnings };
}

/** Whether the pod refers to anything the agent resolves (most pods do not: they start without a lookup). */
export function needsResolution(pod: Pod): boolean {
  const spec = pod.spec;
  if (!spec) return false;
  const refers = (c: Container): boolean =>
    c.envFrom.length > 0 || c.env.some((e) => e.valueFrom?.configMapKeyRef || e.valueFrom?.secretKeyRef || e.valueFrom?.resourceFieldRef);
  return spec.volumes.some(isConfigVolume) || spec.containers.some(refers) || spec.initContainers.some(refers);
}
