import { pino, type Logger as PinoLogger, type DestinationStream } from "pino";

/** choreo's logger: pino. Log fields first, constant message: `log.info({ pod }, "pod bound")`. */
export type Logger = PinoLogger;

/** A JSON logger with the service name and ISO time; level from CHOREO_LOG_LEVEL (default info). */
export function createLogger(opts: { service: string; level?: string; destination?: DestinationStream }): Logger {
  const level = opts.level ?? process.env["CHOREO_LOG_LEVEL"] ?? "info";
  const options = { level, base: { service: opts.service }, timestamp: pino.stdTimeFunctions.isoTime };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that writes nothing (tests). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
