// The endpoints reconciler: one key per Service; the Endpoints of the same
// name are made equal to desiredSubsets(service, selected pods). Handlers
// only enqueue service keys (a pod's old and new labels both count).
import { emptyMeta, isAlreadyExists, isNotFound, keyOf, splitKey, wrap } from "@choreo/kit";
import { selectorFromSet } from "@choreo/kit/apimachinery";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done } from "@choreo/kit/controller";
import type { Endpoints, Pod, Service } from "@choreo/kit/gen/choreo/core/v1/core";
import { BY_NAMESPACE, namespaceOf, type Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";
import { canonicalSubsets, desiredSubsets } from "./subsets.js";

/** Options of {@link EndpointsReconciler}. */
export interface EndpointsReconcilerOptions {
  client: Pick<ApiClient, "create" | "update" | "delete" | "get">;
  services: Cache<Service>;
  pods: Cache<Pod>;
  endpoints: Cache<Endpoints>;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

/** Keeps each selector Service's Endpoints equal to its selected pods. A Runnable: starts once the caches synced. */
export class EndpointsReconciler implements Runnable {
  readonly name = "endpoints-reconciler";
  readonly controller: Controller;
  private readonly opts: EndpointsReconcilerOptions;
  private readonly log: Logger;

  constructor(opts: EndpointsReconcilerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: "endpoints" });
    this.controller = new Controller({
      name: "endpoints",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 4,
      log: opts.log,
      registry: opts.registry,
    });
    opts.services.addIndexer(BY_NAMESPACE, namespaceOf);
    opts.pods.addIndexer(BY_NAMESPACE, namespaceOf);
    const enqueueObj = (o: { metadata?: { namespace: string; name: string } }): void => {
      if (o.metadata) this.controller.enqueue(keyOf(o.metadata));
    };
    opts.services.addEventHandler({ onAdd: enqueueObj, onUpdate: (_o, n) => enqueueObj(n), onDelete: enqueueObj });
    // Someone else changing or deleting an Endpoints we own: put it back.
    opts.endpoints.addEventHandler({ onUpdate: (_o, n) => enqueueObj(n), onDelete: enqueueObj });
    opts.pods.addEventHandler({
      onAdd: (p) => this.enqueueServicesOf([p]),
      onUpdate: (o, n) => this.enqueueServicesOf([o, n]),
      onDelete: (p) => this.enqueueServicesOf([p]),
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    const { services, pods, endpoints } = this.opts;
    await Promise.all([services.waitForSync(signal), pods.waitForSync(signal), endpoints.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  /** The keys of the services in the pods' namespace whose selector matches any of the pods' labels. */
  servicesOf(pods: readonly Pod[]): Set<string> {
    const keys = new Set<string>();
    const ns = pods[0]?.metadata?.namespace ?? "";
    for (const svc of this.opts.services.byIndex(BY_NAMESPACE, ns)) {
      const sel = svc.spec?.selector ?? {};
      if (Object.keys(sel).length === 0 || !svc.metadata) continue;
      const s = selectorFromSet(sel);
      if (pods.some((p) => s.matches(p.metadata?.labels))) keys.add(keyOf(svc.metadata));
    }
    return keys;
  }

  private enqueueServicesOf(pods: readonly Pod[]): void {
    for (const k of this.servicesOf(pods)) this.controller.enqueue(k);
  }

  /** Makes the Endpoints of the service `key` match; deletes them when the service is gone. */
  async reconcile(key: string): Promise<ReturnType<typeof done>> {
    const { client, services, pods, endpoints } = this.opts;
    const { namespace, name } = splitKey(key);
    const svc = services.get(key);
    if (!svc) {
      try {
        await client.delete("endpoints", namespace, name);
        this.log.info({ service: key }, "endpoints deleted");
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return done();
    }
    const selector = svc.spec?.selector ?? {};
    // A service without a selector has Endpoints its user manages.
    if (Object.keys(selector).length === 0 || svc.metadata?.deletionTimestamp) return done();

    const sel = selectorFromSet(selector);
    const selected = pods.byIndex(BY_NAMESPACE, namespace).filter((p) => sel.matches(p.metadata?.labels));
    const subsets = desiredSubsets(svc, selected);
    const labels = { ...(svc.metadata?.labels ?? {}) };
    const current = endpoints.get(key);
    if (current && canonicalSubsets(current.subsets) === canonicalSubsets(subsets) && sameLabels(current.metadata?.labels, labels)) return done();

    if (!current) {
      const fresh: Endpoints = { apiVersion: "v1", kind: "Endpoints", metadata: emptyMeta({ namespace, name, labels }), subsets };
      try {
        await client.create(wrap("endpoints", fresh));
        this.log.info({ service: key, subsets: subsets.length }, "endpoints created");
        return done();
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    // Not in the cache yet, or stale: update on what the api holds (a 409 retries the key).
    const base = current ?? (await this.getEndpoints(namespace, name));
    const next: Endpoints = { ...base, metadata: { ...emptyMeta(), ...base.metadata, labels }, subsets };
    await client.update(wrap("endpoints", next));
    this.log.info({ service: key, subsets: subsets.length }, "endpoints updated");
    return done();
  }

  private async getEndpoints(namespace: string, name: string): Promise<Endpoints> {
    const o = await this.opts.client.get("endpoints", namespace, name);
    if (o.kind?.$case !== "endpoints") throw new Error(`endpoints ${namespace}/${name}: unexpected kind ${o.kind?.$case ?? "none"}`);
    return o.kind.value;
  }
}

function sameLabels(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b).length && ka.every((k) => a?.[k] === b[k]);
}
