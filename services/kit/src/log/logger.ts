import { pino, type Logger as PinoLogger, type DestinationStream, type LevelWithSilent } from "pino";

/**
 * choreo's logger: pino. Style: fields first, constant message —
 * `log.info({ pod, node }, "pod bound")`, errors as `{ err }`.
 */
export type Logger = PinoLogger;

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** The service name, written on every line as `service`. */
  service: string;
  /** The level; default `CHOREO_LOG_LEVEL`, else `info`. */
  level?: string;
  /** Where the JSON lines go (default stdout). */
  destination?: DestinationStream;
}

const LEVELS: readonly string[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** A level name pino knows, or `info`. */
function levelOf(wanted: string | undefined): LevelWithSilent {
  const l = wanted?.trim().toLowerCase();
  return l !== undefined && LEVELS.includes(l) ? (l as LevelWithSilent) : "info";
}

/**
 * A JSON logger writing to stdout, with the `service` base field and ISO
 * time; the level comes from `opts.level`, then `CHOREO_LOG_LEVEL`, then
 * `info` (an unknown name also means `info`).
 */
export function createLogger(opts: LoggerOptions): Logger {
  const options = {
    level: levelOf(opts.level ?? process.env["CHOREO_LOG_LEVEL"]),
    base: { service: opts.service },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/**
 * The convention for a part of a service: a child logger with a
 * `subsystem` field (`childLogger(log, "scheduler")`).
 */
export function childLogger(parent: Logger, subsystem: string): Logger {
  return parent.child({ subsystem });
}

/** A logger that writes nothing (tests). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
