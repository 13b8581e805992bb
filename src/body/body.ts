// Reading a request body (one reader with a byte limit) and turning bytes into the handler's
// data by media type (one short parser per kind).
import type { IncomingMessage } from 'node:http';
import { isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { HttpError, runtimeError } from '../errors';
import { parseJson } from './json';
import { bodyKind, type MediaType } from './media-type';
import type * as Xml from '../xml/xml';
import { Chunks } from './chunks';
// A header's value in a message: quoted, escaped and cut, as every echo of a client's text.
import { quoteName } from '../routing/schema';

/**
 * Most elements, attributes, comments, processing instructions and CDATA sections in one XML
 * document: xmldom spends some 10 to 20 microseconds and about 1 KB of heap per node, so this
 * keeps its longest pause of the event loop under a second and the DOM near 50 MB.
 */
export const MAX_XML_NODES = 50_000;

/**
 * Nodes left for one request: the documents of a batch's events share it, so a request holds no
 * more XML than one body may.
 */
export interface XmlBudget {
  nodes: number;
}

/** XML parsed (xml/xml.ts): its code and xmldom load with the first XML body, not at start. */
export function parseXml(text: string, budget?: XmlBudget): unknown {
  return (require('../xml/xml') as typeof Xml).parseXml(text, budget);
}

/** True when the request carries a body (a Content-Length above zero, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}

/**
 * Reads the whole body; 413 as soon as it would pass `limit` bytes, without reading further. The
 * caller has refused a declared length over the limit and a coding funcrun does not read.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // What the listeners hold until the body is settled, and then nothing: they stay on the request,
    // so that whoever keeps it (a function, a connection waiting for the rest of a body) keeps none
    // of the body; taking the three off again would cost each request some 1,500 instructions.
    let reading: Reading | undefined = { chunks: new Chunks(), resolve, reject };
    const onData = (chunk: Buffer) => {
      const read = reading;
      if (read === undefined) return;
      if (read.chunks.size + chunk.length > limit) {
        // Stop reading: the response to this 413 closes the connection.
        reading = undefined;
        req.pause();
        req.removeListener('data', onData);
        read.reject(tooLarge(limit, 'bodyLimit'));
        return;
      }
      read.chunks.add(chunk);
    };
    const onEnd = () => {
      const read = reading;
      if (read === undefined) return;
      reading = undefined;
      read.resolve(read.chunks.bytes());
    };
    // No 'error' listener: node emits a request's 'error' only to listeners, and 'close' follows
    // every failure (an abort, malformed chunked framing) as it follows the end.
    const onClose = () => {
      const read = reading;
      if (read === undefined) return;
      reading = undefined;
      read.reject(bodyIncomplete());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
  });
}

/** A body being read (readBody()): its chunks so far, and its promise's ends. */
interface Reading {
  readonly chunks: Chunks;
  readonly resolve: (body: Buffer) => void;
  readonly reject: (err: Error) => void;
}

/** The error for a body sent in a coding funcrun does not read, if it is. */
export function refusedCoding(req: IncomingMessage): HttpError | undefined {
  // node de-chunks; any other transfer coding (`gzip, chunked`) would reach the function still coded.
  const coding = req.headers['transfer-encoding'];
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return runtimeError(
      'FUNCRUN_TRANSFER_ENCODING',
      `Transfer-Encoding '${coding.slice(0, 40)}' is not supported; send the body chunked or with a Content-Length`,
    );
  }
  return refusedEncoding(req.headers['content-encoding']);
}

/** The 415 for a compressed body (a Content-Encoding other than identity), or undefined. */
export function refusedEncoding(encoding: string | undefined | null): HttpError | undefined {
  if (encoding === undefined || encoding === null || encoding.toLowerCase() === 'identity') return undefined;
  return runtimeError('FUNCRUN_CONTENT_ENCODING', `Content-Encoding ${quoteName(encoding)} is not supported; send the body uncompressed`);
}

/** The 400 for a body the client went away before sending whole: logged at debug, as every 4xx. */
export function bodyIncomplete(): HttpError {
  return runtimeError('FUNCRUN_BODY_INCOMPLETE', 'the client closed the connection before the body was complete');
}

/** The 413 for a body over its limit, naming the setting that sets it. */
export function tooLarge(limit: number, setting: string): HttpError {
  return runtimeError('FUNCRUN_BODY_TOO_LARGE', `request body is larger than the limit of ${limit} bytes (${setting})`, { details: { limit, setting } });
}

/**
 * Decodes text by the declared charset (UTF-8 when none). Bytes that are not valid in that
 * charset are a 400, never silently replaced; a charset nobody knows is a 415.
 */
export function decodeText(bytes: Buffer, charset: string | undefined): string {
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') {
    // isUtf8 is a single validating pass in C++; toString then decodes without replacements.
    if (!isUtf8(bytes)) throw runtimeError('FUNCRUN_INVALID_TEXT', 'the body is not valid UTF-8');
    const text = bytes.toString('utf8');
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    throw runtimeError('FUNCRUN_UNSUPPORTED_CHARSET', `unsupported charset ${quoteName(charset)}`);
  }
  try {
    return decoder.decode(bytes);
  } catch {
    throw runtimeError('FUNCRUN_INVALID_TEXT', `the body is not valid ${charset}`);
  }
}

// An XML declaration's encoding, in the document's first bytes (ASCII in every encoding it can name).
const XML_DECLARATION = /^<\?xml[^>]{0,200}?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]{0,40})["']/;

/**
 * The encoding an XML document without a `charset` parameter says it is in (RFC 7303 section 3.2
 * lets the parameter win): its byte order mark, else its declaration's `encoding`, else UTF-8.
 */
function xmlEncoding(bytes: Buffer): string | undefined {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  if (bytes[0] !== 0x3c) return undefined;
  return XML_DECLARATION.exec(bytes.toString('latin1', 0, 256))?.[1].toLowerCase();
}

/** The handler's data for a body of this media type. Throws 400 for malformed JSON or XML. */
export function parseBody(bytes: Buffer, media: MediaType | undefined): unknown {
  switch (bodyKind(media)) {
    case 'json':
      return parseJson(decodeText(bytes, media?.charset));
    case 'xml':
      // An empty XML body has no document; like an empty JSON body, it is no data.
      return bytes.length === 0 ? undefined : parseXml(decodeText(bytes, media?.charset ?? xmlEncoding(bytes)));
    case 'text':
      return decodeText(bytes, media?.charset);
    case 'form':
      return parseForm(escapedUtf8(decodeText(bytes, media?.charset)));
    default:
      // An empty multipart body has no fields, as an empty form has none (a multipart body with
      // bytes is read apart, as it arrives: multipart.ts).
      return bytes.length === 0 && media?.type === 'multipart/form-data' ? {} : bytes;
  }
}

// faas-js-runtime's parsers (fastify's JSON and text ones, its own for forms); any other body
// reaches its functions as bytes.
const FASTIFY_PARSED = new Set(['application/json', 'text/plain', 'application/x-www-form-urlencoded']);

/**
 * The media type a body is parsed as in faas-js-runtime compatibility: its own where fastify has a
 * parser for it, else none (the bytes). An empty `application/json` body is refused as fastify
 * refuses it, with its code.
 */
export function fastifyParsing(media: MediaType | undefined, bytes: Buffer | undefined): MediaType | undefined {
  if (media === undefined || !FASTIFY_PARSED.has(media.type)) return undefined;
  if (media.type === 'application/json' && bytes?.length === 0) {
    throw new HttpError(400, "Body cannot be empty when content-type is set to 'application/json'", { details: { code: 'FST_ERR_CTP_EMPTY_JSON_BODY' } });
  }
  return media;
}

/**
 * The body as `context.rawBody` holds it: text (as faas-js-runtime gives it) for textual media
 * types, which were checked to be valid in their charset; the bytes for anything else, which text
 * would corrupt.
 */
export function rawBodyOf(bytes: Buffer, media: MediaType | undefined): string | Buffer {
  return bodyKind(media) === 'binary' ? bytes : decodeText(bytes, media?.charset);
}

/** `application/x-www-form-urlencoded`: an object, a repeated key becomes an array. */
/**
 * A form's text, whose escapes decode to UTF-8: `%ff` would be U+FFFD to URLSearchParams, the
 * silent replacement a body's text never gets (a 400, as bytes that are not UTF-8 are). A UTF-8
 * sequence escaped is a run of escapes: each run is checked, in one pass.
 */
function escapedUtf8(text: string): string {
  for (let i = text.indexOf('%'); i !== -1;) {
    const bytes: number[] = [];
    let j = i;
    for (let byte = escapedByte(text, j); byte !== -1; byte = escapedByte(text, j)) {
      bytes.push(byte);
      j += 3;
    }
    if (bytes.length > 0 && !isUtf8(Buffer.from(bytes))) throw runtimeError('FUNCRUN_INVALID_TEXT', 'the form is not valid UTF-8 once its escapes are decoded');
    i = text.indexOf('%', Math.max(j, i + 1));
  }
  return text;
}

/** The byte `%XX` at `at` stands for, or -1. */
function escapedByte(text: string, at: number): number {
  if (text.charCodeAt(at) !== 0x25) return -1;
  const byte = parseInt(text.slice(at + 1, at + 3), 16);
  return /^[0-9a-fA-F]{2}$/.test(text.slice(at + 1, at + 3)) ? byte : -1;
}

export function parseForm(text: string): Record<string, string | string[]> {
  return searchParamsToObject(formParams(text));
}

// Below this length the quadratic term of node's parser (formParams()) is some microseconds.
const SHORT_FORM = 4096;

/**
 * The fields of a form or query string. node's URLSearchParams takes time quadratic in the number
 * of fields that have no `=` (`a&b&c...`: seconds for a 1 MiB body), so in a long text each such
 * field gets its `=` first: the same fields, since a name alone has the value ''.
 */
export function formParams(text: string): URLSearchParams {
  if (text.length <= SHORT_FORM) return new URLSearchParams(text);
  const fields = text.split('&');
  for (let i = 0; i < fields.length; i++) if (fields[i] !== '' && !fields[i].includes('=')) fields[i] += '=';
  return new URLSearchParams(fields.join('&'));
}

/**
 * URLSearchParams as an ordinary object, as faas-js-runtime gives it (so `hasOwnProperty` and
 * friends work). Keys are own data properties: `__proto__` is just a key, never the prototype, and
 * `constructor` or `toString` never find the inherited function.
 */
export function searchParamsToObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of params) addField(out, key, value);
  return out;
}

/** Adds a form field to `out`: a repeated name becomes an array; `__proto__` is a key like any other. */
export function addField(out: Record<string, string | string[]>, key: string, value: string): void {
  if (!Object.hasOwn(out, key)) {
    if (key === '__proto__') Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
    else out[key] = value;
    return;
  }
  const previous = out[key];
  if (Array.isArray(previous)) previous.push(value);
  else out[key] = [previous, value];
}
