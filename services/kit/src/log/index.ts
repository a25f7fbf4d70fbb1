// Structured logs with pino.
export { createLogger, silentLogger } from "./logger.js";
export type { Logger } from "./logger.js";
