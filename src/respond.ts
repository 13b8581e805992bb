// Turning whatever a handler returned into a response: the function contract's return rules.
//
// Two rules keep a client from steering its own answer through a function that echoes input:
// CloudEvents and XML documents are recognised by what they are (their class), never by the
// shape of their own properties; and a `{ statusCode, headers, body }` object that came out of
// parsing the request is data, sent as JSON, not a response spelled out.
import { AsyncResource } from 'node:async_hooks';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline, Readable, Writable } from 'node:stream';
import { asCloudEvent, writtenMode, type Mode } from './cloudevents/cloudevent';
import { encodeEvent } from './cloudevents/reply';
import type { Trace } from './telemetry/trace';
import { abortInvocation, type Invocation } from './context';
import type { Behaviour } from './start/compat';
import { safeHeaders, type Dropped } from './http/headers';
import { fastifyStatus, firstChunkTimeout, isUnreadable, ReturnedError, UnreadableReturn } from './errors';
import { isError } from './log/serializers';
import { now } from './lifecycle/deadline';
import { isInstance, isPartOf, type RequestInput } from './body/provenance';
import { BINARY, JSON_TYPE, send, TEXT, withoutContent, XML } from './send';
import { kindOf } from './util/kind';
import type * as WebResponse from './fetch/web-response';

/**
 * A response already made (a named function's JSON output): sent as it is, not read again as a
 * return value. Recognised by its class, so no returned data can pose as one.
 */
export class Prepared {
  constructor(readonly reply: Reply) {}
}

/** A response decided but not yet written. */
export interface Reply {
  status: number;
  headers?: OutgoingHttpHeaders;
  /** A web ReadableStream: a returned Response's body, or a returned stream (fetch/web-response.ts). */
  body?: string | Buffer | Readable | ReadableStream<unknown>;
  /** The reason phrase a returned Response gave (its statusText). */
  reason?: string;
  /** The Content-Length a returned Response gave, when valid: sent on a HEAD answer only (fetch/web-response.ts). */
  declaredLength?: number;
  /** Headers of the function's that were left out (framing, or refused by node). */
  dropped?: Dropped[];
  /** The mode of the event the answer carries, as funcrun wrote it: a replay is written again in its request's (answers.ts). */
  eventMode?: 'binary' | 'structured';
}

// An XML DOM Document (such as the one an XML request arrives as) serialises with toString().
function isXmlDocument(value: object): boolean {
  return isInstance(value) && (value as { nodeType?: unknown }).nodeType === 9 && typeof value.toString === 'function';
}

/** What a request's answer is made with, beside the value returned: made once, where the answer is decided. */
export interface ReplyContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The CloudEvents mode an event is answered in (replyMode()); undefined for a plain HTTP request. */
  readonly mode: Mode | undefined;
  /** What the request was parsed into (body, query, headers, params): returned, it is data (provenance.ts). */
  readonly input: RequestInput;
  readonly behaviour: Behaviour;
  /** The invocation's trace, which an event it answers with carries (when it has none of its own). */
  readonly trace: Trace | undefined;
  /** The request's deadline (`now()` time): a web answer's first chunk is waited for until then (fetch/web-response.ts). */
  readonly deadline?: number;
  /** The single invocation the answer is part of: its signal aborts when that wait times out. */
  readonly invocation?: Invocation;
}

/**
 * Sends a handler's return value by the function contract's return rules. Returns a promise when
 * the body is a stream: it settles when the stream has been sent, rejects when the stream fails,
 * and resolves early when the client goes away (the stream is then destroyed).
 */
export function respond(to: ReplyContext, value: unknown): Reply | Promise<Reply> {
  let reply: Reply;
  try {
    reply = toReply(value, to);
  } catch (err) {
    discard(value);
    throw err;
  }
  let body = reply.body;
  // An answer without content (204, 205, 304) sends none of the body given: a stream is closed unread.
  if (typeof body === 'object' && !Buffer.isBuffer(body) && withoutContent(reply.status)) {
    discard(body);
    body = undefined;
  }
  if (body instanceof Readable) return stream(to, reply, body);
  // A web answer's body, or its status text (a light Response's text body carries one too), is sendWeb()'s to write.
  if ((body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) || reply.reason !== undefined)
    return web().sendWeb(to.req, to.res, reply, body, to.deadline, to.invocation);
  send(to.req, to.res, reply.status, reply.headers, body);
  return reply;
}

/** Web answers (Response, ReadableStream): loaded with the first (scripts/bundle.js ON_DEMAND). */
function web(): typeof WebResponse {
  return require('./fetch/web-response') as typeof WebResponse;
}

/**
 * Whether a value is a Response, a web ReadableStream, or a body a Response is made of (a Blob,
 * URLSearchParams, FormData), by its tag first: the classes are only asked about such a value.
 */
function webAnswer(value: object): 'response' | 'stream' | 'body' | undefined {
  let tag: unknown;
  try {
    tag = (value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag];
  } catch {
    return undefined;
  }
  return typeof tag === 'string' && WEB_TAGS.has(tag) ? web().webKind(value) : undefined;
}

// The tags of the web objects answered as the platform's Response sends them (a Response's body, for the last four).
const WEB_TAGS = new Set(['Response', 'ReadableStream', 'Blob', 'File', 'URLSearchParams', 'FormData']);

/** Whether a returned object is answered as it is by respond(): bytes in any view, a Response, a web stream, a body a Response is made of. */
export function answeredAsItIs(value: object): boolean {
  return isBytes(value) || webAnswer(value) !== undefined;
}

/** Bytes in any form: a Buffer, any typed array or DataView, an ArrayBuffer. */
function isBytes(value: object): value is ArrayBufferView | ArrayBuffer {
  return ArrayBuffer.isView(value) || value instanceof ArrayBuffer;
}

/**
 * A returned value that will not be sent (a late result after a timeout, a batch handler's value
 * that is not an event, a response that could not be made): a stream in it is destroyed, with
 * its error ignored, so it neither leaks its file descriptor nor crashes the process with an
 * unhandled 'error' event.
 */
export function discard(value: unknown): void {
  try {
    if (value === null || typeof value !== 'object') return;
    const body = value instanceof Readable ? value : (value as { body?: unknown }).body;
    if (body instanceof Readable && !body.destroyed) {
      body.on('error', ignore);
      body.destroy();
    } else if (webAnswer(value) !== undefined) web().discardWeb(value);
    // A structured response's web body (a stream, or a refused Response): cancelled.
    else if (body !== null && typeof body === 'object' && isInstance(body) && webAnswer(body) !== undefined) web().discardWeb(body);
  } catch {
    // A value whose properties cannot be read holds nothing we could close.
  }
}

function ignore(): void {}

// Nothing to send: 204, with the content type faas-js-runtime's own suite expects of it.
const NOTHING: Reply = Object.freeze({ status: 204, headers: Object.freeze({ 'content-type': 'text/plain' }) });
// faas-js-runtime's answer to a truthy number or boolean: its default content type, no body.
const EMPTY_200: Reply = Object.freeze({ status: 200, headers: Object.freeze({ 'content-type': JSON_TYPE }) });

/** The answer to a returned value, not yet written. */
export function toReply(value: unknown, to: ReplyContext): Reply {
  switch (typeof value) {
    case 'undefined':
      return NOTHING;
    case 'string':
      return value === '' ? NOTHING : { status: 200, headers: { 'content-type': TEXT }, body: value };
    case 'number':
    case 'boolean':
      // The function contract: a number or boolean returned directly, not wrapped, gives an empty 204.
      // faas-js-runtime: a falsy one gives 204, any other an empty 200.
      return to.behaviour.scalarsAsEmpty200 && value ? EMPTY_200 : { status: 204 };
    case 'bigint':
    case 'symbol':
    case 'function':
      return { status: 204 };
  }
  if (value === null) return NOTHING;
  const object = value as object;
  // The common answer, an object literal or parsed data: no class, so no event, stream, bytes or
  // document; only the spelled-out response is left to look for.
  if (Object.getPrototypeOf(object) === Object.prototype) return plainReply(object, to);
  if (value instanceof Prepared) return value.reply;
  const { mode, behaviour, trace } = to;
  const event = asCloudEvent(object);
  if (event !== undefined) {
    // faas-js-runtime sends an event returned to a plain HTTP request as JSON data.
    if (mode === undefined && behaviour.eventsToPlainRequestsAsJson) return { status: 200, headers: { 'content-type': JSON_TYPE }, body: stringify(event) };
    const { headers, body } = encodeEvent(event, mode ?? 'binary', trace, behaviour.eventsWrittenAsSdk);
    return { status: 200, headers, body, eventMode: writtenMode(headers['content-type']) };
  }
  if (Array.isArray(object) && mode === 'batch' && object.length > 0) {
    const events = object.map((item) => (item !== null && typeof item === 'object' ? asCloudEvent(item) : undefined));
    if (events.every((e) => e !== undefined)) {
      const { headers, body } = encodeEvent(events as NonNullable<(typeof events)[number]>[], 'batch', trace);
      return { status: 200, headers, body };
    }
  }
  // faas-js-runtime labels bytes and streams with its default type, JSON.
  const bytesType = behaviour.jsonByDefault ? JSON_TYPE : BINARY;
  if (isBytes(object)) return { status: 200, headers: { 'content-type': bytesType }, body: asBuffer(object) };
  if (object instanceof Readable) return { status: 200, headers: { 'content-type': bytesType }, body: object };
  if (isXmlDocument(object)) return { status: 200, headers: { 'content-type': XML }, body: String(object) };
  const web = webAnswer(object);
  if (web === 'response') return webReply(object as Response);
  if (web === 'stream') return { status: 200, headers: { 'content-type': bytesType }, body: object as ReadableStream<unknown> };
  if (web === 'body') return webReply(bodyResponse(object as Blob));
  // An Error returned is answered as an error (its JSON would be `{}`), as faas-js-runtime's fastify
  // answers one. Asked last: events, bytes and streams, the answers returned most, pay nothing for it.
  if (isError(object)) throw new ReturnedError(object);
  return plainReply(object, to);
}

/** A returned Response, sent as it says (fetch/web-response.ts). */
function webReply(response: Response): Reply {
  return web().responseReply(response);
}

/** An object that is none of the kinds above: a spelled-out response, or data sent as JSON. */
function plainReply(object: object, to: ReplyContext): Reply {
  if (('statusCode' in object || 'headers' in object || 'body' in object) && !isPartOf(object, to.input)) {
    const reply = structured(object, to);
    if (reply !== undefined) return reply;
  }
  return { status: 200, headers: { 'content-type': JSON_TYPE }, body: stringify(object) };
}

/**
 * `{ statusCode, headers, body }`: a response the function spelled out. Also an SDK `Message`.
 * Undefined when the object is data to send as JSON instead: it carries the request's own
 * headers (`return { ...context }`: answering with them would let a client set the answer's
 * headers), or it has a `statusCode` but neither `headers` nor `body` (faas-js-runtime sends such
 * an object whole, with its status).
 */
function structured(value: { statusCode?: unknown; headers?: unknown; body?: unknown }, to: ReplyContext): Reply | undefined {
  const { body } = value;
  const behaviour = to.behaviour;
  const faas = behaviour.structuredAsFaasJsRuntime;
  // faas-js-runtime ignores headers that are not an object.
  const given = faas && (value.headers === null || typeof value.headers !== 'object') ? undefined : value.headers;
  if (given !== null && typeof given === 'object' && isPartOf(given, to.input)) return undefined;
  const statusCode = faas ? fastifyStatus(value.statusCode) : value.statusCode;
  if (statusCode !== undefined && !(Number.isInteger(statusCode) && (statusCode as number) >= 200 && (statusCode as number) <= 599)) {
    throw new Error(`the function returned statusCode as ${kindOf(value.statusCode)}: expected a number from 200 to 599`);
  }
  if (given !== undefined && (given === null || typeof given !== 'object')) {
    throw new Error(`the function returned headers as ${kindOf(given)}: expected an object of header names to values`);
  }
  const dropped: Dropped[] = [];
  const headers = safeHeaders(given, dropped);
  if (body === undefined && (faas || (given === undefined ? statusCode !== undefined : behaviour.headersWithoutBodyAsJson))) {
    // faas-js-runtime: no body, so the object itself is the body, sent with its headers and status.
    if (!('content-type' in headers)) headers['content-type'] = JSON_TYPE;
    const reply: Reply = { status: (statusCode as number | undefined) ?? 200, headers, body: stringify(value) };
    if (dropped.length > 0) reply.dropped = dropped;
    return reply;
  }
  const userType = headers['content-type'] !== undefined;
  const content = replyBodyOf(body, to);
  // faas-js-runtime's type for a body the function gave no type: JSON, whatever the body.
  if (content.type !== undefined && !userType) headers['content-type'] = behaviour.jsonByDefault && content.headers === undefined ? JSON_TYPE : content.type;
  if (content.headers) for (const name in content.headers) if (!(name in headers)) headers[name] = content.headers[name];
  const status = (statusCode as number | undefined) ?? (content.body === undefined ? 204 : 200);
  const reply: Reply = { status, headers, body: content.body };
  if (dropped.length > 0) reply.dropped = dropped;
  // An event as funcrun wrote it, unless the function gave its own Content-Type.
  if (content.headers !== undefined && !userType) reply.eventMode = writtenMode(content.headers['content-type']);
  return reply;
}

function replyBodyOf(
  body: unknown,
  to: ReplyContext,
): { body?: string | Buffer | Readable | ReadableStream<unknown>; type?: string; headers?: OutgoingHttpHeaders } {
  if (body === undefined) return {};
  // faas-js-runtime sends a null body as JSON `null`.
  if (body === null) return to.behaviour.jsonByDefault ? { body: 'null', type: JSON_TYPE } : {};
  switch (typeof body) {
    case 'string':
      return { body, type: TEXT };
    case 'number':
    case 'boolean':
    case 'bigint':
      return { body: String(body), type: TEXT };
    case 'object': {
      // A body that answers nothing it is asked (a revoked Proxy): what the function returned, logged as such.
      if (isUnreadable(body)) throw new UnreadableReturn();
      // An Error as the body is answered as an error, as a returned one is (toReply()).
      if (isError(body)) throw new ReturnedError(body);
      // The common body, an object literal or parsed data: no class, so no bytes, stream, document or event.
      if (!isInstance(body)) return { body: stringify(body), type: JSON_TYPE };
      if (isBytes(body)) return { body: asBuffer(body), type: BINARY };
      if (body instanceof Readable) return { body, type: BINARY };
      if (isXmlDocument(body)) return { body: String(body), type: XML };
      const event = asCloudEvent(body);
      if (event !== undefined) {
        const encoded = encodeEvent(event, to.mode ?? 'binary', to.trace, to.behaviour.eventsWrittenAsSdk);
        return { body: encoded.body, type: encoded.headers['content-type'], headers: encoded.headers };
      }
      const web = webAnswer(body);
      // Streamed as a returned web stream is, with the object's status and headers (sendWeb()).
      if (web === 'stream') return { body: body as ReadableStream<unknown>, type: BINARY };
      // A Response has a status and headers of its own, which would contend with the object's.
      if (web === 'response') throw new Error('the function returned a Response as the body of a structured response: return the Response itself');
      if (web === 'body') {
        const made = bodyResponse(body as Blob);
        return { body: made.body ?? undefined, type: made.headers.get('content-type') ?? BINARY };
      }
      return { body: stringify(body), type: JSON_TYPE };
    }
    default:
      throw new Error(`the function returned a body of type ${typeof body}`);
  }
}

function asBuffer(bytes: ArrayBufferView | ArrayBuffer): Buffer {
  if (Buffer.isBuffer(bytes)) return bytes;
  return ArrayBuffer.isView(bytes) ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : Buffer.from(bytes);
}

/** A Blob, URLSearchParams or FormData as the platform's Response makes it (fetch/web-response.ts). */
function bodyResponse(value: Blob | URLSearchParams | FormData): Response {
  return web().bodyResponse(value);
}

function stringify(value: unknown): string {
  const json = JSON.stringify(value);
  // toJSON() may return undefined; send JSON null rather than an empty body claiming to be JSON.
  return json === undefined ? 'null' : json;
}

/**
 * Streams a returned Readable. Headers are written with the first chunk, so a stream that fails
 * before any byte still gets a proper error response; after that a failure can only cut the
 * connection. `stream.pipeline` destroys the stream when the client goes away. Until the first
 * chunk (or the end), the wait is bounded by the request's deadline, as sendWeb() bounds a web
 * answer's: past it the stream is destroyed with funcrun's 504, which the promise rejects with.
 */
function stream(to: ReplyContext, reply: Reply, source: Readable): Promise<Reply> {
  const { req, res } = to;
  if (source.destroyed) return Promise.reject(new Error('the function returned a stream that was already destroyed'));
  // The request (or its socket) piped into its own response would read the next pipelined request.
  if (source === req || source === req.socket) return Promise.reject(new Error('the function returned the request itself as the response body'));
  let timer: NodeJS.Timeout | undefined;
  const head = () => {
    if (res.headersSent) return;
    // The first chunk, or the end: from now on the stream runs for as long as it produces.
    clearTimeout(timer);
    res.writeHead(reply.status, reply.headers);
  };
  // The client went away before the function answered: nothing to send to.
  if (res.destroyed) {
    discard(source);
    return Promise.resolve(reply);
  }
  if (req.method === 'HEAD') {
    discard(source);
    head();
    res.end();
    return Promise.resolve(reply);
  }
  let gone = false;
  let settled = false;
  const sink = new Writable({
    // Object mode, so any chunk reaches write() and a wrong one is refused here, not thrown.
    objectMode: true,
    write(chunk: unknown, _encoding, callback) {
      if (typeof chunk === 'string') chunk = Buffer.from(chunk);
      if (!(chunk instanceof Uint8Array))
        return callback(new TypeError(`the function's stream produced a chunk that is not bytes or a string (${typeof chunk})`));
      head();
      if (res.write(chunk)) callback();
      else res.once('drain', () => callback());
    },
    final(callback) {
      head();
      res.end();
      callback();
    },
  });
  // In the invocation's scope, as the stream's own code is: what its destroy or cancel logs carries the reqId.
  const onClose = AsyncResource.bind(() => {
    if (res.writableFinished) return;
    gone = true;
    sink.destroy();
  });
  res.once('close', onClose);
  const deadline = to.deadline ?? Infinity;
  return new Promise((resolve, reject) => {
    pipeline(source, sink, (err) => {
      settled = true;
      clearTimeout(timer);
      res.off('close', onClose);
      if (err === undefined || err === null || gone) resolve(reply);
      else reject(err);
    });
    if (deadline === Infinity) return;
    // Past the deadline with nothing sent: the stream is destroyed with funcrun's 504, which
    // answers at once (whatever the stream's own destroy does), and the invocation's signal aborts.
    const timedOut = () => {
      if (settled || gone || res.headersSent) return;
      const late = firstChunkTimeout();
      if (to.invocation !== undefined) abortInvocation(to.invocation, late);
      source.destroy(late);
      reject(late);
    };
    process.nextTick(afterFirstFlow, () => {
      if (!settled && !res.headersSent) timer = setTimeout(timedOut, Math.max(0, deadline - now()));
    });
  });
}

/**
 * Runs `arm` once a first chunk there at once has been written: pipe() starts the flow on the next
 * tick (a chunk pushed before the stream was returned, Readable.from() of an array, is written
 * then), and an async generator's first yield (Readable.from() of one) comes two microtasks later.
 * A stream whose first chunk is there arms nothing.
 */
function afterFirstFlow(arm: () => void): void {
  void Promise.resolve().then(ignore).then(arm);
}
