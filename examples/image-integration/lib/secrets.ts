// Keeping secrets in: masking the request's secret fields (for logs) and redacting any secret
// value, in the forms it travels in, from every text that leaves (responses, errors, logs).
import { schema } from './schema';

export const MASK = '******';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  secret?: boolean;
}

type Holder = Record<string, unknown>;

interface Visitor {
  /** A value that must not be shown: a `secret` field, an unknown field, or a value where an object belongs. */
  hidden(holder: Holder, key: string, node: SchemaNode | undefined): void;
  /** An endpoint field (`endpoint`, `grpcEndpoint`, ...): it may carry userinfo. */
  endpoint(holder: Holder, key: string): void;
}

const isEndpointField = (key: string) => key.length >= 8 && key.slice(-8).toLowerCase() === 'endpoint';

/**
 * Walks a request body beside the schema and calls `hidden` for each value that must not be
 * shown: the fields the schema marks `secret`, fields the schema does not know (a mistyped
 * `pasword` holds a password just the same), and anything but an object where the schema has an
 * object (`"docker": "{\"password\": ...}"`, a configuration sent as a JSON string).
 */
function walk(value: unknown, node: SchemaNode | undefined, visitor: Visitor): void {
  if (value === null || typeof value !== 'object' || node?.properties === undefined) return;
  const holder = value as Holder;
  for (const key of Object.keys(holder)) {
    const child = Object.hasOwn(node.properties, key) ? node.properties[key] : undefined;
    const v = holder[key];
    if (child === undefined || child.secret === true) visitor.hidden(holder, key, child);
    else if (child.properties !== undefined && v !== null && v !== undefined && typeof v !== 'object') visitor.hidden(holder, key, child);
    else if (typeof v === 'string' && isEndpointField(key)) visitor.endpoint(holder, key);
    else walk(v, child, visitor);
  }
}

/** A copy of the request body with every secret (and unknown) field replaced by `******`, and userinfo in endpoints masked. */
export function maskSecrets(body: unknown): unknown {
  const copy = structuredClone(body);
  walk(copy, schema as SchemaNode, {
    hidden(holder, key) {
      if (holder[key] !== '' && holder[key] !== null && holder[key] !== undefined) holder[key] = MASK;
    },
    endpoint(holder, key) {
      holder[key] = maskEndpoint(holder[key] as string);
    },
  });
  return copy;
}

// Bounds on reading JSON out of strings: the size of one string, how deep strings nest in strings,
// and how many characters are parsed in all (so a request cannot make this quadratic).
const MAX_JSON_STRING = 256 * 1024;
const MAX_JSON_NESTING = 3;
const MAX_JSON_BUDGET = 4 * 1024 * 1024;

/** Field names that hold secrets whatever object they are in (inside a JSON string, say). */
const SECRET_NAME = /pass|pwd|secret|token|key|serviceaccount|private|session|signature|bearer|cookie|^auths?$|^authorization$|credential/i;

/** The string values of the request's secret (and unknown) fields, userinfo in its endpoints, and secret-named fields of JSON held in strings. */
export function secretValues(body: unknown): string[] {
  // The declared secret fields first: the Redactor knows the first secrets in more forms (Redactor.add).
  const declared: string[] = [];
  const values: string[] = [];
  let budget = MAX_JSON_BUDGET;
  const parseJson = (text: string): unknown => {
    const trimmed = text.trim();
    const first = trimmed.charCodeAt(0);
    if (first !== 0x7b && first !== 0x5b) return undefined; // { [
    if (trimmed.length > MAX_JSON_STRING || trimmed.length > budget) return undefined;
    budget -= trimmed.length;
    try {
      return JSON.parse(trimmed);
    } catch {
      return undefined;
    }
  };
  // Every string (and number, boolean) under `value`; JSON held in those strings is read too.
  const all = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (v !== '') values.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (typeof v === 'number' || typeof v === 'boolean') values.push(String(v));
      else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
    }
  };
  // The secret-named fields anywhere under `value`, and JSON held in its strings.
  const named = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (Array.isArray(v)) for (const child of v) stack.push(child);
      else if (v !== null && typeof v === 'object') {
        for (const [key, child] of Object.entries(v)) {
          if (SECRET_NAME.test(key)) all(child, nesting);
          else stack.push(child);
        }
      }
    }
  };
  const visitor = (nesting: number): Visitor => ({
    hidden(holder, key, node) {
      const v = holder[key];
      const parsed = node?.properties !== undefined && typeof v === 'string' && nesting < MAX_JSON_NESTING ? parseJson(v) : undefined;
      // A configuration sent as a JSON string: its fields as the schema sees them.
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        walk(parsed, node, visitor(nesting + 1));
        named(parsed, nesting + 1);
      } else if (node?.secret === true && typeof v === 'string') {
        if (v !== '') declared.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else all(v, nesting);
    },
    endpoint(holder, key) {
      values.push(...endpointSecrets(holder[key] as string));
    },
  });
  walk(body, schema as SchemaNode, visitor(0));
  // JSON held in any string of the request (a name, a category, a field of the wrong type).
  const stack = [body];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') named(parseJson(v), 1);
    else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
  }
  return [...new Set([...declared, ...values])];
}

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isSchemeChar = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d; // 0-9 + . -
// The characters of \s (white space and line terminators), as a regular expression knows them.
const isSpace = (c: number) =>
  c === 0x20 ||
  (c >= 0x09 && c <= 0x0d) ||
  c === 0xa0 ||
  c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 ||
  c === 0x2029 ||
  c === 0x202f ||
  c === 0x205f ||
  c === 0x3000 ||
  c === 0xfeff;

/**
 * Where the userinfo of an endpoint value is, as [start, end) before its last `@`: after `scheme://`
 * or `//` when it has one, else from its start (`user:pw@host`, `https:user:pw@host`). The whole
 * value is one endpoint, so a password may hold spaces, `/` and `@`. Undefined without an `@`.
 */
function endpointUserinfo(value: string): [number, number] | undefined {
  const at = value.lastIndexOf('@');
  if (at <= 0) return undefined;
  let start = 0;
  while (start < at && isSpace(value.charCodeAt(start))) start++;
  let i = start;
  while (i < at && isSchemeChar(value.charCodeAt(i))) i++;
  if (i > start && isLetter(value.charCodeAt(start)) && value.startsWith('://', i) && i + 3 <= at) start = i + 3;
  else if (value.startsWith('//', start)) start += 2;
  return start < at ? [start, at] : undefined;
}

/** An endpoint with its userinfo masked, in every form: `https://******@host`, `******@host`, `//******@host`. */
export function maskEndpoint(value: string): string {
  const span = endpointUserinfo(value);
  return span === undefined ? value : `${value.slice(0, span[0])}${MASK}${value.slice(span[1])}`;
}

/** The secrets in an endpoint's userinfo: the userinfo, the password, and their percent-decoded forms. */
export function endpointSecrets(value: string): string[] {
  const span = endpointUserinfo(value);
  if (span === undefined) return [];
  let userinfo = value.slice(span[0], span[1]);
  const out = [userinfo];
  // `https:user:pw`: the scheme without its slashes is no part of the credentials.
  const scheme = /^[a-z][a-z0-9+.-]{0,30}:/i.exec(userinfo)?.[0];
  if (scheme !== undefined && userinfo.indexOf(':', scheme.length) !== -1) userinfo = userinfo.slice(scheme.length);
  const colon = userinfo.indexOf(':');
  if (colon !== -1 && colon + 1 < userinfo.length) out.push(userinfo.slice(colon + 1));
  for (const text of [...out]) {
    try {
      const decoded = decodeURIComponent(text);
      if (decoded !== text) out.push(decoded);
    } catch {
      // not percent-encoded
    }
  }
  return out;
}

/**
 * Masks the userinfo of every URL in the text (`scheme://user:password@host` to `scheme://******@host`),
 * as `text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1******@')` would, in one pass. That
 * regex retries the scheme from each letter of a long word and the userinfo from each scheme before
 * it, so its time grows with the square of the text (a 156 KiB username held the service for 30 s).
 * Here each `://` is looked at once, and the characters scanned around one are never scanned again:
 * a scheme has no `:` or `/`, and a userinfo no `/`. (The Redactor masks more forms: `userinfoSpans`.)
 */
export function maskUserinfo(text: string): string {
  let out = '';
  let copied = 0; // text before this index is in `out`
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme: from the first letter of the run of scheme characters that ends at `://`.
    let start = at;
    while (start > copied && isSchemeChar(text.charCodeAt(start - 1))) start--;
    while (start < at && !isLetter(text.charCodeAt(start))) start++;
    if (start === at) continue;
    // The userinfo: everything up to an '@' that comes before any white space or '/'.
    let end = at + 3;
    while (end < text.length && !isSpace(text.charCodeAt(end)) && text.charCodeAt(end) !== 0x2f && text.charCodeAt(end) !== 0x40) end++;
    if (end === text.length || text.charCodeAt(end) !== 0x40) continue;
    out += `${text.slice(copied, at + 3)}${MASK}@`;
    copied = end + 1;
    at = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

// Where a word that may hold userinfo ends: white space, quotes and brackets (as in JSON or HTML).
const isWordEnd = (c: number) =>
  isSpace(c) ||
  c === 0x22 ||
  c === 0x27 ||
  c === 0x60 ||
  c === 0x3c ||
  c === 0x3e ||
  c === 0x28 ||
  c === 0x29 ||
  c === 0x5b ||
  c === 0x5d ||
  c === 0x7b ||
  c === 0x7d;

/**
 * The userinfo in free text, in every form, as [start, end) pairs: in each word (up to white space,
 * a quote or a bracket), what comes before its last `@`, after `scheme://` or `//`, or from the word's
 * start when that holds a `:` (`user:pw@host`, `https:user:pw@host`). So a password with `/` or `@`
 * is masked whole. One pass: each character is looked at once. (A password with a space is a known
 * secret when it came in an endpoint: `secretValues` collects it.)
 */
export function userinfoSpans(text: string): number[] {
  const spans: number[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    while (i < n && isWordEnd(text.charCodeAt(i))) i++;
    const start = i;
    let lastAt = -1;
    let colonBeforeAt = -1; // the last ':' before lastAt
    let lastColon = -1;
    let separator = -1; // the first '://'
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (isWordEnd(c)) break;
      if (c === 0x40) {
        lastAt = i;
        colonBeforeAt = lastColon;
      } else if (c === 0x3a) {
        lastColon = i;
        if (separator === -1 && text.charCodeAt(i + 1) === 0x2f && text.charCodeAt(i + 2) === 0x2f) separator = i;
      }
    }
    if (lastAt <= start) continue;
    let from = start;
    let strong = false;
    if (separator !== -1 && separator + 3 <= lastAt) {
      from = separator + 3;
      strong = true;
    } else if (text.charCodeAt(start) === 0x2f && text.charCodeAt(start + 1) === 0x2f) {
      from = start + 2;
      strong = true;
    }
    if (from < lastAt && (strong || colonBeforeAt >= from)) spans.push(from, lastAt);
  }
  return spans;
}

// Case and white space do not hide a secret: both sides of a match are seen through this table,
// one UTF-16 unit for one (upper case to lower case where that keeps one unit; white space to ' ').
const FOLD = (() => {
  const table = new Uint16Array(0x10000);
  for (let c = 0; c < 0x10000; c++) {
    if (isSpace(c)) table[c] = 0x20;
    else if (c < 0x80) table[c] = c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
    else {
      const lower = String.fromCharCode(c).toLowerCase();
      table[c] = lower.length === 1 ? lower.charCodeAt(0) : c;
    }
  }
  return table;
})();

function folded(text: string): Uint16Array {
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = FOLD[text.charCodeAt(i)];
  return codes;
}

function foldString(text: string): string {
  // Printable ASCII (base64 forms, most secrets): FOLD is toLowerCase there.
  if (/^[\x20-\x7e]*$/.test(text)) return text.toLowerCase();
  const codes = folded(text);
  let out = '';
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode.apply(null, codes.subarray(i, i + 8192) as unknown as number[]);
  return out;
}

/**
 * Finds many strings in a text at once (Aho-Corasick): the time is the length of the text plus the
 * total length of the strings, however many strings there are. Splitting the text on each secret in
 * turn took their number times the text's length: 30,000 unknown fields of 550 KB held the service
 * for 38 s. The tree lives in typed arrays, 18 bytes a node; a node with two children or more keeps
 * them in a Map. Strings and texts are given folded (FOLD).
 */
class Matcher {
  readonly #char: Uint16Array; // the character of a node's only child
  readonly #child: Int32Array; // > 0: the only child; < 0: -1 - the index in #maps of its children; 0: none
  readonly #maps: Map<number, number>[] = [];
  readonly #fail: Int32Array; // the node of the longest proper suffix that is also in the tree
  readonly #longest: Int32Array; // the length of the longest string that ends at this node, or 0
  readonly #depth: Int32Array; // the length of the prefix this node stands for
  #root: Int32Array | undefined; // the root's children by character, when it has two or more

  constructor(strings: Iterable<string>) {
    const list = [...strings].filter((s) => s !== '');
    const size = list.reduce((sum, s) => sum + s.length, 1);
    const char = (this.#char = new Uint16Array(size));
    const child = (this.#child = new Int32Array(size));
    const fail = (this.#fail = new Int32Array(size));
    const longest = (this.#longest = new Int32Array(size));
    const depth = (this.#depth = new Int32Array(size));
    const maps = this.#maps;
    let count = 1;
    for (const s of list) {
      let node = 0;
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        let next = this.next(node, c);
        if (next === 0) {
          next = count++;
          depth[next] = i + 1;
          const only = child[node];
          if (only === 0) {
            char[node] = c;
            child[node] = next;
          } else if (only > 0) {
            child[node] = -maps.push(
              new Map([
                [char[node], only],
                [c, next],
              ]),
            );
          } else {
            maps[-only - 1].set(c, next);
          }
        }
        node = next;
      }
      longest[node] = s.length;
    }
    // Breadth first, so that every suffix's node is done before the nodes that fall back to it.
    const queue = new Int32Array(count);
    let head = 0;
    let tail = 0;
    const visit = (parent: number, c: number, node: number) => {
      if (parent !== 0) {
        let fallback = fail[parent];
        let target = this.next(fallback, c);
        while (target === 0 && fallback !== 0) {
          fallback = fail[fallback];
          target = this.next(fallback, c);
        }
        fail[node] = target;
        if (longest[node] === 0) longest[node] = longest[target];
      }
      queue[tail++] = node;
    };
    for (let parent = 0; ; parent = queue[head++]) {
      const only = child[parent];
      if (only > 0) visit(parent, char[parent], only);
      else if (only < 0) for (const [c, node] of maps[-only - 1]) visit(parent, c, node);
      if (head === tail) break;
    }
    // The root is where most characters of a text are looked up: a table rather than a Map.
    if (child[0] < 0) {
      const root = new Int32Array(0x10000);
      for (const [c, node] of maps[-child[0] - 1]) root[c] = node;
      this.#root = root;
    }
  }

  /** The child of `node` for character `c`, or 0. */
  next(node: number, c: number): number {
    if (node === 0 && this.#root !== undefined) return this.#root[c];
    const only = this.#child[node];
    if (only > 0) return this.#char[node] === c ? only : 0;
    return only === 0 ? 0 : (this.#maps[-only - 1].get(c) ?? 0);
  }

  /**
   * Where the strings occur in `text`, as [start, end) pairs in order; overlapping ones are merged.
   * With `cut`, the text was cut short: its end, when it is the start of a string, counts too.
   */
  spans(text: Uint16Array, cut = false): number[] {
    const fail = this.#fail;
    const longest = this.#longest;
    const spans: number[] = [];
    const push = (start: number, end: number) => {
      while (spans.length > 0 && spans[spans.length - 1] > start) {
        spans.pop();
        start = Math.min(start, spans.pop()!);
      }
      spans.push(start, end);
    };
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      let next = this.next(node, c);
      while (next === 0 && node !== 0) {
        node = fail[node];
        next = this.next(node, c);
      }
      node = next;
      const length = longest[node];
      if (length !== 0) push(i + 1 - length, i + 1);
    }
    if (cut && node !== 0) push(text.length - this.#depth[node], text.length);
    return spans;
  }
}

/** A decoded view of a text: its characters (folded) and, for each, the [from, to) it came from. */
interface View {
  codes: Uint16Array;
  from: Int32Array | undefined; // undefined: one to one
  to: Int32Array | undefined;
}

/** Builds a decoded view; `emit(code, from, to)` in the source view's indices. */
function decoded(source: View, decode: (codes: Uint16Array, emit: (code: number, from: number, to: number) => void) => void): View {
  const n = source.codes.length;
  const codes = new Uint16Array(n);
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  let k = 0;
  const emit = (code: number, start: number, end: number) => {
    // In the original text's indices: the views are one decoding over another.
    const f = source.from === undefined ? start : source.from[start];
    const t = source.to === undefined ? end : source.to[end - 1];
    if (code > 0xffff) {
      code -= 0x10000;
      codes[k] = 0xd800 + (code >> 10);
      from[k] = f;
      to[k++] = t;
      code = 0xdc00 + (code & 0x3ff);
    }
    codes[k] = FOLD[code];
    from[k] = f;
    to[k++] = t;
  };
  decode(source.codes, emit);
  return { codes: codes.subarray(0, k), from: from.subarray(0, k), to: to.subarray(0, k) };
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57; // codes are folded: no upper case
  return -1;
}

function hex(codes: Uint16Array, at: number, count: number): number {
  if (at + count > codes.length) return -1;
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = hexDigit(codes[i]);
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

const JSON_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };

/** JSON string escapes: `\"`, `\\`, `\/`, `\n`..., and `\u0026` (Go writes <, > and & so). */
function jsonView(source: View): View | undefined {
  if (source.codes.indexOf(0x5c) === -1) return undefined;
  return decoded(source, (codes, emit) => {
    for (let i = 0; i < codes.length;) {
      if (codes[i] === 0x5c && i + 1 < codes.length) {
        const e = codes[i + 1];
        if (e === 0x75) {
          const unit = hex(codes, i + 2, 4);
          if (unit >= 0) {
            emit(unit, i, i + 6);
            i += 6;
            continue;
          }
        } else if (JSON_ESCAPES[e] !== undefined) {
          emit(JSON_ESCAPES[e], i, i + 2);
          i += 2;
          continue;
        }
      }
      emit(codes[i], i, i + 1);
      i++;
    }
  });
}

/** Percent-encoding, upper or lower case, of UTF-8; with `plus`, `+` is a space (forms, query strings). */
function percentView(source: View, plus: boolean): View | undefined {
  if (plus ? source.codes.indexOf(0x2b) === -1 : source.codes.indexOf(0x25) === -1) return undefined;
  return bytesView(source, 3, (codes, i) => (codes[i] === 0x25 ? hex(codes, i + 1, 2) : -1), plus);
}

/**
 * `\xHH` escapes of bytes, as Go's `%q`, Python's `repr()` and C write the bytes they cannot print:
 * UTF-8 beyond ASCII (`\xc3\xa9`), and the NULs of UTF-16 (`p\x00a\x00`).
 */
function hexEscapeView(source: View): View | undefined {
  if (source.codes.indexOf(0x5c) === -1) return undefined;
  return bytesView(source, 4, (codes, i) => (codes[i] === 0x5c && codes[i + 1] === 0x78 ? hex(codes, i + 2, 2) : -1), false);
}

/**
 * A view where each run of escaped bytes (`byteAt` says which byte an escape of `width` characters
 * at i is, or -1) is decoded as UTF-8; a byte that starts no valid sequence stands for itself.
 */
function bytesView(source: View, width: number, byteAt: (codes: Uint16Array, i: number) => number, plus: boolean): View {
  return decoded(source, (codes, emit) => {
    const bytes: number[] = [];
    const at: number[] = [];
    for (let i = 0; i < codes.length;) {
      const c = codes[i];
      if (c === 0x2b && plus) {
        emit(0x20, i, i + 1);
        i++;
        continue;
      }
      if (byteAt(codes, i) < 0) {
        emit(c, i, i + 1);
        i++;
        continue;
      }
      bytes.length = 0;
      at.length = 0;
      for (let b = byteAt(codes, i); i < codes.length && b >= 0; b = byteAt(codes, i)) {
        bytes.push(b);
        at.push(i);
        i += width;
      }
      for (let k = 0; k < bytes.length;) {
        const b = bytes[k];
        const length = b < 0x80 ? 1 : b >> 5 === 6 ? 2 : b >> 4 === 14 ? 3 : b >> 3 === 30 ? 4 : 0;
        let cp = length === 2 ? b & 0x1f : length === 3 ? b & 0x0f : b & 0x07;
        let ok = length > 0 && k + length <= bytes.length;
        for (let m = 1; ok && m < length; m++) {
          if (bytes[k + m] >> 6 !== 2) ok = false;
          else cp = (cp << 6) | (bytes[k + m] & 0x3f);
        }
        if (length === 1) cp = b;
        if (!ok || cp > 0x10ffff) {
          emit(b, at[k], at[k] + width);
          k++;
        } else {
          emit(cp, at[k], at[k + length - 1] + width);
          k += length;
        }
      }
    }
  });
}

const ENTITIES: Record<string, number> = {
  amp: 0x26,
  lt: 0x3c,
  gt: 0x3e,
  quot: 0x22,
  apos: 0x27,
  nbsp: 0xa0,
  sol: 0x2f,
  bsol: 0x5c,
  colon: 0x3a,
  commat: 0x40,
  num: 0x23,
  percnt: 0x25,
  plus: 0x2b,
  equals: 0x3d,
  excl: 0x21,
  quest: 0x3f,
  dollar: 0x24,
  lpar: 0x28,
  rpar: 0x29,
  lowbar: 0x5f,
  period: 0x2e,
  comma: 0x2c,
  semi: 0x3b,
  ast: 0x2a,
  hat: 0x5e,
  grave: 0x60,
  verbar: 0x7c,
  vert: 0x7c,
  lsqb: 0x5b,
  rsqb: 0x5d,
  lbrack: 0x5b,
  rbrack: 0x5d,
  lcub: 0x7b,
  rcub: 0x7d,
  lbrace: 0x7b,
  rbrace: 0x7d,
  tab: 0x09,
  newline: 0x0a,
};

/** HTML character references: `&amp;`, `&#64;`, `&#x2F;` (the `;` may be left out). */
function htmlView(source: View): View | undefined {
  if (source.codes.indexOf(0x26) === -1) return undefined;
  return decoded(source, (codes, emit) => {
    const n = codes.length;
    for (let i = 0; i < n;) {
      if (codes[i] === 0x26) {
        let j = i + 1;
        let cp = -1;
        if (codes[j] === 0x23) {
          j++;
          const isHex = codes[j] === 0x78;
          if (isHex) j++;
          const begin = j;
          let value = 0;
          while (j < n && j - begin < 8) {
            const d = isHex ? hexDigit(codes[j]) : codes[j] >= 0x30 && codes[j] <= 0x39 ? codes[j] - 0x30 : -1;
            if (d < 0) break;
            value = value * (isHex ? 16 : 10) + d;
            j++;
          }
          if (j > begin && value <= 0x10ffff) cp = value;
        } else {
          const begin = j;
          while (j < n && j - begin < 8 && codes[j] >= 0x61 && codes[j] <= 0x7a) j++;
          const name = String.fromCharCode(...codes.subarray(begin, j));
          if (Object.hasOwn(ENTITIES, name)) cp = ENTITIES[name];
        }
        if (cp >= 0) {
          if (codes[j] === 0x3b) j++;
          emit(cp, i, j);
          i = j;
          continue;
        }
      }
      emit(codes[i], i, i + 1);
      i++;
    }
  });
}

/** The decoded views a text is searched in, besides the text itself: one decoding, or two in a row. */
// How the text may have been encoded, one layer each; layers stack (a password percent-encoded
// twice in a redirect URL, Go's JSON escapes under percent-encoding, HTML over percent).
const DECODERS: ((view: View) => View | undefined)[] = [jsonView, (v) => percentView(v, false), (v) => percentView(v, true), htmlView, hexEscapeView];
/** Layers of encoding undone, at most; and views made, at most (each is one pass over the text). */
const MAX_LAYERS = 3;
const MAX_VIEWS = 24;

function views(text: Uint16Array): View[] {
  const plain: View = { codes: text, from: undefined, to: undefined };
  const out: View[] = [plain];
  let layer = [plain];
  for (let depth = 0; depth < MAX_LAYERS && layer.length > 0; depth++) {
    const next: View[] = [];
    for (const view of layer) {
      for (const decode of DECODERS) {
        const decoded = decode(view);
        if (decoded === undefined) continue;
        next.push(decoded);
        out.push(decoded);
        if (out.length >= MAX_VIEWS) return out;
      }
    }
    layer = next;
  }
  return out;
}

/** A view's [start, end) pairs, in place, as the original text's. */
function inOriginal(view: View, spans: number[]): number[] {
  if (view.from === undefined || view.to === undefined) return spans;
  for (let i = 0; i < spans.length; i += 2) {
    const end = spans[i + 1];
    spans[i] = view.from[spans[i]];
    spans[i + 1] = view.to[end - 1];
  }
  return spans;
}

/** The view without its white space (folded to ' '), or undefined when it has none. */
function withoutSpaces(source: View): View | undefined {
  if (source.codes.indexOf(0x20) === -1) return undefined;
  return decoded(source, (codes, emit) => {
    for (let i = 0; i < codes.length; i++) if (codes[i] !== 0x20) emit(codes[i], i, i + 1);
  });
}

/** Merges lists of sorted [start, end) pairs; overlapping pairs become one, touching ones stay two. */
function mergeSpans(lists: number[][]): number[] {
  const at = lists.map(() => 0);
  const out: number[] = [];
  for (;;) {
    let best = -1;
    for (let l = 0; l < lists.length; l++) if (at[l] < lists[l].length && (best === -1 || lists[l][at[l]] < lists[best][at[best]])) best = l;
    if (best === -1) return out;
    const start = lists[best][at[best]];
    const end = lists[best][at[best] + 1];
    at[best] += 2;
    if (out.length > 0 && out[out.length - 1] > start) out[out.length - 1] = Math.max(out[out.length - 1], end);
    else out.push(start, end);
  }
}

/** Forms of a secret shorter than this many characters are masked only where they stand alone. */
const SHORT_FORM = 4;

// Letters, digits and '_', folded: what a short secret may not touch to be itself.
const isWordCode = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c > 0x7f;

function standsAlone(codes: Uint16Array, start: number, end: number): boolean {
  return (start === 0 || !isWordCode(codes[start - 1])) && (end === codes.length || !isWordCode(codes[end]));
}

/** Sorts [start, end) pairs by start, in place, and merges overlapping ones. */
function sortSpans(spans: number[]): void {
  const pairs: [number, number][] = [];
  for (let i = 0; i < spans.length; i += 2) pairs.push([spans[i], spans[i + 1]]);
  pairs.sort((a, b) => a[0] - b[0]);
  spans.length = 0;
  for (const [start, end] of pairs) {
    if (spans.length > 0 && spans[spans.length - 1] > start) spans[spans.length - 1] = Math.max(spans[spans.length - 1], end);
    else spans.push(start, end);
  }
}

const BASE64_URL = (text: string) => text.replace(/\+/g, '-').replace(/\//g, '_');

/** A secret's forms, by how they are searched. */
interface Forms {
  /** Searched in the text and its decoded views. */
  plain: string[];
  /** Searched there too, but a secret shorter than SHORT_FORM has them masked only where they stand alone. */
  bytes: string[];
  /** Searched also with white space taken out: encodings that are wrapped over lines or spaced. */
  joined: string[];
}

/** UTF-16 code units as bytes, each byte one character: what a peer's UTF-16 text is when read byte by byte. */
function utf16Bytes(value: string, bigEndian: boolean): Buffer {
  const bytes = Buffer.from(value, 'utf16le');
  return bigEndian ? bytes.swap16() : bytes;
}

/**
 * The forms a secret is searched in, besides those the decoded views give (JSON escapes, percent-
 * encoding, `\x` escapes, HTML references, any case): base64 and base64url, padded or not; with
 * `aligned`, the part of its base64 that stays the same wherever it sits in a longer encoded text
 * (three alignments); with `encodings`, the hex of its UTF-8 and UTF-16 (LE, BE) bytes, its UTF-16
 * bytes as characters (`p\0a\0`, `\0p\0a`, which JSON writes `p\u0000a\u0000`), and its UTF-8 bytes
 * read as Latin-1 (`Ã©` for `é`). The base64 and hex forms of the secrets known in every form are
 * also searched with white space taken out, so that base64 wrapped at 64 or 76 columns (LF or
 * CRLF) and hex spaced by bytes are found.
 */
function secretForms(value: string, aligned: boolean, encodings: boolean): Forms {
  const bytes = Buffer.from(value, 'utf8');
  const std = bytes.toString('base64');
  const url = bytes.toString('base64url');
  const base64 = [std, url, `${url}${'='.repeat((4 - (url.length % 4)) % 4)}`];
  const forms: Forms = { plain: [value, ...base64], bytes: [], joined: [] };
  const cores: string[] = [];
  if (aligned && bytes.length >= 6) {
    for (let r = 0; r < 3; r++) {
      const encoded = Buffer.concat([Buffer.alloc(r), bytes]).toString('base64');
      const core = encoded.slice(Math.ceil((8 * r) / 6), Math.floor((8 * (r + bytes.length)) / 6));
      if (core.length >= 6) cores.push(core, BASE64_URL(core));
    }
    forms.plain.push(...cores);
  }
  if (!encodings) return forms;
  const le = utf16Bytes(value, false);
  const be = utf16Bytes(value, true);
  const hex = [bytes.toString('hex'), le.toString('hex'), be.toString('hex')];
  const latin1 = bytes.toString('latin1');
  forms.bytes.push(...hex, le.toString('latin1'), be.toString('latin1'));
  if (latin1 !== value) forms.bytes.push(latin1);
  forms.joined.push(...base64, ...cores, ...hex);
  return forms;
}

/** Forms in the white-space-free search shorter than this are left out: joining words must not make them. */
const JOINED_FORM = 8;

/**
 * Replaces secrets in text. Each secret is known in the forms it may come back in: as it is, in any
 * case, JSON-escaped (Go's `\u0026` too), percent-encoded (upper or lower case, `+` for a space),
 * `\x`-escaped, as HTML references, in base64 and base64url (alone or inside a longer encoded text,
 * on one line or wrapped), in hex (either case, alone or spaced), as UTF-16 (LE or BE) bytes, and
 * (added by the code that sends them) the Basic credentials and tokens made from it. A service
 * account's private key is also known line by line, in case a peer quotes a part. Userinfo in URLs
 * and `user:pw@host` is masked too. Every character that is part of some secret is masked:
 * overlapping secrets become one `******`.
 */
export class Redactor {
  readonly #values = new Set<string>();
  // Forms shorter than SHORT_FORM: masked only where they stand alone (see redact()).
  readonly #short = new Set<string>();
  // Base64 and hex forms, searched in the text with its white space taken out.
  readonly #joined = new Set<string>();
  #matcher: Matcher | undefined;
  #shortMatcher: Matcher | undefined;
  #joinedMatcher: Matcher | undefined;
  // Characters of secrets still known in the aligned base64 forms, and in the other encodings.
  #alignedBudget = 64 * 1024;
  #encodingsBudget = 16 * 1024;

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  add(value: string | undefined): this {
    if (value === undefined || value === '') return this;
    // The aligned base64 forms (two more strings the length of the secret) for the first 64 KiB
    // of secrets only, and the hex, UTF-16 and wrapped forms (some twenty times its length) for the
    // first 16 KiB: a request with thousands of unknown fields builds a tree twice as big, not
    // twenty times. The declared secret fields come first (secretValues).
    const aligned = this.#alignedBudget > 0;
    const encodings = this.#encodingsBudget > 0;
    this.#alignedBudget -= value.length;
    this.#encodingsBudget -= value.length;
    const forms = secretForms(value, aligned, encodings);
    const shortSecret = value.length < SHORT_FORM;
    for (const form of forms.plain) if (form !== '') (form.length < SHORT_FORM ? this.#short : this.#values).add(foldString(form));
    for (const form of forms.bytes) if (form !== '') (shortSecret || form.length < SHORT_FORM ? this.#short : this.#values).add(foldString(form));
    if (!shortSecret) for (const form of forms.joined) if (form.length >= JOINED_FORM) this.#joined.add(foldString(form));
    if (value.trimStart().startsWith('{')) this.#addServiceAccount(value);
    this.#matcher = undefined;
    this.#shortMatcher = undefined;
    this.#joinedMatcher = undefined;
    return this;
  }

  #addServiceAccount(json: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return;
    }
    const { private_key: key, private_key_id: id } = (parsed ?? {}) as { private_key?: unknown; private_key_id?: unknown };
    if (typeof id === 'string' && id !== '') this.#values.add(foldString(id));
    if (typeof key === 'string' && key !== '') {
      this.#values.add(foldString(key));
      for (const line of key.split(/\r?\n/)) if (line.length >= 16 && !line.startsWith('-----')) this.add(line);
    }
  }

  /**
   * The text with each secret, and any userinfo, replaced by `******`. With `cut`, the text was cut
   * short (a peer's answer read up to a cap), and a secret's start at its end is masked too.
   */
  redact(text: string, { cut = false }: { cut?: boolean } = {}): string {
    if (text === '') return text;
    const lists = [userinfoSpans(text)];
    if (this.#values.size > 0 || this.#short.size > 0) {
      const matcher = (this.#matcher ??= new Matcher(this.#values));
      const shortMatcher = this.#short.size > 0 ? (this.#shortMatcher ??= new Matcher(this.#short)) : undefined;
      const joinedMatcher = this.#joined.size > 0 ? (this.#joinedMatcher ??= new Matcher(this.#joined)) : undefined;
      for (const view of views(folded(text))) {
        const spans = matcher.spans(view.codes, cut);
        // A short secret (`ca`) inside a word (`_catalog`) is that word, not the secret: it is
        // masked where it stands alone, as a value between quotes, separators or the text's ends.
        const found = shortMatcher?.spans(view.codes) ?? [];
        for (let i = 0; i < found.length; i += 2) if (standsAlone(view.codes, found[i], found[i + 1])) spans.push(found[i], found[i + 1]);
        if (found.length > 0) sortSpans(spans);
        lists.push(inOriginal(view, spans));
        // Base64 wrapped over lines (MIME at 76 columns, PEM at 64, CRLF or LF), hex spaced by bytes.
        const joined = joinedMatcher === undefined ? undefined : withoutSpaces(view);
        if (joined !== undefined) lists.push(inOriginal(joined, joinedMatcher!.spans(joined.codes, cut)));
      }
    }
    const spans = mergeSpans(lists);
    let out = '';
    let copied = 0;
    for (let i = 0; i < spans.length; i += 2) {
      out += `${text.slice(copied, spans[i])}${MASK}`;
      copied = spans[i + 1];
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  /**
   * A deep copy of a JSON-able value with every string redacted one by one, so that a
   * short or common secret masks part of a string, never the JSON around it.
   */
  redactValue<T>(value: T): T {
    const root: Holder = {};
    const stack: [unknown, Holder, string | number][] = [[value, root, 'value']];
    while (stack.length > 0) {
      const [given, holder, key] = stack.pop()!;
      let v = given;
      if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON: () => unknown }).toJSON();
      if (typeof v === 'string') holder[key] = this.redact(v);
      else if (typeof v === 'number') holder[key] = Number.isFinite(v) ? v : null;
      else if (typeof v === 'boolean' || v === null) holder[key] = v;
      else if (Array.isArray(v)) {
        const out: unknown[] = new Array(v.length).fill(null);
        holder[key] = out;
        for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], out as unknown as Holder, i]);
      } else if (typeof v === 'object') {
        const out: Holder = {};
        holder[key] = out;
        // Keys are names (the schema's, or a mistyped one, whose value is masked): kept, so the shape stays.
        const entries = Object.entries(v as Holder).filter(([, child]) => child !== undefined && typeof child !== 'function' && typeof child !== 'symbol');
        // Defined in order first (and as own properties, so `__proto__` is a key like another).
        for (const [k] of entries) Object.defineProperty(out, k, { value: null, enumerable: true, writable: true, configurable: true });
        for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i][1], out, entries[i][0]]);
      } else if (Array.isArray(holder)) holder[key] = null;
    }
    return root.value as T;
  }
}
