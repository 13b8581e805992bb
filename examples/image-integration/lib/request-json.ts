// JSON as protojson reads it: objects keep every key in order, duplicates included (JSON.parse
// keeps the last and hides the rest), numbers keep their text (so `30.0` and `1e2` are judged as
// written), and a string with a lone surrogate is an error. Depth is bounded: nothing this API
// accepts nests deeper than 4 levels, and ignored values may not hide a deeper structure.

export type JsonNode =
  | { kind: 'null' }
  | { kind: 'bool'; value: boolean }
  | { kind: 'number'; text: string }
  | { kind: 'string'; value: string }
  | { kind: 'array'; items: JsonNode[] }
  | { kind: 'object'; entries: [string, JsonNode][] };

/** How deep objects and arrays may nest in a request (the schema itself needs 4). */
export const MAX_DEPTH = 32;

export class RequestSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestSyntaxError';
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

// A high surrogate not followed by a low one, or a low one not after a high one (String#toWellFormed's, which ES2024 has).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** True when `s` has no lone surrogate (it can then be encoded as UTF-8). */
export function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c > 0xdbff) return false;
    const d = s.charCodeAt(i + 1);
    if (!(d >= 0xdc00 && d <= 0xdfff)) return false;
    i++;
  }
  return true;
}

/**
 * Parses one JSON text. A blank text is an empty object, as grpc-gateway reads an empty body.
 * Errors say where and what, never quoting the input (it may hold secrets). With
 * `replaceLoneSurrogates`, a lone surrogate is U+FFFD, as Go's encoding/json reads a peer's answer;
 * else an error, as protojson reads a request.
 */
export function parseRequestJson(text: string, { replaceLoneSurrogates = false } = {}): JsonNode {
  let i = 0;
  const n = text.length;
  const fail = (what: string): never => {
    throw new RequestSyntaxError(`invalid JSON at offset ${i}: ${what}`);
  };
  const ws = () => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  };
  const hex4 = (): number => {
    const h = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('invalid \\u escape');
    i += 4;
    return parseInt(h, 16);
  };
  const string = (): string => {
    i++; // the opening quote
    let out = '';
    let from = i;
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail('control character in a string');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(from, i);
      i++;
      const e = text[i++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u':
          out += String.fromCharCode(hex4());
          break;
        default:
          fail('invalid escape');
      }
      from = i;
    }
    out += text.slice(from, i);
    i++; // the closing quote
    if (wellFormed(out)) return out;
    if (replaceLoneSurrogates) return out.replace(LONE_SURROGATE, '\ufffd');
    return fail('a string holds a lone surrogate (an unpaired \\ud800-\\udfff), which is not text');
  };
  const value = (depth: number): JsonNode => {
    ws();
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth >= MAX_DEPTH) fail(`nested deeper than ${MAX_DEPTH} levels`);
      i++;
      ws();
      if (c === '[') {
        const items: JsonNode[] = [];
        if (text[i] === ']') return (i++, { kind: 'array', items });
        for (;;) {
          items.push(value(depth + 1));
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === ']') return (i++, { kind: 'array', items });
          else fail("expected ',' or ']'");
        }
      }
      const entries: [string, JsonNode][] = [];
      if (text[i] === '}') return (i++, { kind: 'object', entries });
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key in double quotes');
        const key = string();
        ws();
        if (text[i] !== ':') fail("expected ':'");
        i++;
        entries.push([key, value(depth + 1)]);
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return (i++, { kind: 'object', entries });
        else fail("expected ',' or '}'");
      }
    }
    if (c === '"') return { kind: 'string', value: string() };
    if (text.startsWith('true', i)) return ((i += 4), { kind: 'bool', value: true });
    if (text.startsWith('false', i)) return ((i += 5), { kind: 'bool', value: false });
    if (text.startsWith('null', i)) return ((i += 4), { kind: 'null' });
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null || m[0] === '') return fail(i >= n ? 'unexpected end' : 'unexpected character');
    i += m[0].length;
    return { kind: 'number', text: m[0] };
  };
  ws();
  if (i >= n) return { kind: 'object', entries: [] };
  const root = value(0);
  ws();
  if (i < n) fail('unexpected text after the JSON value');
  return root;
}

/**
 * The same tree from a value JSON.parse already made (duplicate keys are lost by then). Strings
 * are checked for lone surrogates and the depth is bounded as when parsing.
 */
export function fromParsed(input: unknown, depth = 0): JsonNode {
  if (input === null || input === undefined) return { kind: 'null' };
  switch (typeof input) {
    case 'boolean':
      return { kind: 'bool', value: input };
    case 'number':
      if (!Number.isFinite(input)) throw new RequestSyntaxError('invalid JSON: a number that is not finite');
      return { kind: 'number', text: String(input) };
    case 'string':
      if (!wellFormed(input)) throw new RequestSyntaxError('invalid JSON: a string holds a lone surrogate (an unpaired \\ud800-\\udfff), which is not text');
      return { kind: 'string', value: input };
    case 'object': {
      if (depth >= MAX_DEPTH) throw new RequestSyntaxError(`invalid JSON: nested deeper than ${MAX_DEPTH} levels`);
      if (Array.isArray(input)) return { kind: 'array', items: input.map((item) => fromParsed(item, depth + 1)) };
      const entries: [string, JsonNode][] = [];
      for (const key of Object.keys(input)) {
        if (!wellFormed(key)) throw new RequestSyntaxError('invalid JSON: a key holds a lone surrogate (an unpaired \\ud800-\\udfff), which is not text');
        entries.push([key, fromParsed((input as Record<string, unknown>)[key], depth + 1)]);
      }
      return { kind: 'object', entries };
    }
    default:
      throw new RequestSyntaxError('invalid JSON value');
  }
}
