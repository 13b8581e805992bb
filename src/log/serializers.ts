// Values read without throwing, whatever they are (throwing getters, Proxies, null prototypes),
// and pino's serializers: an error's fields, a byte view's summary. None of this has a budget:
// the line's budgets are json.ts's.

const UNREADABLE = '[unreadable]';

/** `obj[key]`, or a placeholder when reading it throws. */
export function get(obj: unknown, key: PropertyKey): unknown {
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
export function text(value: unknown): string {
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

/** `Number(value)`, NaN where that throws. */
export function num(value: unknown): number {
  try {
    return Number(value);
  } catch {
    return NaN;
  }
}

// JSON allows U+2028 and U+2029 unescaped; some line readers split on them, so they are escaped.
const SEPARATORS = /[\u2028\u2029]/;
export function escapeSeparators(json: string): string {
  return SEPARATORS.test(json) ? json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029') : json;
}

/** A string as JSON text, whole (the caller cuts it first when it must). */
export function quote(s: string): string {
  return escapeSeparators(JSON.stringify(s));
}

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

/** serializeError's fields; `seen` holds the errors whose causes lead here, for cycles. */
export function errorFields(err: object, seen: object[]): Record<string, unknown> {
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

/**
 * Bytes in a log line are summarised, not listed: a logged 1 MiB request body would otherwise be
 * a line of millions of numbers that takes seconds to write.
 */
export function bytesSummary(view: ArrayBufferView): { type: string; length: number } {
  return { type: Buffer.isBuffer(view) ? 'Buffer' : (view.constructor?.name ?? 'ArrayBufferView'), length: view.byteLength };
}

// Keys whose values are credentials wherever a logged value holds them (a headers object, an
// HTTP client's error and its config): the value is written as REDACTED, whatever its type.
const CREDENTIAL_KEYS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']);
export const REDACTED = '[Redacted]';

/** Whether `key` names a credential, in any case (`Authorization`, `cookie`). */
export function isCredentialKey(key: string): boolean {
  // Lengths first: most keys are not 6 to 19 characters of these, and are not lowercased.
  return key.length >= 6 && key.length <= 19 && CREDENTIAL_KEYS.has(key.toLowerCase());
}
