// Structured JSON logs with pino.
export { createLogger, childLogger, silentLogger } from "./logger.js";
export type { Logger, LoggerOptions } from "./logger.js";
export { FailureLog } from "./failures.js";
export type { FailureLogOptions } from "./failures.js";
