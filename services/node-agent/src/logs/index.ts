// Container logs served to the api over NATS (protocol: ./README.md).
export { LogServer, logStatus } from "./log-server.js";
export type { LogServerOptions } from "./log-server.js";
