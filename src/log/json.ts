// JSON that never throws, within the budgets of the line being built. A LineBudget holds what the
// line may still take; each root logger has one, shared by its children, started afresh per line
// (and per child's bindings), so writing a line allocates nothing for it.
import { bytesSummary, errorFields, get, isCredentialKey, isError, REDACTED, serializeError } from './serializers';

/** A credential's value as JSON text (isCredentialKey). */
export const REDACTED_JSON = JSON.stringify(REDACTED);

/** Written for a value that cannot be serialised at all. */
const UNSERIALIZABLE = '"[unserializable]"';

// A structure that shares references (`o = {a: o1, b: o1}`, 26 levels deep) is small in memory
// but expands exponentially as text: a line writes at most this many values.
const MAX_VISITS = 50_000;

// Characters a line may take from the text written into it: string values and an Error's message
// and stack, then, with a budget of its own, the message with its placeholders. A child's
// bindings have one too. Past it each text is cut, marked with how much was left out; a short
// string is always kept whole, as is a key up to KEY_CHARS, so that fields stay readable and
// distinct. A logged body of megabytes, or a %s of a large array, would otherwise make a line of
// megabytes and block the process to build it.
export const LINE_CHARS = 256 * 1024;
const SHORT_CHARS = 64;
export const KEY_CHARS = 1024;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** How deep a value is followed, as JSON or as a %s of nested arrays. */
export const MAX_DEPTH = 64;

/** What the line being built may still take, and its message part. */
export class LineBudget {
  /** Values the line may still write, shared by all its fields. */
  visits = 0;
  /** Characters the line may still take from text (see LINE_CHARS). */
  room = 0;
  /** The line's message part (`,"msg":...`), for a line written with its message only (log.ts). */
  msg = '';
  /** JSON.stringify's replacer, charging this budget: made once here, never per line. */
  readonly replacer: (this: unknown, key: string, value: unknown) => unknown;

  constructor() {
    // JSON.stringify calls a replacer with the holder as `this`: the budget is reached by closure.
    const budget = this;
    this.replacer = function (this: unknown, key: string, value: unknown): unknown {
      if (--budget.visits < 0) throw new RangeError('too large to log');
      if (isCredentialKey(key)) return REDACTED;
      if (typeof value === 'string') return budget.cut(value);
      if (typeof value === 'bigint') return String(value);
      // The holder's own value, before toJSON: a Buffer's toJSON would list every byte.
      const original = (this as Record<string, unknown>)[key];
      if (ArrayBuffer.isView(original)) return bytesSummary(original);
      return value !== null && typeof value === 'object' && isError(value) ? serializeError(value) : value;
    };
  }

  /** Starts a line's budgets (or a child's bindings'): values to write, characters to take. */
  // Long keys cut on the line being built, by their cut text: a second that cuts to the same text
  // is told apart by a number, so that no key appears twice. Made only when a key is cut.
  #cutKeys: Map<string, number> | undefined = undefined;

  start(): void {
    this.visits = MAX_VISITS;
    this.room = LINE_CHARS;
    this.#cutKeys = undefined;
  }

  /** `s`, or as much of it as the line has room for, marked as cut. */
  cut(s: string): string {
    if (s.length <= this.room || s.length <= SHORT_CHARS) {
      this.room -= s.length;
      return s;
    }
    let kept = Math.max(0, this.room);
    // Never half of a surrogate pair at the cut: a lone one is no Unicode, and strict readers refuse the line.
    if (kept > 0 && isHighSurrogate(s.charCodeAt(kept - 1))) kept--;
    this.room = 0;
    return `${s.slice(0, kept)}…[${s.length - kept} more characters]`;
  }

  /** A key, whole up to KEY_CHARS whatever room is left: cutting keys to the room would make them collide. */
  cutKey(key: string): string {
    this.room -= Math.min(key.length, KEY_CHARS);
    if (key.length <= KEY_CHARS) return key;
    const cut = longKey(key);
    const seen = (this.#cutKeys ??= new Map());
    const times = seen.get(cut) ?? 0;
    seen.set(cut, times + 1);
    return times === 0 ? cut : `${cut} (${times + 1})`;
  }
}

/** A key past KEY_CHARS as a line writes it: cut, never inside a surrogate pair, marked with what was left out. */
export function longKey(key: string): string {
  const kept = isHighSurrogate(key.charCodeAt(KEY_CHARS - 1)) ? KEY_CHARS - 1 : KEY_CHARS;
  return `${key.slice(0, kept)}…[${key.length - kept} more characters]`;
}

/** JSON text of an object, or undefined where JSON.stringify gives none. `parent` holds it (for cycles). */
export function objectJson(budget: LineBudget, value: unknown, parent?: object): string | undefined {
  try {
    return JSON.stringify(value, budget.replacer);
  } catch {
    // A cycle, a throwing getter or toJSON, a Proxy: the slow, careful way below.
  }
  try {
    return careful(budget, value, parent === undefined ? [] : [parent], { left: 10_000 });
  } catch {
    return UNSERIALIZABLE;
  }
}

/** JSON.stringify by hand, with every read in `try`, cycles as "[Circular]", bounded depth and size. */
function careful(budget: LineBudget, value: unknown, stack: unknown[], count: { left: number }): string | undefined {
  if (value === null || typeof value !== 'object') return scalarJson(budget, value);
  if (ArrayBuffer.isView(value)) return JSON.stringify(bytesSummary(value));
  if (stack.includes(value)) return '"[Circular]"';
  if (stack.length >= MAX_DEPTH || --count.left < 0) return '"[Truncated]"';
  stack.push(value);
  try {
    let target: unknown = value;
    if (isError(value)) {
      target = errorFields(value, []);
    } else {
      const toJSON = get(value, 'toJSON');
      if (typeof toJSON === 'function') {
        // The original stays on the stack, so a toJSON that returns a fresh object each time still ends.
        return careful(budget, toJSON.call(value, ''), stack, count);
      }
    }
    return Array.isArray(target) ? carefulArray(budget, target, stack, count) : carefulObject(budget, target as object, stack, count);
  } catch {
    return UNSERIALIZABLE;
  } finally {
    stack.pop();
  }
}

function carefulArray(budget: LineBudget, target: unknown[], stack: unknown[], count: { left: number }): string {
  const parts: string[] = [];
  const length = Number(get(target, 'length')) || 0;
  for (let i = 0; i < length; i++) {
    if (count.left-- < 0) {
      parts.push('"[Truncated]"');
      break;
    }
    parts.push(careful(budget, get(target, i), stack, count) ?? 'null');
  }
  return '[' + parts.join(',') + ']';
}

function carefulObject(budget: LineBudget, target: object, stack: unknown[], count: { left: number }): string {
  const parts: string[] = [];
  for (const key of Object.keys(target)) {
    const json = isCredentialKey(key) ? REDACTED_JSON : careful(budget, get(target, key), stack, count);
    if (json !== undefined) parts.push(JSON.stringify(budget.cutKey(key)) + ':' + json);
  }
  return '{' + parts.join(',') + '}';
}

/**
 * A field's JSON text, or undefined to leave it out (undefined, functions and symbols, as
 * JSON.stringify does). BigInt becomes a string; NaN and Infinity null.
 */
export function valueJson(budget: LineBudget, value: unknown, parent?: object): string | undefined {
  // Errors, here or nested, via the replacer.
  return value !== null && typeof value === 'object' ? objectJson(budget, value, parent) : scalarJson(budget, value);
}

/** JSON for anything but an object: undefined for what JSON.stringify leaves out. */
function scalarJson(budget: LineBudget, value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(budget.cut(value));
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
