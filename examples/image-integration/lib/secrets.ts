// Keeping secrets in: masking the request's secret fields (for logs) and redacting any secret
// value, in the forms it travels in, from every text that leaves (responses, errors, logs).
import { schema } from './schema';

export const MASK = '******';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  secret?: boolean;
}

/**
 * Walks a request body beside the schema and calls `hidden` for each value that must not be
 * shown: the fields the schema marks `secret`, and fields the schema does not know (a mistyped
 * `pasword` holds a password just the same).
 */
function walk(value: unknown, node: SchemaNode | undefined, hidden: (holder: Record<string, unknown>, key: string) => void): void {
  if (value === null || typeof value !== 'object' || node?.properties === undefined) return;
  const holder = value as Record<string, unknown>;
  for (const key of Object.keys(holder)) {
    const child = Object.hasOwn(node.properties, key) ? node.properties[key] : undefined;
    if (child === undefined || child.secret === true) hidden(holder, key);
    else walk(holder[key], child, hidden);
  }
}

/** A copy of the request body with every secret (and unknown) field replaced by `******`. */
export function maskSecrets(body: unknown): unknown {
  const copy = structuredClone(body);
  walk(copy, schema as SchemaNode, (holder, key) => {
    if (holder[key] !== '' && holder[key] !== null && holder[key] !== undefined) holder[key] = MASK;
  });
  return copy;
}

/** The string values of the request's secret (and unknown) fields. */
export function secretValues(body: unknown): string[] {
  const values: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string' && value !== '') values.push(value);
    else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) collect(v);
  };
  walk(body, schema as SchemaNode, (holder, key) => collect(holder[key]));
  return values;
}

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isSchemeChar = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d; // 0-9 + . -
// The characters of \s (white space and line terminators), as a regular expression knows them.
const isSpace = (c: number) =>
  c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;

/**
 * Masks the userinfo of every URL in the text (`scheme://user:password@host` to `scheme://******@host`),
 * as `text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1******@')` would, in one pass. That
 * regex retries the scheme from each letter of a long word and the userinfo from each scheme before
 * it, so its time grows with the square of the text (a 156 KiB username held the service for 30 s).
 * Here each `://` is looked at once, and the characters scanned around one are never scanned again:
 * a scheme has no `:` or `/`, and a userinfo no `/`.
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

/**
 * Finds many strings in a text at once (Aho-Corasick): the time is the length of the text plus the
 * total length of the strings, however many strings there are. Splitting the text on each secret in
 * turn took their number times the text's length: 30,000 unknown fields of 550 KB held the service
 * for 38 s. The tree lives in typed arrays, 14 bytes a node; a node with two children or more keeps
 * them in a Map.
 */
class Matcher {
  readonly #char: Uint16Array; // the character of a node's only child
  readonly #child: Int32Array; // > 0: the only child; < 0: -1 - the index in #maps of its children; 0: none
  readonly #maps: Map<number, number>[] = [];
  readonly #fail: Int32Array; // the node of the longest proper suffix that is also in the tree
  readonly #longest: Int32Array; // the length of the longest string that ends at this node, or 0

  constructor(strings: Iterable<string>) {
    const list = [...strings].filter((s) => s !== '');
    const size = list.reduce((sum, s) => sum + s.length, 1);
    const char = (this.#char = new Uint16Array(size));
    const child = (this.#child = new Int32Array(size));
    const fail = (this.#fail = new Int32Array(size));
    const longest = (this.#longest = new Int32Array(size));
    const maps = this.#maps;
    let count = 1;
    for (const s of list) {
      let node = 0;
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        let next = this.next(node, c);
        if (next === 0) {
          next = count++;
          const only = child[node];
          if (only === 0) {
            char[node] = c;
            child[node] = next;
          } else if (only > 0) {
            child[node] = -maps.push(new Map([[char[node], only], [c, next]]));
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
  }

  /** The child of `node` for character `c`, or 0. */
  next(node: number, c: number): number {
    const only = this.#child[node];
    if (only > 0) return this.#char[node] === c ? only : 0;
    return only === 0 ? 0 : (this.#maps[-only - 1].get(c) ?? 0);
  }

  /** Where the strings occur in `text`, as [start, end) pairs in order; overlapping ones are merged. */
  spans(text: string): number[] {
    const fail = this.#fail;
    const longest = this.#longest;
    const spans: number[] = [];
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let next = this.next(node, c);
      while (next === 0 && node !== 0) {
        node = fail[node];
        next = this.next(node, c);
      }
      node = next;
      const length = longest[node];
      if (length === 0) continue;
      let start = i + 1 - length;
      while (spans.length > 0 && spans[spans.length - 1] > start) {
        spans.pop();
        start = Math.min(start, spans.pop()!);
      }
      spans.push(start, i + 1);
    }
    return spans;
  }
}

// A text with a lone surrogate has no URL-encoded form (encodeURIComponent throws), so it cannot come back in one.
function urlEncoded(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return '';
  }
}

/**
 * Replaces secrets in text. Each secret is also known in the forms it may come back in: JSON-escaped,
 * URL-encoded, base64, and (added by the code that sends them) the Basic credentials and tokens made
 * from it. A service account's private key is also known line by line, in case a peer quotes a part.
 * Every character that is part of some secret is masked: overlapping secrets become one `******`.
 */
export class Redactor {
  readonly #values = new Set<string>();
  #matcher: Matcher | undefined;

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  add(value: string | undefined): this {
    if (value === undefined || value === '') return this;
    for (const form of [value, JSON.stringify(value).slice(1, -1), urlEncoded(value), Buffer.from(value).toString('base64')]) {
      if (form !== '') this.#values.add(form);
    }
    if (value.trimStart().startsWith('{')) this.#addServiceAccount(value);
    this.#matcher = undefined;
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
    if (typeof id === 'string' && id !== '') this.#values.add(id);
    if (typeof key === 'string' && key !== '') {
      this.#values.add(key);
      for (const line of key.split(/\r?\n/)) if (line.length >= 16 && !line.startsWith('-----')) this.#values.add(line);
    }
  }

  redact(text: string): string {
    this.#matcher ??= new Matcher(this.#values);
    const urlsMasked = maskUserinfo(text);
    const spans = this.#matcher.spans(urlsMasked);
    let out = '';
    let copied = 0;
    for (let i = 0; i < spans.length; i += 2) {
      out += `${urlsMasked.slice(copied, spans[i])}${MASK}`;
      copied = spans[i + 1];
    }
    return copied === 0 ? urlsMasked : out + urlsMasked.slice(copied);
  }

  /** A deep copy of a JSON-able value with every string redacted. */
  redactValue<T>(value: T): T {
    return JSON.parse(this.redact(JSON.stringify(value) ?? 'null')) as T;
  }
}
