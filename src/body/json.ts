// JSON request bodies (and CloudEvents' JSON): parsed within a depth bound, refused with where
// they break (never quoting them), and refused when a key would set a prototype.
import { runtimeError, type HttpError } from '../errors';
import { lineAndColumn } from './position';

/**
 * How deep JSON data may nest. V8's JSON.stringify (and so any function that echoes its input,
 * logs it or clones it) overflows the stack a few thousand levels down; real data stays far
 * below this.
 */
export const MAX_JSON_DEPTH = 512;

/** Parses JSON text; an empty or blank text is `undefined`; malformed text is a 400 saying where. */
export function parseJson(text: string): unknown {
  // Most texts start with a visible ASCII character: only the others pay for trim()'s copy.
  const first = text.charCodeAt(0);
  if (!(first > 0x20 && first < 0x7f) && text.trim() === '') return undefined;
  // Nesting deeper than the bound needs more characters than the bound: short texts skip the scan.
  if (text.length > MAX_JSON_DEPTH) {
    const at = tooDeep(text, MAX_JSON_DEPTH);
    if (at !== -1) {
      const { line, column } = lineAndColumn(text, at);
      throw runtimeError('FUNCRUN_INVALID_JSON', `invalid JSON at line ${line}, column ${column}: nested deeper than ${MAX_JSON_DEPTH} levels`, {
        details: { position: at, line, column },
      });
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw jsonError(text, err as Error);
  }
  // Only a text that could spell one (a key written with escapes holds `\u00`) is walked.
  if ((text.includes('__proto__') || text.includes('constructor') || text.includes('\\u00')) && poisoned(value)) {
    throw runtimeError('FUNCRUN_INVALID_JSON', 'Object contains forbidden prototype property');
  }
  return value;
}

/**
 * Whether parsed JSON holds a `__proto__` key, or a `constructor` key whose value has a
 * `prototype` key, anywhere: as fastify refuses them (secure-json-parse), since a function that
 * merges the body into an object (`Object.assign`, a deep merge) would set that object's prototype.
 */
function poisoned(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) pending.push(item);
      continue;
    }
    const record = node as Record<string, unknown>;
    if (Object.hasOwn(record, '__proto__')) return true;
    const made = Object.hasOwn(record, 'constructor') ? record.constructor : undefined;
    if (made !== null && typeof made === 'object' && Object.hasOwn(made, 'prototype')) return true;
    for (const key of Object.keys(record)) pending.push(record[key]);
  }
  return false;
}

/** The offset of the bracket that opens level `max + 1`, or -1; brackets inside strings do not count. */
function tooDeep(text: string, max: number): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string: to the next quote that is not escaped.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return i;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return -1;
}

function jsonError(text: string, err: Error): HttpError {
  const position = findJsonError(text);
  const { line, column } = lineAndColumn(text, position);
  // V8's message may quote the input; keep only its reason so no body content is echoed or logged.
  const reason = err.message
    .replace(/, .* is not valid JSON$/s, '')
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .replace(/\s*\(line \d+ column \d+\)$/, '');
  return runtimeError('FUNCRUN_INVALID_JSON', `invalid JSON at line ${line}, column ${column}: ${reason}`, {
    details: { position, line, column },
  });
}

/**
 * The offset of the first character that makes `text` invalid JSON (its length when the text
 * ends too early). Only runs after JSON.parse failed, to say where; it never decides validity.
 * A loop with an explicit stack of open containers, so nesting of any depth cannot overflow the
 * call stack, and each character is looked at once.
 */
export function findJsonError(text: string): number {
  const n = text.length;
  const open: number[] = []; // 0x7b '{' or 0x5b '['
  let i = 0;
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  };
  // Each returns false at the first character that cannot belong to the token.
  const string = (): boolean => {
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) return (i++, true);
      if (c < 0x20) return false;
      if (c !== 0x5c) {
        i++;
        continue;
      }
      const e = text.charCodeAt(++i);
      if (e === 0x75) {
        for (let k = 1; k <= 4; k++) if (!isHex(text.charCodeAt(i + k))) return ((i += k), false);
        i += 5;
      } else if (e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) i++;
      else return false;
    }
    return false;
  };
  const digits = (): number => {
    const from = i;
    while (isDigit(text.charCodeAt(i))) i++;
    return i - from;
  };
  const number = (): boolean => {
    if (text.charCodeAt(i) === 0x2d) i++;
    if (text.charCodeAt(i) === 0x30) i++;
    else if (digits() === 0) return false;
    if (text.charCodeAt(i) === 0x2e && (i++, digits() === 0)) return false;
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = text.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) i++;
      if (digits() === 0) return false;
    }
    return true;
  };
  const literal = (word: string): boolean => {
    for (let k = 0; k < word.length; k++, i++) if (text.charCodeAt(i) !== word.charCodeAt(k)) return false;
    return true;
  };
  const scalar = (c: number): boolean => {
    if (c === 0x22) return string();
    if (c === 0x74) return literal('true');
    if (c === 0x66) return literal('false');
    if (c === 0x6e) return literal('null');
    if (c === 0x2d || isDigit(c)) return number();
    return false;
  };
  // What comes next: a value, an object member's name, or what follows a complete value.
  const VALUE = 0;
  const KEY = 1;
  const AFTER = 2;
  let state = VALUE;
  for (;;) {
    ws();
    const c = text.charCodeAt(i);
    if (state === VALUE) {
      if (c === 0x7b || c === 0x5b) {
        i++;
        ws();
        if (text.charCodeAt(i) === c + 2) {
          // `{}` or `[]`: '}' and ']' are two code points after their openers.
          i++;
          state = AFTER;
        } else {
          open.push(c);
          state = c === 0x7b ? KEY : VALUE;
        }
      } else if (scalar(c)) state = AFTER;
      else break;
    } else if (state === KEY) {
      if (c !== 0x22 || !string()) break;
      ws();
      if (text.charCodeAt(i) !== 0x3a) break;
      i++;
      state = VALUE;
    } else {
      const top = open[open.length - 1];
      if (top === undefined) return i < n ? i : n;
      if (c === 0x2c) {
        i++;
        state = top === 0x7b ? KEY : VALUE;
      } else if (c === top + 2) {
        open.pop();
        i++;
      } else break;
    }
  }
  return Math.min(i, n);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}
