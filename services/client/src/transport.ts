// What ChoreoClient needs of a door to the api: CRUD on the api's protobuf
// objects, and the changes after a revision. Three implementations: NATS
// (nats-transport.ts), the HTTPS gateway (http-transport.ts) and gRPC
// (grpc-transport.ts); every failure is an ApiError carrying a Kubernetes Status.
import type { ApiObject, DeleteOptions, ObjectList } from "@choreo/kit";
import type { ListOptions } from "@choreo/kit/client";
import type { ChangeEvent } from "./subscribe.js";

/** The door a client goes through. */
export type TransportName = "nats" | "http" | "grpc";

/** Marks transports, so that `new ChoreoClient(x)` tells one from a NatsConnection. */
export const TRANSPORT: unique symbol = Symbol.for("choreo.client.transport");

/** A watch from a revision: every matching change after `resourceVersion`. */
export interface WatchFrom {
  namespace?: string;
  labelSelector?: string;
  /** The revision to follow from (a list's `metadata.resourceVersion`). */
  resourceVersion: string;
  /**
   * http, grpc: Kubernetes' `timeoutSeconds` of each watch request — the
   * server ends the stream after it and the transport watches again from the
   * last revision seen (default: the server's, 30–60 min over HTTP, none over
   * gRPC). No meaning over NATS (a subscription has no server-side end).
   */
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

/** One door to the api. */
export interface ApiTransport {
  readonly [TRANSPORT]: true;
  readonly name: TransportName;
  get(resource: string, namespace: string, name: string): Promise<ApiObject>;
  list(resource: string, opts: ListOptions): Promise<ObjectList>;
  create(object: ApiObject): Promise<ApiObject>;
  update(object: ApiObject): Promise<ApiObject>;
  updateStatus(object: ApiObject): Promise<ApiObject>;
  delete(resource: string, namespace: string, name: string, options?: Partial<DeleteOptions>): Promise<ApiObject>;
  /** Every matching change after `from.resourceVersion`, until the signal aborts; a 410 Expired ApiError when that revision is gone. */
  watchFrom(resource: string, from: WatchFrom): AsyncGenerator<ChangeEvent>;
  close(): Promise<void>;
}

/** Whether `x` is a transport (rather than a NatsConnection). */
export function isTransport(x: unknown): x is ApiTransport {
  return typeof x === "object" && x !== null && TRANSPORT in x;
}

/** A complete DeleteOptions from the fields given (the generated type has no optional fields). */
export function deleteOptions(options: Partial<DeleteOptions> | undefined): DeleteOptions | undefined {
  return options ? { gracePeriodSeconds: undefined, preconditions: undefined, propagationPolicy: "", dryRun: [], ...options } : undefined;
}
