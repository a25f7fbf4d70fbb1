// The `kubernetes` Service in `default`, as the apiserver's own
// controlplane controller: ClusterIP the first address of the service CIDR,
// port 443 `https` to the api's https port, no selector, and its Endpoints
// kept by the api itself to its advertise address. Re-created when deleted,
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

  private wantedSubsets(): J[] {
    const ip = this.opts.advertiseAddress;
    return ip ? [{ addresses: [{ ip }], ports: [{ name: "https", port: this.opts.httpsPort, protocol: "TCP" }] }] : [];
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
      const ports = JSON.stringify(spec["ports"] ?? []);
      const wantPorts = JSON.stringify((want["ports"] as J[]).map((p) => ({ ...p })));
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
    const subsets = this.wantedSubsets();
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
    const periodic = async () => {
      while (!signal.aborted) {
        await this.syncOrRetry();
        await sleep(this.opts.resyncMs ?? 30_000, signal);
      }
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
