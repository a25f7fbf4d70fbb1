// The environment every container gets for the `kubernetes` Service in
// `default`, whatever enableServiceLinks says (the kubelet's
// getServiceEnvVarMap always adds the master service): how in-cluster
// clients (`load_incluster_config()`, client-go's InClusterConfig) find the api.
import type { ApiClient } from "@choreo/kit/client";
import type { Container, EnvVar, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Logger } from "@choreo/kit/log";

/** How long a read of the Service is used before it is read again. */
const TTL_MS = 30_000;

/** The Docker-links variables of a Service named `name` (KUBERNETES_SERVICE_HOST, _PORT, _PORT_<NAME>, KUBERNETES_PORT, _PORT_443_TCP…), in the kubelet's order. */
export function serviceEnv(name: string, svc: Pick<Service, "spec">): [string, string][] {
  const ip = svc.spec?.clusterIp ?? "";
  const ports = svc.spec?.ports ?? [];
  if (!ip || ip === "None" || ports.length === 0) return [];
  const prefix = name.toUpperCase().replaceAll("-", "_");
  const first = ports[0]!;
  const out: [string, string][] = [
    [`${prefix}_SERVICE_HOST`, ip],
    [`${prefix}_SERVICE_PORT`, String(first.port)],
  ];
  for (const p of ports) if (p.name) out.push([`${prefix}_SERVICE_PORT_${p.name.toUpperCase().replaceAll("-", "_")}`, String(p.port)]);
  const proto = (first.protocol || "TCP").toLowerCase();
  out.push([`${prefix}_PORT`, `${proto}://${ip}:${first.port}`]);
  for (const p of ports) {
    const pr = p.protocol || "TCP";
    const base = `${prefix}_PORT_${p.port}_${pr.toUpperCase()}`;
    out.push([base, `${pr.toLowerCase()}://${ip}:${p.port}`], [`${base}_PROTO`, pr.toLowerCase()], [`${base}_PORT`, String(p.port)], [`${base}_ADDR`, ip]);
  }
  return out;
}

/** `pod` with `env` put before each container's own entries (init containers too): the spec's entries win and may `$(…)` them. */
export function withEnv(pod: Pod, env: readonly [string, string][]): Pod {
  const spec = pod.spec;
  if (!spec || env.length === 0) return pod;
  const add = (c: Container): Container => ({
    ...c,
    env: [...env.map(([name, value]): EnvVar => ({ name, value, valueFrom: undefined })), ...c.env],
  });
  return { ...pod, spec: { ...spec, containers: spec.containers.map(add), initContainers: spec.initContainers.map(add) } };
}

/** The `kubernetes` Service's variables, read through the api and kept {@link TTL_MS}; the last good read when the api does not answer. */
export class KubernetesEnv {
  private env: [string, string][] | undefined;
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly client: Pick<ApiClient, "get">,
    private readonly log: Logger,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The variables now (none when the Service has never been read). */
  async current(): Promise<readonly [string, string][]> {
    if (this.now() - this.readAt >= TTL_MS) {
      this.reading ??= this.read().finally(() => (this.reading = undefined));
      await this.reading;
    }
    return this.env ?? [];
  }

  private async read(): Promise<void> {
    try {
      const o = await this.client.get("services", "default", "kubernetes");
      this.env = o.kind?.$case === "service" ? serviceEnv("kubernetes", o.kind.value) : [];
      this.readAt = this.now();
    } catch (err) {
      this.log.warn({ err }, "the kubernetes Service could not be read; containers get its last known variables");
    }
  }
}
