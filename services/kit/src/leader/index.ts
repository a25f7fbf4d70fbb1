// Leader election on Lease objects.
export { LeaderElector } from "./leader.js";
export type { LeaderOptions } from "./leader.js";
