// CloudEvents for fetch handlers: the event a WHATWG Request carries, read by the same code and
// with the same checks and errors as a `handle` function's (read.ts), and a Response carrying an
// event, written as funcrun writes the events a function returns (reply.ts). Nothing here runs at
// start: the WHATWG globals and the SDK are reached on first use.
import type { CloudEvent } from 'cloudevents';
import { BATCH, detectMode, isUriReference, isSpecVersion, writtenMode, type EventHeaders, type Mode } from './cloudevent';
import { outgoingProblem, readEvent as readFrom } from './read';
import { encodeEvent } from './reply';
import { refusedEncoding } from '../body/body';
import { parseMediaType, type MediaType } from '../body/media-type';
import { runtimeError } from '../errors';
import { emptyBody } from '../input';
import { randomUUID } from '../util/random';
import { answerMode, invocationAdmitted, invocationTrace } from '../context';
import { currentInvocation } from '../log/scope';

/**
 * The event a request carries, in binary or structured mode, checked as a `handle` function's
 * event is. A request that carries no event, a malformed one, or a batch: funcrun's HttpError,
 * answered (when not caught) with the JSON 400 or 415 and the code a `handle` function's client gets.
 */
export async function readEvent(request: Request): Promise<CloudEvent<unknown>> {
  const events = await read(request, false);
  return events as CloudEvent<unknown>;
}

/** The events a request carries: a batch's, or a single event as one element. */
export async function readEvents(request: Request): Promise<CloudEvent<unknown>[]> {
  const events = await read(request, true);
  return Array.isArray(events) ? events : [events];
}

// On the Request a fetch handler is handed after its events were admitted (fetch/events.ts): those
// events, as their contracts gave them, read without parsing the body again.
const ADMITTED = Symbol('funcrun admitted events');
type Admitted = CloudEvent<unknown> | CloudEvent<unknown>[];

/** Marks `request` as carrying `events`, admitted already: readEvent() and readEvents() give them. */
export function withAdmittedEvents(request: Request, events: Admitted): Request {
  (request as Request & { [ADMITTED]?: Admitted })[ADMITTED] = events;
  return request;
}

async function read(request: Request, batch: boolean): Promise<CloudEvent<unknown> | CloudEvent<unknown>[]> {
  const admitted = (request as Request & { [ADMITTED]?: Admitted })[ADMITTED] ?? admittedForCopy(request);
  if (admitted !== undefined) {
    if (Array.isArray(admitted) && !batch) throw notOne();
    return admitted;
  }
  const headers = headersOf(request.headers);
  const media = parseMediaType(headers['content-type']);
  const mode = detectMode(headers, media);
  if (mode === undefined) {
    throw runtimeError(
      'FUNCRUN_EVENT_REQUIRED',
      'this endpoint takes a CloudEvent: binary (ce-specversion, ce-id, ce-source, ce-type headers) or structured (application/cloudevents+json)',
    );
  }
  if (mode === 'batch' && !batch) throw notOne();
  const refused = refusedEncoding(request.headers.get('content-encoding'));
  if (refused !== undefined) throw refused;
  return readFrom(mode, headers, await bodyOf(request, media), media);
}

/**
 * The events admitted for the invocation that runs, when `request` is a copy of the Request it was
 * handed (the same method and URL: a middleware's `new Request(request, { body })`, a clone): the
 * events as their contracts gave them, claimed already, not the body read again.
 */
function admittedForCopy(request: Request): Admitted | undefined {
  const ctx = currentInvocation()?.context;
  const admitted = ctx === undefined ? undefined : invocationAdmitted(ctx);
  return admitted !== undefined && admitted.method === request.method && admitted.url === request.url ? admitted.events : undefined;
}

function notOne(): Error {
  return runtimeError('FUNCRUN_UNSUPPORTED_EVENT_FORMAT', `this endpoint takes one CloudEvent, not a batch (${BATCH})`);
}

/**
 * The body's bytes, read once (the fetch handler's body stream is already held to the body
 * limit); a request without bytes is read as a `handle` function's request without a body is.
 */
async function bodyOf(request: Request, media: MediaType | undefined): Promise<Buffer | undefined> {
  if (request.bodyUsed) throw new TypeError("readEvent(): the request's body has already been read");
  if (request.body === null) return emptyBody(request.method, media);
  // The ArrayBuffer's own memory, not a copy.
  const bytes = Buffer.from(await request.arrayBuffer());
  return bytes.length === 0 ? emptyBody(request.method, media) : bytes;
}

/**
 * A WHATWG Headers as node gives a request's headers: lowercase names, on an object without a
 * prototype (a `ce-__proto__` header is then an attribute, refused by its name, not a setter).
 */
function headersOf(headers: Headers): EventHeaders {
  const record: Record<string, string> = Object.create(null);
  // Headers joins repeated fields with ", " as node does; only Set-Cookie comes apart.
  for (const [name, value] of headers) record[name] = record[name] === undefined ? value : `${record[name]}, ${value}`;
  return record;
}

/** The attributes of an event to answer with: `type` and `source` at least; `id`, `time` and `specversion` are filled in when missing. */
export interface EventAttributes {
  type: string;
  source: string;
  id?: string;
  time?: string;
  specversion?: string;
  datacontenttype?: string;
  dataschema?: string;
  subject?: string;
  data?: unknown;
  /** Extension attributes: names of a-z and 0-9, values strings, booleans or integers. */
  [extension: string]: unknown;
}

/** How eventResponse() answers: the mode (by default the request's), the status (200), more headers. */
export interface EventResponseInit {
  /** Without one, the mode of the request the invocation answers (structured for a structured event), else binary. */
  mode?: 'binary' | 'structured';
  status?: number;
  /** Added to the answer; the event's own (Content-Type, `ce-*`) win over these. */
  headers?: ResponseInit['headers'];
}

/**
 * On a Response eventResponse() made without a `mode`, and on its body stream, the mode it wrote
 * its event in, chosen by the request it answers: kept with the answer (fetch/web-response.ts), so
 * that a duplicate's replay writes the event in the duplicate's mode, as a `handle` function's
 * (idempotency/answers.ts). On the stream too, so that a Response made again of its body keeps it
 * (Hono's, when a middleware sets a header after the route). Registered: the same in every copy.
 */
export const ANSWERED_MODE = Symbol.for('funcrun.eventResponse.mode');
// light-response.ts's LIGHT (registered): a light Response holds text, and no stream until one is asked for.
const LIGHT = Symbol.for('funcrun.web.response.parts');

/**
 * A Response carrying `event`: in `init.mode`, else in the mode of the request the invocation
 * answers, as a `handle` function's returned event is (structured for a structured event, binary
 * otherwise and outside an invocation). Binary: attributes as `ce-*` headers, data as the body.
 * An event without `id`, `time` or `specversion` gets them as funcrun's own answers do (a new
 * UUID, the time now, 1.0); an attributes object without `datacontenttype` gets
 * `application/json` (`application/octet-stream` for bytes), as `cloudEventResponse` does.
 * Called within an invocation (a fetch handler's), an event without a `traceparent` of its own
 * carries the invocation's trace, as a `handle` function's answered event does.
 */
export function eventResponse(event: CloudEvent<unknown> | EventAttributes, init: EventResponseInit = {}): Response {
  const ctx = currentInvocation()?.context;
  const mode: Mode = init.mode ?? (ctx === undefined ? 'binary' : answerMode(ctx));
  if (mode !== 'binary' && mode !== 'structured') throw new TypeError(`eventResponse(): mode must be 'binary' or 'structured'`);
  const encoded = encodeEvent(completed(event), mode, ctx === undefined ? undefined : invocationTrace(ctx));
  const headers = new Headers(init.headers);
  for (const name of Object.keys(encoded.headers)) headers.set(name, encoded.headers[name]);
  const response = new Response(encoded.body ?? null, { status: init.status ?? 200, headers });
  // Marked with the mode it was written in: structured when the event was too large for headers, as funcrun's own answers are.
  if (init.mode === undefined) {
    const written = writtenMode(encoded.headers['content-type']);
    (response as Response & { [ANSWERED_MODE]?: string })[ANSWERED_MODE] = written;
    const body = LIGHT in response ? null : response.body;
    if (body !== null) (body as ReadableStream & { [ANSWERED_MODE]?: string })[ANSWERED_MODE] = written;
  }
  return response;
}

// The extension attributes and their names a plain object may give (as read.ts accepts them).
const ATTRIBUTE_NAME = /^[a-z0-9]+$/;

/** The event as it will be written: its own attributes, with what it lacks filled in. */
function completed(event: CloudEvent<unknown> | EventAttributes): CloudEvent<unknown> {
  if (event === null || typeof event !== 'object') throw new TypeError('eventResponse(): the event must be a CloudEvent or an object of attributes');
  const given = event as Record<string, unknown>;
  const attributes: Record<string, unknown> = {};
  for (const name of Object.keys(given)) {
    const value = given[name];
    if (value === undefined) continue;
    if (name !== 'data' && name !== 'data_base64') {
      if (!ATTRIBUTE_NAME.test(name)) throw new TypeError(`eventResponse(): invalid attribute name '${name.slice(0, 40)}': only a-z and 0-9 are allowed`);
      if (typeof value !== 'string' && typeof value !== 'boolean' && !isInt32(value) && !(value instanceof Date)) {
        throw new TypeError(`eventResponse(): attribute '${name}' must be a string, a 32-bit integer or a boolean`);
      }
    }
    attributes[name] = value;
  }
  // An SDK event holds its bytes both as data and as data_base64; an object of attributes gives them as data.
  const proto = Object.getPrototypeOf(event);
  const fromSdk = proto !== Object.prototype && proto !== null;
  // Bytes in any view or an ArrayBuffer are bytes (JSON would make `{}` of an ArrayBuffer); a Blob cannot be read here.
  if (attributes.data instanceof ArrayBuffer) attributes.data = new Uint8Array(attributes.data);
  else if (ArrayBuffer.isView(attributes.data) && !(attributes.data instanceof Uint8Array)) {
    const view = attributes.data;
    attributes.data = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  } else if (typeof Blob === 'function' && attributes.data instanceof Blob) {
    throw new TypeError('eventResponse(): give a Blob as its bytes: data: new Uint8Array(await blob.arrayBuffer())');
  }
  const { type, source, specversion = '1.0', data } = attributes;
  if (!fromSdk && attributes.data_base64 !== undefined) throw new TypeError('eventResponse(): give bytes as data (a Uint8Array), not data_base64');
  if (typeof type !== 'string' || type === '') throw new TypeError('eventResponse(): type must be a non-empty string');
  if (typeof source !== 'string' || !isUriReference(source)) throw new TypeError('eventResponse(): source must be a URI reference');
  if (!isSpecVersion(specversion)) throw new TypeError('eventResponse(): specversion must be 1.0 or 0.3');
  attributes.specversion = specversion;
  attributes.id ??= randomUUID();
  attributes.time ??= new Date().toISOString();
  // Checked as a received event is: an empty id, a time that is no timestamp, a reserved name would make one no broker takes.
  const problem = outgoingProblem(attributes);
  if (problem !== undefined) throw new TypeError(`eventResponse(): ${problem}`);
  // An SDK event keeps the datacontenttype it was made with (none, if none); an object of
  // attributes is typed as the response chain types its events.
  if (data !== undefined && !fromSdk) attributes.datacontenttype ??= data instanceof Uint8Array ? 'application/octet-stream' : 'application/json';
  return attributes as unknown as CloudEvent<unknown>;
}

function isInt32(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= -(2 ** 31) && (value as number) <= 2 ** 31 - 1;
}
