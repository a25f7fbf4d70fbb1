// client-go's work queue: dedupe, in-flight exclusion, delays and rate limits.
export { WorkQueue } from "./queue.js";
export type { WorkQueueOptions, WorkQueueStats } from "./queue.js";
export { TimerHeap } from "./timer-heap.js";
export { exponentialBackoff, bucketRateLimiter, maxOf, defaultControllerRateLimiter } from "./rate-limiter.js";
export type { RateLimiter } from "./rate-limiter.js";
