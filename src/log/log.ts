// JSON-lines logger with pino's line format, call forms and level numbers, in one small file.
// The level is fixed when a logger is made: disabled methods are a shared no-op, so a
// disabled `debug` costs one call and nothing else. The `{"level":N,"time":` prefix and a
// logger's bindings are strings built once; a line is one `destination.write`.
// Logging never throws: every value is read inside `try`, and a line that cannot be built
// is still written, with a placeholder message.
import { hostname } from 'node:os';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** pino's level numbers. */
export const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
type Method = keyof typeof LEVELS;
const METHODS = Object.keys(LEVELS) as Method[];

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

/** Where lines go: anything with `write(line)`, such as `process.stdout` or a test sink. */
export interface LogDestination {
  write(line: string): unknown;
}

export interface RootLogger extends Logger {
  /**
   * A logger whose lines carry `reqId` (and a trace's fields, JSON text made by trace.ts); one
   * small object, cheap enough to make per request.
   */
  forRequest(reqId: number, traceFields?: string): Logger;
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

function thresholdOf(level: LogLevel): number {
  return level === 'silent' ? Infinity : LEVELS[level];
}

// --- Reading values that may fight back (throwing getters, Proxies, null prototypes) ---

const UNREADABLE = '[unreadable]';
const UNSERIALIZABLE = '"[unserializable]"';
/** Written as the message when a line's arguments cannot be logged at all. */
const PLACEHOLDER = ',"msg":"[unloggable log arguments]"';

function get(obj: unknown, key: PropertyKey): unknown {
  try {
    return (obj as Record<PropertyKey, unknown>)[key];
  } catch {
    return UNREADABLE;
  }
}

/** Whether `value` is an Error; never throws (a Proxy's traps may). */
export function isError(value: unknown): value is Error {
  try {
    return value instanceof Error || Object.prototype.toString.call(value) === '[object Error]';
  } catch {
    return false;
  }
}

/** `String(value)`, which throws for a null-prototype object or a throwing `toString`. */
function text(value: unknown): string {
  try {
    return String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return '[unprintable]';
    }
  }
}

function num(value: unknown): number {
  try {
    return Number(value);
  } catch {
    return NaN;
  }
}

// JSON allows U+2028 and U+2029 unescaped; some line readers split on them, so they are escaped.
const SEPARATORS = /[\u2028\u2029]/;
function escapeSeparators(json: string): string {
  return SEPARATORS.test(json) ? json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029') : json;
}

function quote(s: string): string {
  return escapeSeparators(JSON.stringify(s));
}

// --- Errors ---

// The mapping the entry points leave for funcrun's stacks (source-maps.ts), when they run.
const MAPPED_STACKS = Symbol.for('funcrun.mappedStacks');

/** An error's stack, its frames mapped to the TypeScript sources when serve set that up. Never throws. */
function mappedStack(err: object): unknown {
  const stack = get(err, 'stack');
  const map = (process as unknown as Record<symbol, ((stack: string) => string) | undefined>)[MAPPED_STACKS];
  if (typeof map !== 'function' || typeof stack !== 'string') return stack;
  try {
    return map(stack);
  } catch {
    return stack;
  }
}

/**
 * `type`, `message`, `stack`, and `code`, `cause` (an Error cause serialised the same way) and any
 * other enumerable own property when present, as pino's error serializer. Never throws.
 */
export function serializeError(err: Error): Record<string, unknown> {
  return errorFields(err, []);
}

function errorFields(err: object, seen: object[]): Record<string, unknown> {
  seen.push(err);
  const out: Record<string, unknown> = {};
  const ctor = get(err, 'constructor');
  const ctorName = typeof ctor === 'function' ? get(ctor, 'name') : undefined;
  const name = typeof ctorName === 'string' && ctorName !== '' ? ctorName : get(err, 'name');
  out.type = typeof name === 'string' ? name : 'Error';
  const message = get(err, 'message');
  out.message = typeof message === 'string' ? message : message === undefined ? '' : text(message);
  const stack = mappedStack(err);
  if (typeof stack === 'string') out.stack = stack;
  const code = get(err, 'code');
  if (code !== undefined) out.code = code;
  const cause = get(err, 'cause');
  if (cause !== undefined) {
    out.cause = !isError(cause) ? cause : seen.includes(cause) || seen.length >= 10 ? '[Circular]' : errorFields(cause, seen);
  }
  let keys: string[] = [];
  try {
    keys = Object.keys(err);
  } catch {
    // a Proxy whose ownKeys trap throws: the fields above are all we get
  }
  for (const key of keys) {
    // defineProperty, so that an own `__proto__` key is copied as data
    if (!Object.hasOwn(out, key)) Object.defineProperty(out, key, { value: get(err, key), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// --- JSON that never throws ---

// Values still to be written in the current line (reset per line and per child's bindings), shared
// by every field of it. A structure that shares references
// (`o = {a: o1, b: o1}`, 26 levels deep) is small in memory but expands exponentially as text.
let visits = 0;
const MAX_VISITS = 50_000;

// Characters the current line may still take from the text written into it: string values and
// an Error's message and stack, then, with a budget of its own, the message with its placeholders.
// A child's bindings have one too. Past it each text is cut, marked with how much was left out; a
// short string is always kept whole, as is a key up to KEY_CHARS, so that fields stay readable and
// distinct. A logged body of megabytes, or a %s of a large array, would otherwise make a line of
// megabytes and block the process to build it.
const LINE_CHARS = 256 * 1024;
const SHORT_CHARS = 64;
const KEY_CHARS = 1024;
// What no budget reaches (a long key nested in a logged object; many keys) still has a bound: a
// line longer than this is written with its message only.
const MAX_LINE = 4 * LINE_CHARS;
let room = 0;

/** Starts a line's budgets: values to write, characters to take. */
function budget(): void {
  visits = MAX_VISITS;
  room = LINE_CHARS;
}

/** `s`, or as much of it as the line has room for, marked as cut. */
function cut(s: string): string {
  if (s.length <= room || s.length <= SHORT_CHARS) {
    room -= s.length;
    return s;
  }
  const kept = Math.max(0, room);
  room = 0;
  return `${s.slice(0, kept)}…[${s.length - kept} more characters]`;
}

/** A key, whole up to KEY_CHARS whatever room is left: cutting keys to the room would make them collide. */
function cutKey(key: string): string {
  room -= Math.min(key.length, KEY_CHARS);
  return key.length <= KEY_CHARS ? key : `${key.slice(0, KEY_CHARS)}…[${key.length - KEY_CHARS} more characters]`;
}

function replacer(this: unknown, key: string, value: unknown): unknown {
  if (--visits < 0) throw new RangeError('too large to log');
  if (typeof value === 'string') return cut(value);
  if (typeof value === 'bigint') return String(value);
  // The holder's own value, before toJSON: a Buffer's toJSON would list every byte.
  const original = (this as Record<string, unknown>)[key];
  if (ArrayBuffer.isView(original)) return bytesSummary(original);
  return value !== null && typeof value === 'object' && isError(value) ? serializeError(value) : value;
}

/**
 * Bytes in a log line are summarised, not listed: a logged 1 MiB request body would otherwise be
 * a line of millions of numbers that takes seconds to write.
 */
function bytesSummary(view: ArrayBufferView): { type: string; length: number } {
  return { type: Buffer.isBuffer(view) ? 'Buffer' : (view.constructor?.name ?? 'ArrayBufferView'), length: view.byteLength };
}

/** JSON text of an object, or undefined where JSON.stringify gives none. `parent` holds it (for cycles). */
function objectJson(value: unknown, parent?: object): string | undefined {
  try {
    return JSON.stringify(value, replacer);
  } catch {
    // A cycle, a throwing getter or toJSON, a Proxy: the slow, careful way below.
  }
  try {
    return careful(value, parent === undefined ? [] : [parent], { left: 10_000 });
  } catch {
    return UNSERIALIZABLE;
  }
}

const MAX_DEPTH = 64;

/** JSON.stringify by hand, with every read in `try`, cycles as "[Circular]", bounded depth and size. */
function careful(value: unknown, stack: unknown[], budget: { left: number }): string | undefined {
  if (value === null || typeof value !== 'object') return scalarJson(value);
  if (ArrayBuffer.isView(value)) return JSON.stringify(bytesSummary(value));
  if (stack.includes(value)) return '"[Circular]"';
  if (stack.length >= MAX_DEPTH || --budget.left < 0) return '"[Truncated]"';
  stack.push(value);
  try {
    let target: unknown = value;
    if (isError(value)) {
      target = errorFields(value, []);
    } else {
      const toJSON = get(value, 'toJSON');
      if (typeof toJSON === 'function') {
        // The original stays on the stack, so a toJSON that returns a fresh object each time still ends.
        return careful(toJSON.call(value, ''), stack, budget);
      }
    }
    const parts: string[] = [];
    if (Array.isArray(target)) {
      const length = Number(get(target, 'length')) || 0;
      for (let i = 0; i < length; i++) {
        if (budget.left-- < 0) {
          parts.push('"[Truncated]"');
          break;
        }
        parts.push(careful(get(target, i), stack, budget) ?? 'null');
      }
      return '[' + parts.join(',') + ']';
    }
    for (const key of Object.keys(target as object)) {
      const json = careful(get(target, key), stack, budget);
      if (json !== undefined) parts.push(JSON.stringify(cutKey(key)) + ':' + json);
    }
    return '{' + parts.join(',') + '}';
  } catch {
    return UNSERIALIZABLE;
  } finally {
    stack.pop();
  }
}

/**
 * A field's JSON text, or undefined to leave it out (undefined, functions and symbols, as
 * JSON.stringify does). BigInt becomes a string; NaN and Infinity null.
 */
function valueJson(value: unknown, parent?: object): string | undefined {
  // Errors, here or nested, via the replacer.
  return value !== null && typeof value === 'object' ? objectJson(value, parent) : scalarJson(value);
}

/** JSON for anything but an object: undefined for what JSON.stringify leaves out. */
function scalarJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(cut(value));
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return '"' + String(value) + '"';
    default:
      return value === null ? 'null' : undefined;
  }
}

// --- The parts of a line ---

/** Keys that are the line's own: a logged object or bindings never set them. */
// The trace fields are funcrun's too (trace.ts): a logged object cannot contradict them.
const RESERVED = ['level', 'time', 'pid', 'hostname', 'reqId', 'trace_id', 'span_id', 'trace_flags', 'msg'];
type Skip = Record<string, true>;

function skipOf(keys: Iterable<string>): Skip {
  const skip = Object.create(null) as Skip;
  for (const key of RESERVED) skip[key] = true;
  for (const key of keys) skip[key] = true;
  return skip;
}
const ROOT_SKIP = skipOf([]);

/**
 * The merging object's own enumerable keys as `,"key":value`, without the reserved keys and the
 * logger's binding keys (those are already on the line: a second copy would be a duplicate key
 * that parsers resolve differently, and would let a logged request body forge them).
 * An array is spread by index (`"0":…`), as pino does with any object's enumerable keys.
 */
function fieldsOf(obj: object, skip: Skip): string {
  if (ArrayBuffer.isView(obj)) obj = bytesSummary(obj);
  let keys: string[];
  try {
    // An array's indexes, counted rather than listed: a logged array of millions costs nothing here.
    keys = Array.isArray(obj) ? Array.from({ length: Math.min(obj.length, Math.max(visits, 0)) }, (_, i) => String(i)) : Object.keys(obj);
  } catch {
    return '';
  }
  let out = '';
  for (const key of keys) {
    if (skip[key] === true) continue;
    if (--visits < 0) return out + ',"…":"[Truncated]"';
    const json = valueJson(get(obj, key), obj);
    if (json !== undefined) out += ',' + JSON.stringify(cutKey(key)) + ':' + json;
  }
  if (Array.isArray(obj) && obj.length > keys.length) out += ',"…":"[Truncated]"';
  return out;
}

/** `%j %o %O`: a string in single quotes, a function by name, anything else as JSON. */
function formatValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return "'" + value + "'";
    case 'function': {
      const name = get(value, 'name');
      return typeof name === 'string' && name !== '' ? name : '<anonymous>';
    }
    case 'bigint':
    case 'symbol':
      return text(value);
    default:
      return (value !== null && typeof value === 'object' ? objectJson(value) : valueJson(value)) ?? 'undefined';
  }
}

/**
 * pino's `quick-format-unescaped`, made safe: `%s` is `String(x)`, `%d %f` `Number(x)`, `%i`
 * `Math.floor(Number(x))`, `%j %o %O` JSON; `%d %i %f` leave the placeholder for null or undefined,
 * `%j %o %O` for undefined; `%%` is `%` when there are arguments. Arguments left over are ignored.
 */
function format(f: string, args: ArrayLike<unknown>, from: number): string {
  const argLen = args.length;
  if (from >= argLen) return f;
  let str = '';
  let a = from;
  let lastPos = -1;
  const flen = f.length;
  // Placeholders past the message's budget are not formatted (msgJson cuts the message to it).
  const saved = room;
  for (let i = 0; i < flen && str.length <= saved; i++) {
    if (f.charCodeAt(i) !== 37 || i + 1 >= flen) continue;
    if (lastPos === -1) lastPos = 0;
    let piece: string | undefined;
    switch (f.charCodeAt(i + 1)) {
      case 100: // d
      case 102: // f
        if (a < argLen && args[a] != null) piece = String(num(args[a]));
        break;
      case 105: // i
        if (a < argLen && args[a] != null) piece = String(Math.floor(num(args[a])));
        break;
      case 79: // O
      case 111: // o
      case 106: // j
        if (a < argLen && args[a] !== undefined) piece = formatValue(args[a]);
        break;
      case 115: // s
        if (a < argLen) piece = Array.isArray(args[a]) ? joined(args[a] as unknown[]) : text(args[a]);
        break;
      case 37: // %
        piece = '%';
        a--;
        break;
    }
    if (piece !== undefined) {
      if (lastPos < i) str += f.slice(lastPos, i);
      str += piece;
      lastPos = i + 2;
      i++;
    }
    a++; // as pino: an unknown `%x`, or one without a usable argument, still uses up an argument
  }
  // %j's values were cut as they were written; the message is charged once, when it is written.
  room = saved;
  if (lastPos === -1) return f;
  return lastPos < f.length ? str + f.slice(lastPos) : str;
}

/** `String(array)` (its items joined by commas, nested arrays alike), stopped once the line has no room left. */
function joined(items: unknown[], depth = 0): string {
  let out = '';
  let length: number;
  try {
    length = items.length;
  } catch {
    return '[unprintable]';
  }
  for (let i = 0; i < length && out.length <= room; i++) {
    if (i > 0) out += ',';
    const item = get(items, i);
    if (item === null || item === undefined) continue;
    out += Array.isArray(item) ? (depth < MAX_DEPTH ? joined(item, depth + 1) : '') : text(item);
  }
  return out;
}

/** The message as `,"msg":…`, or '' for none. Strings stay strings; other values keep their JSON type. */
function msgJson(msg: unknown): string {
  let json: string | undefined;
  switch (typeof msg) {
    case 'string':
      return ',"msg":' + JSON.stringify(msg.length > room ? cut(msg) : msg);
    case 'symbol':
      json = JSON.stringify(text(msg));
      break;
    case 'object':
      json = msg === null ? 'null' : objectJson(msg); // an Error is serialised, as anywhere else
      break;
    default:
      json = valueJson(msg); // numbers and booleans as pino writes them; undefined and functions: no msg
  }
  return json === undefined ? '' : ',"msg":' + json;
}

// The last line's message part (`,"msg":…`), for a line written with its message only (MAX_LINE).
let lastMsg = '';

/**
 * Everything after the bindings, for any call form (pino's): `(obj, msg?, ...args)` where obj is an
 * object or Error; otherwise `(msg, ...args)`. A string msg is formatted with the args; any other
 * msg (number, boolean, object...) is written as JSON and the args ignored. Without a msg argument,
 * the message is the object's `msg`, else its `err`'s message, else an Error's own message.
 */
function tailOf(skip: Skip, args: ArrayLike<unknown>): string {
  const first = args[0];
  let fields = '';
  let given: unknown;
  let from: number;
  let fallback: unknown;
  if (first !== null && typeof first === 'object') {
    given = args[1];
    from = 2;
    if (isError(first)) {
      if (skip.err !== true) fields = ',"err":' + (objectJson(first) ?? '{}'); // serialised by the replacer
      if (given === undefined) fallback = get(first, 'message');
    } else {
      fields = fieldsOf(first, skip);
      if (given === undefined) {
        fallback = get(first, 'msg');
        if (fallback === undefined) {
          const err = get(first, 'err');
          if (err !== null && typeof err === 'object') fallback = get(err, 'message');
        }
      }
    }
  } else if (first === undefined || (first === null && args.length > 1)) {
    given = args[1];
    from = 2;
  } else {
    given = first; // log.info(null) writes "msg":null, as pino
    from = 1;
  }
  // The message has a budget of its own: however large the fields, it is not the part cut away.
  room = LINE_CHARS;
  const msg = typeof given === 'string' ? format(given, args, from) : given === undefined ? fallback : given;
  lastMsg = escapeSeparators(msgJson(msg));
  return escapeSeparators(fields) + lastMsg;
}

/**
 * Bindings as they are now: each value serialised as a line would write it and read back, so
 * that later changes to the objects do not show in lines (a child's bindings are read once).
 * Never throws.
 */
export function snapshot(bindings: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  budget();
  try {
    if (bindings === null || typeof bindings !== 'object') return out;
    for (const key of Object.keys(bindings)) {
      if (ROOT_SKIP[key] === true) continue;
      const json = valueJson(get(bindings, key), bindings);
      if (json !== undefined) out[key] = JSON.parse(json);
    }
  } catch {
    // Unreadable bindings: those read so far.
  }
  return out;
}

function noop(): void {}

export function createLogger(level: LogLevel = 'info', destination: LogDestination = process.stdout): RootLogger {
  const base = `,"pid":${process.pid},"hostname":${quote(hostname())}`;

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
      budget();
      try {
        const reqId = this.r === undefined ? this.q : ',"reqId":' + this.r;
        const map = new Map(this.m ?? []);
        let keys: string[] = [];
        try {
          if (bindings !== null && typeof bindings === 'object') keys = Object.keys(bindings);
        } catch {
          // unreadable bindings: none
        }
        for (const key of keys) {
          if (ROOT_SKIP[key] === true) continue;
          const json = valueJson(get(bindings, key), bindings as object);
          if (json !== undefined) map.set(cutKey(key), escapeSeparators(json));
        }
        let fragment = '';
        for (const [key, json] of map) fragment += ',' + quote(key) + ':' + json;
        return make(childLevel, base + reqId + fragment, undefined, reqId, skipOf(map.keys()), map);
      } catch {
        return make(childLevel, base, undefined, '', ROOT_SKIP, null);
      }
    }
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
      budget();
      let line: string;
      try {
        line = prefix + Date.now() + self.b + (self.r === undefined ? '' : ',"reqId":' + self.r);
        try {
          // The common case, a plain string and nothing else, allocates only the line.
          lastMsg = '';
          line += arguments.length < 2 && typeof first === 'string' ? ',"msg":' + quote(first.length > room ? cut(first) : first) : tailOf(self.k, arguments);
        } catch {
          line += PLACEHOLDER;
        }
      } catch {
        line = prefix + Date.now() + base + PLACEHOLDER;
      }
      // What no cut reaches (a long key nested in a logged object) still cannot make a line without bound.
      if (line.length > MAX_LINE) {
        const ids = self.q + (self.r === undefined ? '' : ',"reqId":' + self.r);
        line = prefix + Date.now() + base + ids + `,"cut":"a line of ${line.length} characters: its fields were left out"` + lastMsg;
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
      const baked = ',"reqId":' + escapeSeparators(valueJson(reqId) ?? 'null') + (traced ? traceFields : '');
      return make(level, base + baked, undefined, baked, ROOT_SKIP, null);
    },
  });
  return root as unknown as RootLogger;
}

const NAMES: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
});

/**
 * For local development: writes each JSON line as `12:00:01.123 INFO  [req 3] message key=value`,
 * with an error's stack below it. Lines that are not a JSON object pass through as they are.
 */
export function prettyDestination(out: LogDestination): LogDestination {
  return {
    write(line: string) {
      let pretty: string | undefined;
      try {
        pretty = prettyLine(line);
      } catch {
        pretty = undefined;
      }
      return out.write(pretty ?? line);
    },
  };
}

function prettyLine(line: string): string | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const { level, time, pid: _pid, hostname: _host, reqId, msg, err, ...rest } = entry as Record<string, unknown>;
  const date = new Date(Number(time));
  const clock = Number.isNaN(date.getTime()) ? '--:--:--.---' : date.toISOString().slice(11, 23);
  const name = (NAMES[String(level)] ?? JSON.stringify(level) ?? '?').padEnd(5);
  const req = reqId === undefined ? '' : ` [req ${printable(typeof reqId === 'string' ? reqId : JSON.stringify(reqId))}]`;
  const message = msg === undefined ? '' : printable(typeof msg === 'string' ? msg : JSON.stringify(msg));
  const extra = Object.entries(rest)
    .map(([k, v]) => ` ${printable(k)}=${printable(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('');
  const stack = err !== null && typeof err === 'object' ? (err as { stack?: unknown }).stack : undefined;
  // A stack's lines are indented: its first line is a message, which a client's text may be part of.
  const trace =
    typeof stack === 'string'
      ? `\n${stack
          .split('\n')
          .map((l) => `    ${printable(l.trimStart())}`)
          .join('\n')}`
      : '';
  return `${clock} ${name}${req} ${message}${extra}${trace}\n`;
}

// Control characters (a newline, a terminal's escape sequences) as escapes: text a client sent
// cannot start a line of its own or drive the terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

function printable(text: string): string {
  return text.replace(CONTROL, (c) => (c === '\n' ? '\\n' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
