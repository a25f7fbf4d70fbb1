// The service accounts controller (Kubernetes' pkg/controller/serviceaccount
// ServiceAccountsController): every active namespace has a ServiceAccount
// named default. Keyed by namespace: a namespace's arrival or change, and the
// deletion of one of its accounts, enqueue it; a sync creates what the cache
// lacks (AlreadyExists and a namespace being terminated are not errors).
import { ApiError, emptyMeta, isNotFound, wrap } from "@choreo/kit";
import type { ApiClient } from "@choreo/kit/client";
import { Controller, done, type Result } from "@choreo/kit/controller";
import { ServiceAccount, type Namespace } from "@choreo/kit/gen/choreo/core/v1/core";
import type { Cache } from "@choreo/kit/informer";
import type { Runnable } from "@choreo/kit/lifecycle";
import type { Logger } from "@choreo/kit/log";
import type { Registry } from "prom-client";

/** The accounts every namespace has (Kubernetes' DefaultServiceAccountsControllerOptions). */
export const REQUIRED_SERVICE_ACCOUNTS = ["default"] as const;

/** Options of {@link ServiceAccountsController}. */
export interface ServiceAccountsControllerOptions {
  client: Pick<ApiClient, "create">;
  namespaces: Cache<Namespace>;
  serviceAccounts: Cache<ServiceAccount>;
  log: Logger;
  workers?: number;
  registry?: Registry;
}

export class ServiceAccountsController implements Runnable {
  readonly name = "serviceaccounts-controller";
  readonly controller: Controller;
  private readonly log: Logger;

  constructor(private readonly opts: ServiceAccountsControllerOptions) {
    this.log = opts.log.child({ controller: "serviceaccounts" });
    this.controller = new Controller({
      name: "serviceaccounts",
      reconcile: (key) => this.reconcile(key),
      workers: opts.workers ?? 1,
      log: opts.log,
      registry: opts.registry,
    });
    const enqueue = (ns: Namespace): void => {
      if (ns.metadata) this.controller.enqueue(ns.metadata.name);
    };
    opts.namespaces.addEventHandler({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n) });
    opts.serviceAccounts.addEventHandler({
      onDelete: (sa) => {
        if (sa.metadata && (REQUIRED_SERVICE_ACCOUNTS as readonly string[]).includes(sa.metadata.name)) this.controller.enqueue(sa.metadata.namespace);
      },
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    await Promise.all([this.opts.namespaces.waitForSync(signal), this.opts.serviceAccounts.waitForSync(signal)]);
    await this.controller.start(signal);
  }

  async reconcile(namespace: string): Promise<Result> {
    const ns = this.opts.namespaces.get(namespace);
    if (!ns?.metadata || ns.metadata.deletionTimestamp || ns.status?.phase === "Terminating") return done();
    for (const name of REQUIRED_SERVICE_ACCOUNTS) {
      if (this.opts.serviceAccounts.get(`${namespace}/${name}`)) continue;
      const sa = ServiceAccount.fromPartial({ apiVersion: "v1", kind: "ServiceAccount", metadata: emptyMeta({ namespace, name }) });
      try {
        await this.opts.client.create(wrap("serviceAccount", sa));
        this.log.info({ namespace, serviceAccount: name }, "service account created");
      } catch (err) {
        // Made meanwhile (the informer brings it), or the namespace is going away.
        if (err instanceof ApiError && (err.reason === "AlreadyExists" || err.reason === "Forbidden")) continue;
        if (isNotFound(err)) return done();
        throw err;
      }
    }
    return done();
  }
}
