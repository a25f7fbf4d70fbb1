// The process runtime: containers as Linux processes in namespaces (README.md).
export { ProcessRuntime } from "./process-runtime.js";
export type { ProcessRuntimeOptions } from "./process-runtime.js";
export { Cgroups } from "./cgroups.js";
export type { CgroupLimits } from "./cgroups.js";
