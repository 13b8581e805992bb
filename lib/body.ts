// Reading a request body (one reader with a byte limit) and turning bytes into the handler's
// data by media type (one short parser per kind).
import type { IncomingMessage } from 'node:http';
import { TextDecoder } from 'node:util';
import { HttpError } from './errors';
import { bodyKind, type MediaType } from './media-type';
import { parseXml } from './xml';

export { parseXml };

/** True when the request carries a body (a Content-Length above zero, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}

/** Reads the whole body; 413 as soon as it would pass `limit` bytes, without reading further. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    return Promise.reject(new HttpError(415, `Content-Encoding '${encoding}' is not supported; send the body uncompressed`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Settled once; later events are ignored rather than unsubscribed, which costs more per request.
    let settled = false;
    const fail = (err: HttpError) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) {
        // Stop reading: the response to this 413 closes the connection.
        req.pause();
        fail(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    });
    req.on('error', (err: Error) => {
      if (!settled) fail(new HttpError(400, 'the request body could not be read', { cause: err }));
    });
    req.on('close', () => {
      if (!settled) fail(new HttpError(400, 'the client closed the connection before the body was complete'));
    });
  });
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, `request body is larger than the limit of ${limit} bytes`, { details: { limit } });
}

/** Decodes text by the declared charset (UTF-8 when none); 415 for a charset nobody knows. */
export function decodeText(bytes: Buffer, charset: string | undefined): string {
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') {
    const text = bytes.toString('utf8');
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    throw new HttpError(415, `unsupported charset '${charset}'`);
  }
  return decoder.decode(bytes);
}

/** The handler's data for a body of this media type. Throws 400 for malformed JSON or XML. */
export function parseBody(bytes: Buffer, media: MediaType | undefined): unknown {
  switch (bodyKind(media)) {
    case 'json':
      return parseJson(decodeText(bytes, media?.charset));
    case 'xml':
      return parseXml(decodeText(bytes, media?.charset));
    case 'text':
      return decodeText(bytes, media?.charset);
    case 'form':
      return parseForm(decodeText(bytes, media?.charset));
    default:
      return bytes;
  }
}

/** Parses JSON text; an empty or blank text is `undefined`; malformed text is a 400 saying where. */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw jsonError(text, err as Error);
  }
}

function jsonError(text: string, err: Error): HttpError {
  const position = findJsonError(text);
  const { line, column } = lineAndColumn(text, position);
  // V8's message may quote the input; keep only its reason so no body content is echoed or logged.
  const reason = err.message
    .replace(/, .* is not valid JSON$/s, '')
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .replace(/\s*\(line \d+ column \d+\)$/, '');
  return new HttpError(400, `invalid JSON at line ${line}, column ${column}: ${reason}`, {
    details: { position, line, column },
  });
}

function lineAndColumn(text: string, position: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: position - start + 1 };
}

/**
 * The offset of the first character that makes `text` invalid JSON (its length when the text
 * ends too early). Only runs after JSON.parse failed, to say where; it never decides validity.
 */
export function findJsonError(text: string): number {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const literal = (word: string) => {
    for (const ch of word) if (text[i++] !== ch) (i--, fail());
  };
  const string = () => {
    i++; // opening quote
    while (i < text.length) {
      const ch = text.charCodeAt(i);
      if (ch === 0x22) return void i++;
      if (ch < 0x20) fail();
      if (ch === 0x5c) {
        i++;
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) ((i += k), fail());
          i += 5;
        } else if ('"\\/bfnrt'.includes(text[i] ?? '!')) i++;
        else fail();
      } else i++;
    }
    fail();
  };
  const number = () => {
    const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '-') fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const ch = text[i];
    if (ch === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ':') fail();
        i++;
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    }
    if (ch === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    }
    if (ch === '"') return string();
    if (ch === 't') return literal('true');
    if (ch === 'f') return literal('false');
    if (ch === 'n') return literal('null');
    if (ch === '-' || (ch >= '0' && ch <= '9')) return number();
    fail();
  };
  try {
    value();
    ws();
    if (i < text.length) fail();
  } catch (at) {
    if (typeof at === 'number') return Math.min(at, text.length);
    throw at;
  }
  return text.length;
}

/** `application/x-www-form-urlencoded`: an object, a repeated key becomes an array. */
export function parseForm(text: string): Record<string, string | string[]> {
  return searchParamsToObject(new URLSearchParams(text));
}

/** URLSearchParams as a plain object without a prototype (so `__proto__` is just a key). */
export function searchParamsToObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of params) {
    const previous = out[key];
    if (previous === undefined) out[key] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else out[key] = [previous, value];
  }
  return out;
}

