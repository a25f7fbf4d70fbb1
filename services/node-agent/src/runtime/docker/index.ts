// The docker runtime: pods as a sandbox container plus app containers joined to its namespaces.
export { DockerRuntime } from "./docker-runtime.js";
export type { DockerRuntimeOptions } from "./docker-runtime.js";
export type { Backoff } from "./launcher.js";
export { containerStatus, dockerTime } from "./status.js";
export { instanceName, sandboxName, SANDBOX } from "./names.js";
