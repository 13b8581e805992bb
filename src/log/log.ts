// The JSON-lines logger, with pino's line format, call forms and level numbers: its types and
// createLogger; the rest by role beside it (levels.ts, line.ts, format.ts, json.ts, serializers.ts,
// destination.ts), re-exported here for the modules that import the logger.
// The level is fixed when a logger is made: disabled methods are a shared no-op, so a
// disabled `debug` costs one call and nothing else. The `{"level":N,"time":` prefix and a
// logger's bindings are strings built once; a line is one `destination.write`.
// Logging never throws: every value is read inside `try`, and a line that cannot be built
// is still written, with a placeholder message.
import { hostname } from 'node:os';
import type { LogDestination } from './destination';
import { LINE_CHARS, LineBudget, REDACTED_JSON, valueJson } from './json';
import { isLogLevel, LEVELS, METHODS, thresholdOf, type LogLevel, type Method } from './levels';
import { BINDING_SKIP, ROOT_SKIP, skipOf, tailOf, type Skip } from './line';
import { escapeSeparators, get, isCredentialKey, quote } from './serializers';

export { prettyDestination, type LogDestination } from './destination';
export { isLogLevel, LEVELS, parseLogLevel, type LogLevel } from './levels';
export { snapshot } from './line';
export { isError, serializeError } from './serializers';

/** pino's call forms: `(msg, ...args)`, `(obj, msg?, ...args)`, `(err, msg?, ...args)`. */
export interface LogFn {
  /** `log.info('user %s paid %d', name, cents)`: placeholders `%s %d %i %f %j %o %O %%`, as pino's. */
  (msg: string, ...args: unknown[]): void;
  /** `log.info({ orderId }, 'paid')`, `log.error(err)`, `log.error(err, 'charge failed')`, `log.info({ err }, 'retrying')`. */
  (obj?: unknown, msg?: string, ...args: unknown[]): void;
}

export interface ChildOptions {
  /** The child's own level; the parent's when absent. */
  level?: LogLevel;
}

export interface Logger {
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  readonly level: LogLevel;
  /** Whether a line at `level` (such as 'debug') would be written. */
  isLevelEnabled(level: string): boolean;
  /** A logger whose lines also carry `bindings`, serialised once here. */
  child(bindings: Record<string, unknown>, options?: ChildOptions): Logger;
}

export interface RootLogger extends Logger {
  /**
   * A logger whose lines carry `reqId` (and a trace's fields, JSON text made by trace.ts); one
   * small object, cheap enough to make per request.
   */
  forRequest(reqId: number, traceFields?: string): Logger;
  isEnabled(method: Method): boolean;
}

/** Written as the message when a line's arguments cannot be logged at all. */
const PLACEHOLDER = ',"msg":"[unloggable log arguments]"';

// What no budget reaches (a long key nested in a logged object; many keys) still has a bound: a
// line longer than this is written with its message only.
const MAX_LINE = 4 * LINE_CHARS;

function noop(): void {}

export function createLogger(level: LogLevel = 'info', destination: LogDestination = process.stdout): RootLogger {
  const base = `,"pid":${process.pid},"hostname":${quote(hostname())}`;
  // The line being built's budgets, shared by every logger of this root: one line is built at a time.
  const budget = new LineBudget();

  // What all of this root's loggers share. A logger is one small object made by the class of its
  // level (see `shape`), whose prototype holds that level's methods and inherits from this one.
  class Log {
    /** Everything after "time": pid, hostname, a baked-in reqId, bindings. Built once. */
    declare readonly b: string;
    /** A request logger's id, added per line so that forRequest makes one object only. */
    declare readonly r: number | undefined;
    /** The reqId as it is baked into `b`, for this logger's children ('' for none). */
    declare readonly q: string;
    /** Keys a logged object may not set: the reserved ones and this logger's binding keys. */
    declare readonly k: Skip;
    /** Bindings, key to JSON text, so a child can override its parent's without a duplicate key. */
    declare readonly m: Map<string, string> | null;
    declare readonly level: LogLevel;

    isLevelEnabled(name: unknown): boolean {
      try {
        return typeof name === 'string' && Object.hasOwn(LEVELS, name) && LEVELS[name as Method] >= thresholdOf(this.level);
      } catch {
        return false;
      }
    }

    isEnabled(method: Method): boolean {
      return this.isLevelEnabled(method);
    }

    child(bindings?: unknown, options?: unknown): Logger {
      let childLevel = level; // the root's, for a detached call
      try {
        childLevel = this.level;
        const wanted = (options as ChildOptions | undefined)?.level;
        if (isLogLevel(wanted)) childLevel = wanted;
      } catch {
        // unreadable options: the parent's level
      }
      try {
        const reqId = this.r === undefined ? this.q : ',"reqId":' + this.r;
        const map = bindingsOf(this.m, bindings);
        let fragment = '';
        for (const [key, json] of map) fragment += ',' + quote(key) + ':' + json;
        return make(childLevel, base + reqId + fragment, undefined, reqId, skipOf(map.keys()), map);
      } catch {
        return make(childLevel, base, undefined, '', ROOT_SKIP, null);
      }
    }
  }

  /** A child's bindings, key to JSON text: its parent's (`inherited`), overridden by its own. */
  function bindingsOf(inherited: Map<string, string> | null, bindings: unknown): Map<string, string> {
    budget.start();
    const map = new Map(inherited ?? []);
    let keys: string[] = [];
    try {
      if (bindings !== null && typeof bindings === 'object') keys = Object.keys(bindings);
    } catch {
      // unreadable bindings: none
    }
    for (const key of keys) {
      if (BINDING_SKIP[key] === true) continue;
      const json = isCredentialKey(key) ? REDACTED_JSON : valueJson(budget, get(bindings, key), bindings as object);
      if (json !== undefined) map.set(budget.cutKey(key), escapeSeparators(json));
    }
    return map;
  }

  function writer(number: number) {
    const prefix = `{"level":${number},"time":`;
    return function (this: unknown, first?: unknown): void {
      let self = root; // for a detached `const { info } = log`, or a Proxy as `this`
      try {
        if (this instanceof Log) self = this;
      } catch {
        // a getPrototypeOf trap threw
      }
      budget.start();
      budget.msg = '';
      let line: string;
      try {
        line = prefix + Date.now() + self.b + (self.r === undefined ? '' : ',"reqId":' + self.r);
        try {
          // The common case, a plain string and nothing else, allocates only the line.
          line +=
            arguments.length < 2 && typeof first === 'string'
              ? ',"msg":' + quote(first.length > budget.room ? budget.cut(first) : first)
              : tailOf(budget, self.k, arguments);
        } catch {
          line += PLACEHOLDER;
        }
      } catch {
        line = prefix + Date.now() + base + PLACEHOLDER;
      }
      // What no cut reaches (a long key nested in a logged object) still cannot make a line without bound.
      if (line.length > MAX_LINE) {
        const ids = self.q + (self.r === undefined ? '' : ',"reqId":' + self.r);
        line = prefix + Date.now() + base + ids + `,"cut":"a line of ${line.length} characters: its fields were left out"` + budget.msg;
      }
      try {
        destination.write(line + '}\n');
      } catch {
        // A failing destination must not fail the request either; there is nowhere left to report it.
      }
    };
  }
  const writers = METHODS.map((method) => writer(LEVELS[method]));

  type Shape = new (b: string, r: number | undefined, q: string, k: Skip, m: Map<string, string> | null) => Log;
  const shapes = new Map<LogLevel, Shape>();
  function shape(lv: LogLevel): Shape {
    let cls = shapes.get(lv);
    if (cls === undefined) {
      // Not `extends Log`: with a derived constructor, forRequest measured some twenty times
      // slower (V8 did not elide it); a base class costs what a plain small object costs.
      cls = class {
        constructor(
          readonly b: string,
          readonly r: number | undefined,
          readonly q: string,
          readonly k: Skip,
          readonly m: Map<string, string> | null,
        ) {}
      } as unknown as Shape;
      const proto = cls.prototype as unknown as Record<string, unknown>;
      Object.setPrototypeOf(proto, Log.prototype);
      const threshold = thresholdOf(lv);
      METHODS.forEach((method, i) => (proto[method] = LEVELS[method] < threshold ? noop : writers[i]));
      Object.defineProperty(proto, 'level', { value: lv });
      shapes.set(lv, cls);
    }
    return cls;
  }
  function make(lv: LogLevel, b: string, r: number | undefined, q: string, k: Skip, m: Map<string, string> | null): Logger {
    return new (shape(lv))(b, r, q, k, m) as unknown as Logger;
  }

  const Root = shape(level);
  const root = new Root(base, undefined, '', ROOT_SKIP, null);
  Object.defineProperty(root, 'forRequest', {
    value: (reqId: number, traceFields?: string): Logger => {
      const traced = typeof traceFields === 'string' && traceFields !== '';
      if (!traced && typeof reqId === 'number' && Number.isFinite(reqId)) return new Root(base, reqId, '', ROOT_SKIP, null) as unknown as Logger;
      const baked = ',"reqId":' + escapeSeparators(valueJson(budget, reqId) ?? 'null') + (traced ? traceFields : '');
      return make(level, base + baked, undefined, baked, ROOT_SKIP, null);
    },
  });
  return root as unknown as RootLogger;
}
