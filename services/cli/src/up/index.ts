// `choreo up` / `choreo down`: a local cluster in the foreground.
export { up, down, kubeconfigYaml, DEFAULT_UP } from "./cluster.js";
export type { UpOptions, LocalCluster } from "./cluster.js";
export { upCommand, downCommand } from "./command.js";
