// Writing a returned CloudEvent back: binary mode (attributes as `ce-*` headers, data as the
// body), structured, or a batch, the shapes the SDK's HTTP binding gives a message.
import { BATCH, MADE, STRUCTURED_UTF8, type Made, type Mode } from './cloudevent';
import { bodyKind, parseMediaType } from '../body/media-type';
import type { CloudEvent } from 'cloudevents';
import type { Trace } from '../telemetry/trace';
import { JSON_TYPE } from '../send';

export interface EncodedEvent {
  headers: Record<string, string>;
  body: string | Buffer | undefined;
}

/**
 * An event as an HTTP message in the given mode. With a trace, an event that has no
 * `traceparent` of its own carries the invocation's (the distributed tracing extension).
 * `asSdk`: binary mode as the SDK's `HTTP.binary` writes it (faas-js-runtime's answers).
 */
export function encodeEvent(event: CloudEvent<unknown> | CloudEvent<unknown>[], mode: Mode, trace?: Trace, asSdk = false): EncodedEvent {
  if (Array.isArray(event)) {
    return { headers: { 'content-type': `${BATCH}; charset=utf-8` }, body: JSON.stringify(event.map((e) => structuredJson(e, trace))) };
  }
  const headers = mode === 'binary' ? binaryHeaders(event, trace) : undefined;
  // An event binary mode cannot carry (a datacontenttype that is no media type, or attributes
  // past a header block's size, as an event that came structured may have) goes structured.
  if (headers === undefined) return { headers: { 'content-type': STRUCTURED_UTF8 }, body: JSON.stringify(structuredJson(event, trace)) };
  const { data } = event;
  if (asSdk) return sdkBinary(headers, data);
  if (data === undefined || data === null) {
    delete headers['content-type'];
    return { headers, body: undefined };
  }
  if (ArrayBuffer.isView(data)) {
    headers['content-type'] ??= 'application/octet-stream';
    const view = data as ArrayBufferView;
    return { headers, body: Buffer.from(view.buffer, view.byteOffset, view.byteLength) };
  }
  const type = (headers['content-type'] ??= JSON_MEDIA);
  const kind = type === JSON_MEDIA ? 'json' : bodyKind(parseMediaType(type));
  if (typeof data === 'string' && kind !== 'json') return { headers, body: data };
  if (kind === 'xml' && typeof (data as { nodeType?: unknown }).nodeType === 'number') {
    return { headers, body: String(data) };
  }
  const json = JSON.stringify(data);
  // Data JSON has no text for (a function, a Symbol, a toJSON() that gives undefined) is no data, as null is.
  if (json === undefined) {
    delete headers['content-type'];
    return { headers, body: undefined };
  }
  return { headers, body: json };
}

/**
 * The SDK's binary body: JSON for objects (`null` too), bytes as they are, any other value as its
 * text, under the event's datacontenttype or `application/json; charset=utf-8` (with no data too).
 */
function sdkBinary(headers: Record<string, string>, data: unknown): EncodedEvent {
  headers['content-type'] ??= JSON_TYPE;
  if (data === undefined) return { headers, body: undefined };
  if (ArrayBuffer.isView(data)) return { headers, body: Buffer.from(data.buffer, data.byteOffset, data.byteLength) };
  if (typeof data === 'string') return { headers, body: data };
  if (
    typeof data === 'object' &&
    typeof (data as { nodeType?: unknown }).nodeType === 'number' &&
    bodyKind(parseMediaType(headers['content-type'])) === 'xml'
  ) {
    return { headers, body: String(data) };
  }
  return { headers, body: JSON.stringify(data) ?? 'null' };
}

/**
 * An event in the JSON format, as it is: the SDK's own encoder would re-validate it (refusing a
 * leap second or a 0.3 attribute it let in) and reformat or invent `time`. Binary data goes out
 * as `data_base64`.
 */
function structuredJson(event: CloudEvent<unknown>, trace: Trace | undefined): Record<string, unknown> {
  const json: Record<string, unknown> = {};
  const attributes = event as unknown as Record<string, unknown>;
  for (const name of Object.keys(attributes)) {
    const value = attributes[name];
    if (value !== undefined) json[name] = value instanceof Date ? value.toISOString() : value;
  }
  if (trace !== undefined && json.traceparent === undefined) {
    json.traceparent = trace.traceparent;
    if (trace.traceState !== undefined && json.tracestate === undefined) json.tracestate = trace.traceState;
  }
  if (json.data_base64 === undefined && ArrayBuffer.isView(json.data)) {
    const view = json.data as ArrayBufferView;
    json.data_base64 = Buffer.from(view.buffer, view.byteOffset, view.byteLength).toString('base64');
  }
  if (json.data_base64 !== undefined) delete json.data;
  return json;
}

/**
 * Binary mode's headers (HTTP binding 3.1.3): each attribute as `ce-<name>`, datacontenttype as
 * Content-Type. Values are percent-encoded outside printable ASCII, and `"` and `%`, as the
 * binding says (the SDK's encoder sends them raw, which node refuses for non-ASCII).
 */
function binaryHeaders(event: CloudEvent<unknown>, trace: Trace | undefined): Record<string, string> | undefined {
  const e = event as unknown as Record<string, unknown> & Partial<Made>;
  const block: Block = { size: 0, encode: false };
  const headers = contextHeaders(e, block);
  if (headers === undefined || !putExtensions(headers, e, block)) return undefined;
  // The invocation's trace, for an event without one of its own: attributes like any other, last.
  if (trace !== undefined && e.traceparent === undefined) {
    if (!put(headers, 'ce-traceparent', trace.traceparent, block)) return undefined;
    if (e.tracestate === undefined && !put(headers, 'ce-tracestate', trace.traceState, block)) return undefined;
  }
  return block.encode ? encodeValues(headers, block.size) : headers;
}

/**
 * The context attributes' headers, in the order the SDK's CloudEvent sets them; undefined when
 * binary mode cannot carry them. Each attribute is read, and its header written, by its name:
 * through an inline cache of its own, where a computed name (a loop over the event's keys, or a
 * helper given the header) cost a megamorphic lookup each, some 2,000 instructions an answer.
 */
function contextHeaders(e: Record<string, unknown> & Partial<Made>, block: Block): Record<string, string> | undefined {
  // Looking for what to encode costs per character: what the response chain wrote itself (its
  // time and specversion, its id unless the function gave one) is known to need none.
  const made = e[MADE];
  const id = text(e.id, 'ce-id', block, made === 'id');
  const time = text(e.time, 'ce-time', block, made !== undefined);
  const type = text(e.type, 'ce-type', block, false);
  const source = text(e.source, 'ce-source', block, false);
  const specversion = text(e.specversion, 'ce-specversion', block, made !== undefined);
  const contentType = mediaType(e.datacontenttype, block);
  const subject = text(e.subject, 'ce-subject', block, false);
  const encoding = text(e.datacontentencoding, 'ce-datacontentencoding', block, false);
  const dataschema = text(e.dataschema, 'ce-dataschema', block, false);
  const schemaurl = text(e.schemaurl, 'ce-schemaurl', block, false);
  if (contentType === null || block.size > MAX_BINARY_HEADERS) return undefined;
  const headers: Record<string, string> = {};
  if (id !== undefined) headers['ce-id'] = id;
  if (time !== undefined) headers['ce-time'] = time;
  if (type !== undefined) headers['ce-type'] = type;
  if (source !== undefined) headers['ce-source'] = source;
  if (specversion !== undefined) headers['ce-specversion'] = specversion;
  if (contentType !== undefined) headers['content-type'] = contentType;
  if (subject !== undefined) headers['ce-subject'] = subject;
  if (encoding !== undefined) headers['ce-datacontentencoding'] = encoding;
  if (dataschema !== undefined) headers['ce-dataschema'] = dataschema;
  if (schemaurl !== undefined) headers['ce-schemaurl'] = schemaurl;
  return headers;
}

/** The header block so far: its size in bytes as sent, and whether a value in it needs encoding. */
interface Block {
  size: number;
  encode: boolean;
}

/** Extension attributes: the event's keys that are not the context attributes put above. */
function putExtensions(headers: Record<string, string>, e: Record<string, unknown>, block: Block): boolean {
  for (const name of Object.keys(e)) {
    switch (name) {
      case 'id':
      case 'time':
      case 'type':
      case 'source':
      case 'specversion':
      case 'datacontenttype':
      case 'subject':
      case 'datacontentencoding':
      case 'dataschema':
      case 'schemaurl':
      case 'data':
      case 'data_base64':
        continue;
    }
    if (!put(headers, HEADER_NAMES[name] ?? `ce-${name}`, e[name], block)) return false;
  }
  return true;
}

/**
 * One attribute's header value, as it is (undefined for an absent one), counted in the block.
 * `known`: a value funcrun wrote, which needs no encoding.
 */
function text(value: unknown, header: string, block: Block, known: boolean): string | undefined {
  if (value === undefined || value === null) return undefined;
  const written = typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : String(value);
  // `name: value` and CRLF. Encoding only lengthens a value: a block too long as it is goes structured without being encoded.
  block.size += header.length + written.length + 4;
  // Once one value needs encoding, encodeValues() looks at every one.
  if (!known && !block.encode && block.size <= MAX_BINARY_HEADERS) block.encode = ENCODED.test(written);
  return written;
}

/**
 * An extension's or the trace's header; false when binary mode cannot carry it. Each value is looked
 * at for what to encode: extensions are the function's, and the trace's state is the caller's.
 */
function put(headers: Record<string, string>, header: string, value: unknown, block: Block): boolean {
  const written = text(value, header, block, false);
  if (written !== undefined) headers[header] = written;
  return block.size <= MAX_BINARY_HEADERS;
}

/** datacontenttype, as Content-Type and never encoded: undefined when absent, null for one that is no media type. */
function mediaType(value: unknown, block: Block): string | null | undefined {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value : String(value);
  block.size += 'content-type'.length + text.length + 4;
  // funcrun's own default needs no parse.
  if (text !== JSON_MEDIA && (block.size > MAX_BINARY_HEADERS || !PRINTABLE.test(text) || parseMediaType(text) === undefined)) return null;
  return text;
}

/**
 * The `ce-*` values percent-encoded where they need it; undefined when the block grows past its
 * limit, or for a value with a lone surrogate, which has no UTF-8 to encode (structured JSON
 * escapes it).
 */
function encodeValues(headers: Record<string, string>, size: number): Record<string, string> | undefined {
  for (const name of Object.keys(headers)) {
    const text = headers[name];
    if (name === 'content-type' || !ENCODED.test(text)) continue;
    if (LONE_SURROGATE.test(text)) return undefined;
    const encoded = text.replace(ENCODED_ALL, (c) => encodeURIComponent(c).replace(/'/g, '%27'));
    size += encoded.length - text.length;
    if (size > MAX_BINARY_HEADERS) return undefined;
    headers[name] = encoded;
  }
  return headers;
}

const JSON_MEDIA = 'application/json';

// What binary mode percent-encodes in a value: anything outside printable ASCII but space, `"` and
// `%`. One class (the printable characters but those two, negated): a class and an alternative
// cost twice as much per character.
const ENCODED = /[^!#$&-~]/;
const ENCODED_ALL = /[^\x21-\x7e]|["%]/gu;
// A surrogate not in a pair (in a u-mode class a pair is one character, never matched).
const LONE_SURROGATE = /\p{Cs}/u;
// A header value a media type can be: printable ASCII only (no CR, LF or NUL).
const PRINTABLE = /^[\x20-\x7e]*$/;
// The header of the common extensions, made once rather than per answer.
const HEADER_NAMES: Record<string, string> = Object.create(null);
for (const name of ['traceparent', 'tracestate']) HEADER_NAMES[name] = `ce-${name}`;

// node's default limit on a head (its http client's and fetch's too) is 16 KiB, the status line
// and every header: the event's headers get 15 KiB, the rest (Content-Length, Date, Connection,
// Keep-Alive, headers of the function's own) the last one.
const MAX_BINARY_HEADERS = 15 * 1024;
