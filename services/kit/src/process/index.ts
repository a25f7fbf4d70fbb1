// Process supervision, for `choreo up` and for tests: children started and
// awaited until ready, killed (-9) or stopped, nats-server and redis-server
// with authentication on free ports, and a polling helper.
export { startProcess, freePort, waitFor, API_NODE_FLAGS, NODE_FLAGS } from "./process.js";
export type { ProcessOptions, ManagedProcess } from "./process.js";
export { startNats, startRedis } from "./servers.js";
export { startNatsCluster } from "./nats-cluster.js";
export type { NatsClusterHandle, NatsClusterMember, NatsClusterOptions } from "./nats-cluster.js";
export type { NatsHandle, NatsOptions, ServerHandle } from "./servers.js";
export { startRedisHa } from "./redis-ha.js";
export type { RedisHaHandle, RedisHaMember, RedisHaOptions } from "./redis-ha.js";
export { startHaproxy, haproxyConfig, adminCommand } from "./haproxy.js";
export type { HaproxyHandle, HaproxyListener, HaproxyOptions, HaproxyServer, HaproxyServerStat, HaproxyServerState } from "./haproxy.js";
export { startTcpRelay } from "./tcp-relay.js";
export type { TcpRelay } from "./tcp-relay.js";
