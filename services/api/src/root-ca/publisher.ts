// The root CA publisher, as Kubernetes' root-ca-cert-publisher controller:
// every active namespace has the ConfigMap kube-root-ca.crt whose `ca.crt`
// is the CA that signed the api's serving certificate (what pods verify the
// api with, mounted by ServiceAccount admission's projected volume). Kept
// by the api through its own handlers: a watch of namespaces (each one,
// when it appears) and of the ConfigMaps of that name (re-created when
// deleted, restored when changed). A namespace whose sync failed (the store
// away) is tried again every `retryMs` until it succeeds, as the
// controller's rate-limited requeue: the watch will not bring it again.
import { isAlreadyExists, isNotFound, unwrap } from "@choreo/kit";
import type { Logger } from "@choreo/kit/log";
import { sleep, type Runnable } from "@choreo/kit/lifecycle";
import { fromKubeJson } from "@choreo/kit/kube-json";
import { WatchRequest } from "@choreo/kit/gen/choreo/api/v1/api";
import type { ConfigMap, Namespace } from "@choreo/kit/gen/choreo/core/v1/core";
import type { ApiHandlers } from "../handlers/api-handlers.js";

export const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";
const DESCRIPTION =
  "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

export interface RootCaPublisherOptions {
  handlers: Pick<ApiHandlers, "get" | "create" | "update" | "watch">;
  /** The PEM written as `ca.crt`. */
  caPem: string;
  log: Logger;
  /** Pause before a watch that ended is opened again, and between tries of a namespace whose sync failed (default 1 s). */
  retryMs?: number;
}

/** Keeps kube-root-ca.crt in every namespace. */
export class RootCaPublisher implements Runnable {
  readonly name = "root-ca-publisher";
  /** Namespaces whose last sync failed: tried again every `retryMs`. */
  private readonly failed = new Set<string>();
  constructor(private readonly opts: RootCaPublisherOptions) {}

  /** `sync`, remembered for another try when it fails (warned once per failure run). */
  private async syncOrRetry(namespace: string): Promise<void> {
    try {
      await this.sync(namespace);
      if (this.failed.delete(namespace)) this.opts.log.info({ namespace }, "root CA ConfigMap synced after failures");
    } catch (err) {
      if (!this.failed.has(namespace)) this.opts.log.warn({ err, namespace }, "root CA ConfigMap not synced; trying again");
      this.failed.add(namespace);
    }
  }

  private async retryFailed(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await sleep(this.opts.retryMs ?? 1000, signal);
      for (const namespace of [...this.failed]) if (!signal.aborted) await this.syncOrRetry(namespace);
    }
  }

  /** Makes `namespace`'s ConfigMap hold the CA (created, or its ca.crt restored); namespaces being deleted are left alone. */
  async sync(namespace: string): Promise<void> {
    const h = this.opts.handlers;
    let ns: Namespace;
    try {
      ns = unwrap(await h.get({ resource: "namespaces", namespace: "", name: namespace })) as Namespace;
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    if (ns.metadata?.deletionTimestamp || ns.status?.phase === "Terminating") return;
    let current: ConfigMap | undefined;
    try {
      current = unwrap(await h.get({ resource: "configmaps", namespace, name: ROOT_CA_CONFIGMAP })) as ConfigMap;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      try {
        await h.create({
          object: fromKubeJson({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: ROOT_CA_CONFIGMAP, namespace, annotations: { "kubernetes.io/description": DESCRIPTION } },
            data: { "ca.crt": this.opts.caPem },
          }),
          dryRun: false,
          fieldManager: "root-ca-publisher",
        });
        this.opts.log.info({ namespace }, "root CA ConfigMap created");
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      return;
    }
    if (current.data["ca.crt"] === this.opts.caPem && Object.keys(current.data).length === 1 && Object.keys(current.binaryData).length === 0) return;
    current.data = { "ca.crt": this.opts.caPem };
    current.binaryData = {};
    await h.update({ object: { kind: { $case: "configMap", value: current } }, dryRun: false, fieldManager: "root-ca-publisher" });
    this.opts.log.info({ namespace }, "root CA ConfigMap restored");
  }

  private async follow(resource: "namespaces" | "configmaps", signal: AbortSignal): Promise<void> {
    const req = WatchRequest.fromPartial({ resource, ...(resource === "configmaps" ? { fieldSelector: `metadata.name=${ROOT_CA_CONFIGMAP}` } : {}) });
    while (!signal.aborted) {
      try {
        // From "": every current object ADDED first, so a (re)start reconciles everything.
        for await (const ev of this.opts.handlers.watch(req, signal)) {
          if (!ev.object || ev.type === "BOOKMARK" || ev.type === "ERROR") continue;
          const meta = unwrap(ev.object).metadata;
          const namespace = resource === "namespaces" ? (meta?.name ?? "") : (meta?.namespace ?? "");
          if (resource === "namespaces" && ev.type === "DELETED") continue;
          await this.syncOrRetry(namespace);
        }
      } catch (err) {
        if (signal.aborted) return;
        this.opts.log.warn({ err, resource }, "root CA publisher watch ended");
      }
      await sleep(this.opts.retryMs ?? 1000, signal);
    }
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.follow("namespaces", signal), this.follow("configmaps", signal), this.retryFailed(signal)]);
  }
}
