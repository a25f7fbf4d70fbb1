// The test harness: real nats-server and redis-server on free ports, child
// processes that can be killed -9 and restarted, and polling helpers.
export { startProcess, freePort, waitFor } from "./process.js";
export type { ProcessOptions, ManagedProcess } from "./process.js";
export { startNats, startRedis } from "./servers.js";
export type { ServerHandle } from "./servers.js";
export { FakeInformer } from "./fake-informer.js";
