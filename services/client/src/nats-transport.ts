// The api over NATS request-reply (kit's ApiClient), watch from the event stream.
import type { NatsConnection } from "@nats-io/transport-node";
import type { ApiObject, DeleteOptions, ObjectList } from "@choreo/kit";
import { ApiClient, type ListOptions } from "@choreo/kit/client";
import { subscribe, type ChangeEvent } from "./subscribe.js";
import { TRANSPORT, type ApiTransport, type WatchFrom } from "./transport.js";

/** CRUD as `choreo.api.<method>` requests (protobuf); watch = a subscription to CHOREO_EVENTS from the revision. */
export class NatsApiTransport implements ApiTransport {
  readonly [TRANSPORT] = true as const;
  readonly name = "nats" as const;
  readonly api: ApiClient;

  constructor(
    readonly nc: NatsConnection,
    opts: { token?: string; timeoutMs?: number } = {},
    private readonly ownsConnection = false,
  ) {
    this.api = new ApiClient(nc, { ...(opts.token ? { token: opts.token } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  }

  get(resource: string, namespace: string, name: string): Promise<ApiObject> {
    return this.api.get(resource, namespace, name);
  }
  list(resource: string, opts: ListOptions): Promise<ObjectList> {
    return this.api.list(resource, opts);
  }
  create(object: ApiObject): Promise<ApiObject> {
    return this.api.create(object);
  }
  update(object: ApiObject): Promise<ApiObject> {
    return this.api.update(object);
  }
  updateStatus(object: ApiObject): Promise<ApiObject> {
    return this.api.updateStatus(object);
  }
  delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject> {
    return this.api.delete(resource, namespace, name, options);
  }

  /** The event stream (CHOREO_EVENTS) from the revision. */
  async *watchFrom(resource: string, from: WatchFrom): AsyncGenerator<ChangeEvent> {
    yield* subscribe(this.nc, {
      resource,
      ...(from.namespace ? { namespace: from.namespace } : {}),
      ...(from.labelSelector ? { labelSelector: from.labelSelector } : {}),
      ...(from.signal ? { signal: from.signal } : {}),
      fromRevision: Number(from.resourceVersion || 0),
    });
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.nc.close();
  }
}
