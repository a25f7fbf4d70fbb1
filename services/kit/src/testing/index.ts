// The test harness: the process supervision of `@choreo/kit/process`
// (real nats-server and redis-server on free ports, child processes that can
// be killed -9 and restarted, polling helpers) re-exported for tests, and the
// fakes only tests use.
export { startProcess, freePort, waitFor, startNats, startNatsCluster, startRedis, startRedisHa, startHaproxy, startTcpRelay } from "../process/index.js";
export type {
  ProcessOptions,
  ManagedProcess,
  NatsHandle,
  NatsClusterHandle,
  NatsClusterMember,
  RedisHaHandle,
  RedisHaMember,
  HaproxyHandle,
  ServerHandle,
  TcpRelay,
} from "../process/index.js";
export { FakeInformer } from "./fake-informer.js";
