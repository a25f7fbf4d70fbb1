// The registry: the api's verbs over Redis, with per-kind strategies.
import type { Redis } from "ioredis";
import type { Logger } from "@choreo/kit/log";
import type { RedisStore } from "../storage/redis-store.js";
import { ClusterIpAllocator } from "./cluster-ip.js";
import { eventStrategy, leaseStrategy, namespaceStrategy, nodeStrategy } from "./cluster.js";
import { Registry } from "./handlers.js";
import { NodePortAllocator } from "./node-port.js";
import { podStrategy } from "./pods.js";
import { endpointsStrategy, serviceStrategy } from "./services.js";
import type { Strategies, Strategy } from "./strategy.js";
import { daemonSetStrategy, jobStrategy, replicationControllerStrategy } from "./workloads.js";

export { Registry } from "./handlers.js";
export type { WatchSource } from "./handlers.js";
export { bootstrap } from "./bootstrap.js";
export { ClusterIpAllocator } from "./cluster-ip.js";
export { NodePortAllocator, NODE_PORT_RANGE } from "./node-port.js";
export { MAX_OBJECT_BYTES, SYSTEM_NAMESPACES } from "./registry.js";

/** A registry with every kind's strategy. */
export function createRegistry(opts: { store: RedisStore; redis: Redis; serviceCidr: string; log: Logger }): Registry {
  const strategies: Strategies = {
    pod: podStrategy as Strategy,
    service: serviceStrategy(new ClusterIpAllocator(opts.redis, opts.serviceCidr), new NodePortAllocator(opts.redis)) as Strategy,
    endpoints: endpointsStrategy as Strategy,
    replicationController: replicationControllerStrategy as Strategy,
    daemonSet: daemonSetStrategy as Strategy,
    job: jobStrategy as Strategy,
    namespace: namespaceStrategy as Strategy,
    node: nodeStrategy as Strategy,
    lease: leaseStrategy as Strategy,
    event: eventStrategy as Strategy,
  };
  return new Registry(opts.store, strategies, opts.log);
}
