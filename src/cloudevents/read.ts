// Reading an incoming CloudEvent strictly, in binary, structured or batch mode. Events are the
// SDK's own objects; what the SDK leaves loose on the way in (it invents a missing id, and accepts
// any time) is checked here first, so a bad event gets a 400 naming the attribute instead of
// made-up values.
import type { CloudEvent } from 'cloudevents';
import { BATCH, isUriReference, isSpecVersion, loadedSdk, reservedNames, STRUCTURED, URI_REFERENCE, type EventHeaders, type Mode } from './cloudevent';
import { HttpError, runtimeError } from '../errors';
import { bodyKind, parseMediaType, type MediaType } from '../body/media-type';
import { decodeText, fastifyParsing, MAX_XML_NODES, parseBody, parseForm, parseXml, type XmlBudget } from '../body/body';
import { parseJson } from '../body/json';
import { decodeComponent } from '../routing/router';
import { quoteName } from '../routing/schema';

/**
 * Reads the event (or, in batch mode, the events) a request carries, from its headers (lowercase
 * names: node's request's, or a WHATWG Request's as web.ts copies them) and its body's bytes.
 * Throws 400 or 415. `reading`: how the data is read (below).
 */
export function readEvent(
  mode: Mode,
  headers: EventHeaders,
  body: Buffer | undefined,
  media: MediaType | undefined,
  reading: DataReading = BY_CONTENT_TYPE,
): CloudEvent<unknown> | CloudEvent<unknown>[] {
  if (mode === 'binary') return binaryEvent(headers, body, media, reading);
  if (media?.type !== (mode === 'batch' ? BATCH : STRUCTURED)) {
    throw runtimeError('FUNCRUN_UNSUPPORTED_EVENT_FORMAT', `unsupported CloudEvents format '${media?.type}': expected ${STRUCTURED} or ${BATCH}`);
  }
  const json = body === undefined ? undefined : parseJson(decodeText(body, media.charset));
  if (mode === 'structured') {
    if (!isPlainObject(json)) throw invalid('a structured CloudEvent must be a JSON object');
    return eventFromJson(json, '', { nodes: MAX_XML_NODES }, reading);
  }
  if (!Array.isArray(json)) throw invalid('a CloudEvents batch must be a JSON array');
  // The batch's XML documents share one node budget: together no more than one XML body may hold.
  const budget = { nodes: MAX_XML_NODES };
  return json.map((item, index) => {
    if (!isPlainObject(item)) throw invalid(`event [${index}] of the batch is not a JSON object`);
    return eventFromJson(item, `event [${index}]: `, budget, reading);
  });
}

/**
 * How an event's data is read: by its content type (the function contract's data dispatch), or
 * as faas-js-runtime reads it (`asFaasJsRuntime`): binary data parsed only where fastify parses a
 * body (JSON, text, forms; anything else is bytes), structured data as the JSON holds it, and
 * `data_base64` as a Uint8Array.
 */
export interface DataReading {
  readonly asFaasJsRuntime: boolean;
}

const BY_CONTENT_TYPE: DataReading = Object.freeze({ asFaasJsRuntime: false });

/** Two Content-Type values naming the same media type with the same parameters. */
function sameMediaType(a: string, b: string | undefined): boolean {
  const x = parseMediaType(a);
  const y = parseMediaType(b);
  if (x === undefined || y === undefined || x.type !== y.type) return false;
  const keys = Object.keys(x.params);
  return keys.length === Object.keys(y.params).length && keys.every((k) => x.params[k] === y.params[k] || (k === 'charset' && x.charset === y.charset));
}

// The attribute each common `ce-*` header carries, so that reading them makes no new strings.
const HEADER_ATTRIBUTES: Record<string, string> = Object.assign(Object.create(null), {
  'ce-id': 'id',
  'ce-source': 'source',
  'ce-type': 'type',
  'ce-specversion': 'specversion',
  'ce-time': 'time',
  'ce-subject': 'subject',
  'ce-dataschema': 'dataschema',
  'ce-traceparent': 'traceparent',
  'ce-tracestate': 'tracestate',
});

function binaryEvent(headers: EventHeaders, body: Buffer | undefined, media: MediaType | undefined, reading: DataReading): CloudEvent<unknown> {
  // The attributes are written on the event itself, then checked (checkAttributes()) and frozen
  // (withData()): copying them to it cost more than reading them. A name the event's prototype
  // chain has (`__proto__`, a method such as `validate`) is defined as an own attribute, never set
  // through the chain, and refused by its name in checkAttributes().
  const { ReceivedEvent, reserved } = loadedSdk();
  const event = Object.create(ReceivedEvent.prototype) as Record<string, unknown>;
  for (const name in headers) {
    if (name.charCodeAt(0) !== 0x63 || !name.startsWith('ce-')) continue;
    // In binary mode datacontenttype is the Content-Type header (HTTP binding 3.1.1). Clients
    // that send both (faas-js-runtime's suite does) are accepted when the two agree; one that
    // disagrees, or a percent-decoded value holding what no header may (CR LF), is refused.
    if (name === 'ce-datacontenttype') {
      if (sameMediaType(decodeComponent(String(headers[name])), headers['content-type'])) continue;
      throw invalid('in binary mode datacontenttype is the Content-Type header: ce-datacontenttype disagrees with it', 'datacontenttype');
    }
    // Values are percent-encoded outside printable ASCII (HTTP binding 3.1.3.2).
    const attribute = HEADER_ATTRIBUTES[name] ?? name.slice(3);
    const value = decodeComponent(utf8Of(String(headers[name])));
    if (reserved.has(attribute)) Object.defineProperty(event, attribute, { value, enumerable: true, writable: true, configurable: true });
    else event[attribute] = value;
  }
  const contentType = headers['content-type'];
  if (contentType !== undefined) event.datacontenttype = contentType;
  let data: unknown;
  if (body !== undefined) {
    try {
      data = parseBody(body, reading.asFaasJsRuntime ? fastifyParsing(media, body) : media);
    } catch (err) {
      throw dataError(err, '');
    }
  }
  checkAttributes(event, '', reserved);
  return withData(event, data);
}

// A header value as node (and a WHATWG Headers) hands it: one character per byte, Latin-1.
const BEYOND_ASCII = /[^\x00-\x7f]/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A `ce-*` value a sender wrote as raw UTF-8 rather than percent-encoded (which the HTTP binding
 * asks for) read as the UTF-8 it is, not as the Latin-1 characters of its bytes: the attribute the
 * sender meant. Bytes that are not UTF-8 stay as node read them.
 */
function utf8Of(value: string): string {
  if (!BEYOND_ASCII.test(value)) return value;
  try {
    return UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

function eventFromJson(json: Record<string, unknown>, where: string, budget: XmlBudget, reading: DataReading): CloudEvent<unknown> {
  const { data, data_base64: base64, ...attributes } = json;
  if (data !== undefined && base64 !== undefined) throw invalid(`${where}an event has either 'data' or 'data_base64', not both`, 'data_base64');
  let value: unknown;
  if (base64 !== undefined) {
    const bytes = decodeBase64(base64, `${where}attribute 'data_base64'`, 'data_base64');
    // A copy, so that the array's buffer holds these bytes only (a Buffer's may be a shared pool).
    value = reading.asFaasJsRuntime ? new Uint8Array(bytes) : bytes;
  } else if (data !== undefined) {
    try {
      // CloudEvents 0.3 carried binary data as a base64 string with `datacontentencoding: base64`.
      value =
        attributes.specversion === '0.3' && attributes.datacontentencoding === 'base64'
          ? decodeBase64(data, `${where}'data' with datacontentencoding base64`, 'data')
          : reading.asFaasJsRuntime
            ? data
            : structuredData(data, attributes.datacontenttype, budget);
    } catch (err) {
      throw dataError(err, where);
    }
  }
  // Checked before they are copied to an event: a `__proto__` member would set its prototype.
  const { ReceivedEvent, reserved } = loadedSdk();
  checkAttributes(attributes, where, reserved);
  return withData(Object.assign(Object.create(ReceivedEvent.prototype), attributes) as Record<string, unknown>, value);
}

/**
 * Strict base64 (RFC 4648, the standard alphabet): whitespace between characters is allowed,
 * padding optional but only at the end, and a length that cannot encode whole bytes is refused.
 * One pass over the text: no regex that could backtrack on a long run of whitespace.
 */
export function decodeBase64(text: unknown, what: string, attribute: string): Buffer {
  if (typeof text !== 'string') throw invalid(`${what} must be base64 text`, attribute);
  let count = 0;
  let padding = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) continue;
    if (c === 0x3d) {
      padding++;
      continue;
    }
    const alphabet = (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f;
    if (!alphabet || padding > 0) throw invalid(`${what} must be base64 text`, attribute);
    count++;
  }
  if (padding > 2 || count % 4 === 1 || (padding > 0 && (count + padding) % 4 !== 0)) {
    throw invalid(`${what} has an invalid length for base64`, attribute);
  }
  return Buffer.from(text, 'base64');
}

// In structured mode JSON data is already a value; other types arrive as JSON strings.
function structuredData(data: unknown, contentType: unknown, budget: XmlBudget): unknown {
  const media = typeof contentType === 'string' ? parseMediaType(contentType) : undefined;
  if (typeof data !== 'string' || media === undefined) return data;
  switch (bodyKind(media)) {
    case 'xml':
      return parseXml(data, budget);
    case 'form':
      return parseForm(data);
    case 'binary':
      return Buffer.from(data);
    default:
      return data;
  }
}

// Anchored, every quantifier over a distinct character class: linear on any input.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** An RFC 3339 date-time that names a real instant: `2020-02-30T00:00:00Z` does not. */
export function isTimestamp(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const m = RFC3339.exec(value);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
  // Second 60 is a leap second, which RFC 3339 allows.
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 60 && offsetOk;
}
const ATTRIBUTE_NAME = /^[a-z0-9]+$/;
const REQUIRED = ['id', 'source', 'type'] as const;
// RFC 3986: an absolute URI (a URI reference, the source, is checked with URI_REFERENCE).
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * Checks an incoming event's attributes: the SDK would invent or accept what this refuses. The
 * event is then made of them without the SDK's constructor (withData()), which would add a `time`
 * the sender never set, and validate again what is checked here. `reserved`: the names of the
 * event's methods (loadedSdk()).
 */
function checkAttributes(attributes: Record<string, unknown>, where: string, reserved: ReadonlySet<string>): void {
  const { specversion } = attributes;
  if (specversion === undefined) throw invalid(`${where}missing required attribute 'specversion'`, 'specversion');
  if (!isSpecVersion(specversion)) {
    throw invalid(`${where}unsupported 'specversion' ${JSON.stringify(specversion)}: expected 1.0 or 0.3`, 'specversion');
  }
  for (const name of REQUIRED) {
    const value = attributes[name];
    if (value === undefined) throw invalid(`${where}missing required attribute '${name}'`, name);
    if (typeof value !== 'string' || value === '') throw invalid(`${where}attribute '${name}' must be a non-empty string`, name);
  }
  if (!isUriReference(attributes.source as string)) throw invalid(`${where}attribute 'source' must be a URI reference`, 'source');
  for (const name in attributes) {
    const value = attributes[name];
    switch (name) {
      case 'data':
        // Data travels in the body (binary) or the data members (structured), never as an attribute.
        throw invalid(`${where}'${name}' is not a context attribute`, name);
      case 'id':
      case 'source':
      case 'type':
      case 'specversion':
        break;
      case 'time':
        if (!isTimestamp(value)) {
          throw invalid(`${where}attribute 'time' must be an RFC 3339 timestamp`, 'time');
        }
        break;
      case 'dataschema':
      case 'schemaurl':
        if (typeof value !== 'string' || !ABSOLUTE_URI.test(value) || !URI_REFERENCE.test(value))
          throw invalid(`${where}attribute '${name}' must be a URI`, name);
        break;
      case 'datacontenttype':
      case 'subject':
        if (typeof value !== 'string' || value === '') throw invalid(`${where}attribute '${name}' must be a non-empty string`, name);
        break;
      default:
        // The name is the sender's, of any length and any characters: quoted cut and escaped, in the message and the details.
        if (!ATTRIBUTE_NAME.test(name)) {
          throw invalid(`${where}invalid attribute name ${quoteName(name)}: only a-z and 0-9 are allowed`, quoteName(name).slice(1, -1));
        }
        // An attribute named like a method of the event (`validate`, `emit`, `constructor`) would
        // hide that method on `context.cloudevent`.
        if (reserved.has(name)) throw invalid(`${where}'${name}' is reserved: it names a method of the event`, name);
        // Extension attributes take the CloudEvents type system's scalar values.
        if (typeof value !== 'string' && typeof value !== 'boolean' && !isInt32(value)) {
          throw invalid(`${where}extension attribute ${quoteName(name)} must be a string, a 32-bit integer or a boolean`, quoteName(name).slice(1, -1));
        }
    }
  }
}

/**
 * Why an event a function answers with would be refused as one received is (eventResponse()):
 * its attributes (a Date `time` as its text) under the same checks, or undefined when it passes.
 */
export function outgoingProblem(event: Record<string, unknown>): string | undefined {
  const attributes: Record<string, unknown> = {};
  for (const name of Object.keys(event)) {
    if (name === 'data' || name === 'data_base64') continue;
    const value = event[name];
    attributes[name] = value instanceof Date ? value.toISOString() : value;
  }
  try {
    checkAttributes(attributes, '', reservedNames());
    return undefined;
  } catch (err) {
    return err instanceof HttpError ? err.message.replace(/^invalid CloudEvent: /, '') : String(err);
  }
}

/** The checked event with its data, frozen: the SDK's CloudEvent as a function receives it. */
function withData(event: Record<string, unknown>, data: unknown): CloudEvent<unknown> {
  if (data !== undefined) {
    event.data = data;
    if (data instanceof Uint8Array) event.data_base64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
  }
  return Object.freeze(event) as unknown as CloudEvent<unknown>;
}

function isInt32(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX;
}

function invalid(message: string, attribute?: string): HttpError {
  return runtimeError('FUNCRUN_INVALID_EVENT', `invalid CloudEvent: ${message}`, attribute ? { details: { attribute } } : undefined);
}

function dataError(err: unknown, where: string): unknown {
  if (!(err instanceof HttpError) || err.statusCode !== 400) return err;
  return runtimeError('FUNCRUN_INVALID_EVENT', `invalid CloudEvent: ${where}data: ${err.message}`, { details: { attribute: 'data', ...err.details } });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
