// JSON-lines logger with pino's line format and level numbers, in one small file.
// The level is fixed when the logger is made: disabled methods are a shared no-op,
// so a disabled `debug` costs one call and nothing else.
import { hostname } from 'node:os';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** pino's level numbers. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
type Method = keyof typeof LEVELS;
const METHODS = Object.keys(LEVELS) as Method[];

export interface Logger {
  trace(msg: unknown, text?: string): void;
  debug(msg: unknown, text?: string): void;
  info(msg: unknown, text?: string): void;
  warn(msg: unknown, text?: string): void;
  error(msg: unknown, text?: string): void;
  fatal(msg: unknown, text?: string): void;
}

/** Where lines go: anything with `write(line)`, such as `process.stdout` or a test sink. */
export interface LogDestination {
  write(line: string): unknown;
}

export interface RootLogger extends Logger {
  readonly level: LogLevel;
  /** A logger whose lines carry `reqId`; cheap enough to make per request. */
  child(reqId: number): Logger;
  isEnabled(method: Method): boolean;
}

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

export function serializeError(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { type: err.constructor?.name || err.name, message: err.message, stack: err.stack };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  return out;
}

// JSON.stringify that never throws (circular values, BigInt): logging must not break a request.
function stringify(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_key, v) => (v instanceof Error ? serializeError(v) : typeof v === 'bigint' ? v.toString() : v));
  } catch {
    return undefined;
  }
}

function body(msg: unknown, text: string | undefined): string {
  if (msg instanceof Error) {
    return ',"err":' + stringify(serializeError(msg)) + ',"msg":' + JSON.stringify(text ?? msg.message);
  }
  let out = '';
  if (msg !== null && typeof msg === 'object') {
    const json = stringify(msg);
    if (json === undefined) out = ',"msg":"[unserializable object]"';
    else if (json.length > 2 && json[0] === '{') out = ',' + json.slice(1, -1);
  } else if (msg !== undefined) {
    text = text === undefined ? String(msg) : String(msg) + ' ' + text;
  }
  return text === undefined ? out : out + ',"msg":' + JSON.stringify(text);
}

function noop(): void {}

export function createLogger(level: LogLevel = 'info', destination: LogDestination = process.stdout): RootLogger {
  const threshold = level === 'silent' ? Infinity : LEVELS[level];
  const bindings = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;

  // One class per logger, its prototype holding the enabled methods, so a per-request
  // child is a single small object and its line prefix is computed once here.
  class Log {
    constructor(readonly reqId?: number) {}
  }
  const proto = Log.prototype as unknown as Record<Method, (this: Log, msg: unknown, text?: string) => void>;
  for (const method of METHODS) {
    const number = LEVELS[method];
    const prefix = `{"level":${number},"time":`;
    proto[method] =
      number < threshold
        ? noop
        : function (this: Log, msg: unknown, text?: string) {
            const id = this.reqId === undefined ? '' : ',"reqId":' + this.reqId;
            destination.write(prefix + Date.now() + bindings + id + body(msg, text) + '}\n');
          };
  }

  const root = new Log() as unknown as RootLogger;
  Object.defineProperties(root, {
    level: { value: level },
    child: { value: (reqId: number) => new Log(reqId) as unknown as Logger },
    isEnabled: { value: (method: Method) => LEVELS[method] >= threshold },
  });
  return root;
}

const NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/**
 * For local development: writes each JSON line as `12:00:01.123 INFO  [req 3] message key=value`,
 * with an error's stack below it. Lines that are not JSON pass through.
 */
export function prettyDestination(out: LogDestination): LogDestination {
  return {
    write(line: string) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return out.write(line);
      }
      const { level, time, pid: _pid, hostname: _host, reqId, msg, err, ...rest } = entry;
      const clock = new Date(Number(time)).toISOString().slice(11, 23);
      const name = (NAMES[Number(level)] ?? String(level)).padEnd(5);
      const req = reqId === undefined ? '' : ` [req ${String(reqId)}]`;
      const extra = Object.entries(rest).map(([k, v]) => ` ${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join('');
      const stack = (err as { stack?: string } | undefined)?.stack;
      return out.write(`${clock} ${name}${req} ${msg ?? ''}${extra}${stack ? `\n${stack}` : ''}\n`);
    },
  };
}
