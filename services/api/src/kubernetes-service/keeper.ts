// The `kubernetes` Service in `default`, as the apiserver's own
// controlplane controller: ClusterIP the first address of the service CIDR,
// port 443 `https` to the api's https port, no selector, and its Endpoints
// kept by the api itself: every live replica's advertise address and https
// port (membership.ts; Kubernetes' lease endpoint reconciler). Re-created when deleted,
// restored when changed (a watch of both objects, plus a periodic check). A
// sync that failed (the store away) is tried again every `retryMs` until one
// succeeds: the watch will not bring its event again.
import os from "node:os";
import { isAlreadyExists, isNotFound, unwrap } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import { fromKubeJson, toKubeJson } from "@choreo/kit/kube-json";
import { WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ApiHandlers } from "../handlers/api-handlers.js";
import { sortEndpoints, type Membership } from "./membership.js";

export const KUBERNETES_SERVICE = "kubernetes";
const NS = "default";
const LABELS = { component: "apiserver", provider: "kubernetes" };

/** The first usable address of an IPv4 CIDR (10.96.0.0/16 → 10.96.0.1). */
export function firstServiceIp(cidr: string): string {
  const [ip = "", bits = ""] = cidr.split("/");
  const parts = ip.split(".").map(Number);
  const prefix = Number(bits);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255) || !Number.isInteger(prefix) || prefix < 1 || prefix > 30)
    throw new Error(`invalid service CIDR ${cidr}`);
  const n = parts.reduce((acc, p) => acc * 256 + p, 0);
  const size = 2 ** (32 - prefix);
  const v = Math.floor(n / size) * size + 1;
  return [24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join(".");
}

/** The host's first non-loopback, non-link-local IPv4 address; undefined when it has none. */
export function defaultAdvertiseAddress(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === "IPv4" && !a.internal && !a.address.startsWith("169.254.")) return a.address;
  }
  return undefined;
}

export interface KubernetesServiceOptions {
  handlers: Pick<ApiHandlers, "get" | "create" | "update" | "watch">;
  serviceCidr: string;
  /** The api's https port (the Service's targetPort and the Endpoints' port). */
  httpsPort: number;
  /** Where pods reach the api (Endpoints refuse loopback); none: the Service alone, without Endpoints. */
  advertiseAddress: string | undefined;
  log: Logger;
  /** Seconds between checks besides the watch (default 30). */
  resyncMs?: number;
  /** Between tries after a failed sync (default 1 s). */
  retryMs?: number;
  /**
   * The live api replicas (membership.ts): the Endpoints list every one, and
   * this keeper renews its own entry. Without it, only this api's address.
   */
  membership?: Membership;
}

type J = Record<string, unknown>;
const MANAGER = "kubernetes-service";

/** Keeps default/kubernetes (Service and Endpoints). */
export class KubernetesServiceKeeper implements Runnable {
  readonly name = "kubernetes-service";
  /** The last sync failed: tried again every `retryMs`. */
  private failing = false;
  constructor(private readonly opts: KubernetesServiceOptions) {}

  /** `sync`, remembered for another try when it fails (warned once per failure run). */
  private async syncOrRetry(): Promise<void> {
    try {
      await this.sync();
      if (this.failing) this.opts.log.info({}, "kubernetes service synced after failures");
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.opts.log.warn({ err }, "kubernetes service not synced; trying again");
      this.failing = true;
    }
  }

  private wantedSpec(): J {
    return {
      type: "ClusterIP",
      clusterIP: firstServiceIp(this.opts.serviceCidr),
      ports: [{ name: "https", protocol: "TCP", port: 443, targetPort: this.opts.httpsPort }],
      sessionAffinity: "None",
    };
  }

  /** One subset per port, each with its replicas' addresses, in a stable order: every replica computes the same list. */
  private async wantedSubsets(): Promise<J[]> {
    const ip = this.opts.advertiseAddress;
    if (!ip) return [];
    const members = this.opts.membership ? await this.opts.membership.members() : [{ ip, port: this.opts.httpsPort }];
    const byPort = new Map<number, string[]>();
    for (const m of sortEndpoints(members)) byPort.set(m.port, [...(byPort.get(m.port) ?? []), m.ip]);
    return [...byPort].map(([port, ips]) => ({ addresses: ips.map((a) => ({ ip: a })), ports: [{ name: "https", port, protocol: "TCP" }] }));
  }

  private async current(resource: string): Promise<J | undefined> {
    try {
      return toKubeJson(await this.opts.handlers.get({ resource, namespace: NS, name: KUBERNETES_SERVICE }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async createOrIgnore(json: J): Promise<void> {
    try {
      await this.opts.handlers.create({ object: fromKubeJson(json), dryRun: false, fieldManager: MANAGER });
      this.opts.log.info({ kind: json["kind"] }, "kubernetes service object created");
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** Makes both objects what they should be. */
  async sync(): Promise<void> {
    const want = this.wantedSpec();
    const svc = await this.current("services");
    if (!svc) {
      await this.createOrIgnore({ apiVersion: "v1", kind: "Service", metadata: { name: KUBERNETES_SERVICE, namespace: NS, labels: LABELS }, spec: want });
    } else {
      const spec = (svc["spec"] ?? {}) as J;
      // targetPort is left as found: with no selector it routes nothing (the Endpoints do), and replicas
      // listening on different https ports (one machine) would rewrite it back and forth.
      const shape = (ports: unknown) => JSON.stringify(((ports ?? []) as J[]).map((p) => ({ name: p["name"], protocol: p["protocol"], port: p["port"] })));
      const ports = shape(spec["ports"]);
      const wantPorts = shape(want["ports"]);
      if (spec["clusterIP"] !== want["clusterIP"]) {
        // The cluster IP cannot change: the api logs it; an operator deletes the Service to have it re-made.
        this.opts.log.warn({ clusterIP: spec["clusterIP"], want: want["clusterIP"] }, "kubernetes service has another cluster IP");
      }
      if (ports !== wantPorts || spec["selector"] !== undefined) {
        const next = { ...svc, spec: { ...spec, ports: want["ports"] } };
        delete (next.spec as J)["selector"];
        await this.opts.handlers.update({ object: fromKubeJson(next), dryRun: false, fieldManager: MANAGER });
        this.opts.log.info({}, "kubernetes service restored");
      }
    }
    const subsets = await this.wantedSubsets();
    const ep = await this.current("endpoints");
    if (!ep) {
      await this.createOrIgnore({ apiVersion: "v1", kind: "Endpoints", metadata: { name: KUBERNETES_SERVICE, namespace: NS, labels: LABELS }, subsets });
    } else if (JSON.stringify(ep["subsets"] ?? []) !== JSON.stringify(subsets)) {
      await this.opts.handlers.update({ object: fromKubeJson({ ...ep, subsets }), dryRun: false, fieldManager: MANAGER });
      this.opts.log.info({ advertiseAddress: this.opts.advertiseAddress }, "kubernetes endpoints restored");
    }
  }

  private async follow(resource: "services" | "endpoints", signal: AbortSignal): Promise<void> {
    const req = WatchRequest.fromPartial({ resource, namespace: NS, fieldSelector: `metadata.name=${KUBERNETES_SERVICE}` });
    while (!signal.aborted) {
      try {
        for await (const ev of this.opts.handlers.watch(req, signal)) {
          if (!ev.object || ev.type === "BOOKMARK" || ev.type === "ERROR") continue;
          if (unwrap(ev.object).metadata?.name !== KUBERNETES_SERVICE) continue;
          await this.syncOrRetry();
        }
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.warn({ err, resource }, "kubernetes service watch ended");
      }
      await sleep(1000, signal);
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    const membership = this.opts.membership;
    const periodic = async () => {
      while (!signal.aborted) {
        // Renewed before the sync: the Endpoints this replica writes always hold it.
        if (membership) await membership.renew().catch((err: unknown) => this.opts.log.warn({ err }, "api membership not renewed"));
        await this.syncOrRetry();
        await sleep(membership ? Math.min(membership.renewMs, this.opts.resyncMs ?? 30_000) : (this.opts.resyncMs ?? 30_000), signal);
      }
      // A clean stop leaves: the other replicas drop this one from the Endpoints at their next check.
      if (membership) await membership.leave().catch((err: unknown) => this.opts.log.warn({ err }, "api membership not left"));
    };
    const retry = async () => {
      while (!signal.aborted) {
        await sleep(this.opts.retryMs ?? 1_000, signal);
        if (this.failing && !signal.aborted) await this.syncOrRetry();
      }
    };
    await Promise.all([periodic(), retry(), this.follow("services", signal), this.follow("endpoints", signal)]);
  }
}
