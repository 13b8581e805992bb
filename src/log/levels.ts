// The levels: their names, pino's numbers for them, and a level named in a setting, read.
// A logger compares a line's number with its threshold once, when it is made (log.ts).

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** pino's level numbers. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
/** A logger's method, one per level but silent. */
export type Method = keyof typeof LEVELS;
export const METHODS = Object.keys(LEVELS) as Method[];

export function isLogLevel(value: unknown): value is LogLevel {
  return value === 'silent' || (typeof value === 'string' && Object.hasOwn(LEVELS, value));
}

export function parseLogLevel(value: string): LogLevel {
  const level = value.trim().toLowerCase();
  if (!isLogLevel(level)) {
    throw new Error(`unknown log level '${value}': expected one of fatal, error, warn, info, debug, trace, silent`);
  }
  return level;
}

/** The lowest level number a logger at `level` writes. */
export function thresholdOf(level: LogLevel): number {
  return level === 'silent' ? Infinity : LEVELS[level];
}
