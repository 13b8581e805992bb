// The parts of a line after its level, time and bindings: a logged object's fields and the
// message, for each of pino's call forms; and a child's bindings read once (snapshot).
import { format } from './format';
import { KEY_CHARS, LINE_CHARS, LineBudget, longKey, objectJson, REDACTED_JSON, valueJson } from './json';
import { bytesSummary, escapeSeparators, get, isCredentialKey, isError, text } from './serializers';

/** Keys a logged object may not set on a line, as a set. */
export type Skip = Record<string, true>;

/** Keys that are the line's own: a logged object or bindings never set them. */
// The trace fields are funcrun's too (trace.ts): a logged object cannot contradict them.
const RESERVED = ['level', 'time', 'pid', 'hostname', 'reqId', 'trace_id', 'span_id', 'trace_flags', 'msg'];
// What funcrun itself writes: the binding on the lines of work that outlived its request
// (scope.ts), and the mark of a line cut at its budget ("…": "[Truncated]"). A logged object never
// sets them, so no line of a request reads as one of those, and no key appears twice.
const RUNTIME_FIELDS = ['outlivedRequest', '…'];

/** The reserved keys, funcrun's own binding and `keys` (a logger's binding keys): what a logged object may not set. */
export function skipOf(keys: Iterable<string>): Skip {
  const skip = Object.create(null) as Skip;
  for (const key of RESERVED) skip[key] = true;
  for (const key of RUNTIME_FIELDS) skip[key] = true;
  for (const key of keys) skip[key] = true;
  return skip;
}
export const ROOT_SKIP = skipOf([]);

/** What bindings may not set: the reserved keys (funcrun binds outlivedRequest itself). */
export const BINDING_SKIP: Skip = Object.assign(Object.create(null) as Skip, Object.fromEntries(RESERVED.map((key) => [key, true as const])));

/**
 * The merging object's own enumerable keys as `,"key":value`, without the reserved keys and the
 * logger's binding keys (those are already on the line: a second copy would be a duplicate key
 * that parsers resolve differently, and would let a logged request body forge them).
 * An array is spread by index (`"0":…`), as pino does with any object's enumerable keys.
 */
function fieldsOf(budget: LineBudget, obj: object, skip: Skip): string {
  if (ArrayBuffer.isView(obj)) obj = bytesSummary(obj);
  let keys: string[];
  try {
    // An array's indexes, counted rather than listed: a logged array of millions costs nothing here.
    keys = Array.isArray(obj) ? Array.from({ length: Math.min(obj.length, Math.max(budget.visits, 0)) }, (_, i) => String(i)) : Object.keys(obj);
  } catch {
    return '';
  }
  let out = '';
  for (const key of keys) {
    // A long key is compared as it is written, cut: one a binding's cut key already has is left out as the binding's own is.
    if (skip[key] === true || (key.length > KEY_CHARS && skip[longKey(key)] === true)) continue;
    if (--budget.visits < 0) return out + ',"…":"[Truncated]"';
    const json = isCredentialKey(key) ? REDACTED_JSON : valueJson(budget, get(obj, key), obj);
    if (json !== undefined) out += ',' + JSON.stringify(budget.cutKey(key)) + ':' + json;
  }
  if (Array.isArray(obj) && obj.length > keys.length) out += ',"…":"[Truncated]"';
  return out;
}

/** The message as `,"msg":…`, or '' for none. Strings stay strings; other values keep their JSON type. */
function msgJson(budget: LineBudget, msg: unknown): string {
  let json: string | undefined;
  switch (typeof msg) {
    case 'string':
      return ',"msg":' + JSON.stringify(msg.length > budget.room ? budget.cut(msg) : msg);
    case 'symbol':
      json = JSON.stringify(text(msg));
      break;
    case 'object':
      json = msg === null ? 'null' : objectJson(budget, msg); // an Error is serialised, as anywhere else
      break;
    default:
      json = valueJson(budget, msg); // numbers and booleans as pino writes them; undefined and functions: no msg
  }
  return json === undefined ? '' : ',"msg":' + json;
}

/**
 * Everything after the bindings, for any call form (pino's): `(obj, msg?, ...args)` where obj is an
 * object or Error; otherwise `(msg, ...args)`. A string msg is formatted with the args; any other
 * msg (number, boolean, object...) is written as JSON and the args ignored. Without a msg argument,
 * the message is the object's `msg`, else its `err`'s message, else an Error's own message.
 * The message part is left in `budget.msg` too.
 */
export function tailOf(budget: LineBudget, skip: Skip, args: ArrayLike<unknown>): string {
  const first = args[0];
  let fields = '';
  let given: unknown;
  let from: number;
  let fallback: unknown;
  if (first !== null && typeof first === 'object') {
    given = args[1];
    from = 2;
    const error = isError(first);
    if (error) {
      if (skip.err !== true) fields = ',"err":' + (objectJson(budget, first) ?? '{}'); // serialised by the replacer
    } else {
      fields = fieldsOf(budget, first, skip);
    }
    if (given === undefined) fallback = messageOf(first, error);
  } else if (first === undefined || (first === null && args.length > 1)) {
    given = args[1];
    from = 2;
  } else {
    given = first; // log.info(null) writes "msg":null, as pino
    from = 1;
  }
  // The message has a budget of its own: however large the fields, it is not the part cut away.
  budget.room = LINE_CHARS;
  const msg = typeof given === 'string' ? format(budget, given, args, from) : given === undefined ? fallback : given;
  budget.msg = escapeSeparators(msgJson(budget, msg));
  return escapeSeparators(fields) + budget.msg;
}

/** The message of a line logged without one: an Error's own, else the object's `msg`, else its `err`'s message. */
function messageOf(first: object, error: boolean): unknown {
  if (error) return get(first, 'message');
  const msg = get(first, 'msg');
  if (msg !== undefined) return msg;
  const err = get(first, 'err');
  return err !== null && typeof err === 'object' ? get(err, 'message') : undefined;
}

/**
 * Bindings as they are now: each value serialised as a line would write it and read back, so
 * that later changes to the objects do not show in lines (a child's bindings are read once).
 * Never throws.
 */
export function snapshot(bindings: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // A budget of its own: snapshot is called as a child is made, never per line.
  const budget = new LineBudget();
  budget.start();
  try {
    if (bindings === null || typeof bindings !== 'object') return out;
    for (const key of Object.keys(bindings)) {
      if (BINDING_SKIP[key] === true) continue;
      const json = valueJson(budget, get(bindings, key), bindings);
      // defineProperty: an own `__proto__` binding is kept as data, not made the prototype.
      if (json !== undefined) Object.defineProperty(out, key, { value: JSON.parse(json), enumerable: true, writable: true, configurable: true });
    }
  } catch {
    // Unreadable bindings: those read so far.
  }
  return out;
}
