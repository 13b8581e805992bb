// Step 6 of a request (request.ts): the body read within its limit and made the request's Input,
// the one value the later steps are handed. A body is parsed by its media type or read as
// CloudEvents; a multipart body's large files go to temporary files; a function that streams its
// body gets it unread. The Input is made once and never written after; it is also the request's
// provenance (provenance.ts): what a function returns or throws out of it is data, not instructions.
import type { IncomingMessage } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import { fastifyParsing, hasBody, parseBody, rawBodyOf, readBody, refusedCoding, tooLarge } from './body/body';
import { BodyStream } from './body/body-stream';
import { MULTIPART, parseMediaType, type MediaType } from './body/media-type';
import type { RequestInput } from './body/provenance';
import { detectMode, type Mode } from './cloudevents/cloudevent';
import { readEvent } from './cloudevents/read';
import { contentTypeOf } from './context';
import { queryOf } from './http/target';
import { now } from './lifecycle/deadline';
import type { Destination, FunctionDestination } from './routing/routes';
import type { Match } from './routing/router';
import type * as Multipart from './uploads/multipart';
import type * as UploadsModule from './uploads/uploads';
import type { UploadedFile } from './uploads/uploads';
import type { Exchange, Pipeline } from './exchange';

/** What the function is given of the request beside its body: known before the body is read. */
export interface RequestHead {
  readonly media: MediaType | undefined;
  /** The CloudEvents mode the body is read in; undefined for a plain HTTP request (and a streamed body). */
  readonly mode: Mode | undefined;
  readonly query: Record<string, string | string[]>;
  readonly params: Record<string, string>;
  /** `context.contentType`. */
  readonly contentType: string | undefined;
}

/** How a destination takes its body: read here, or handed over unread (a fetch handler's events are read as a function's). */
export type BodyReading = Pick<FunctionDestination, 'streamBody'>;

/** The request as read: its head, and its body parsed, read as events, or handed over unread. */
export interface Input extends RequestHead, RequestInput {
  readonly query: Record<string, string | string[]>;
  readonly params: Record<string, string>;
  readonly request: IncomingMessage;
  /** With `includeRaw`: the body as it arrived, once per request (a batch's events share it). */
  readonly rawBody: string | Buffer | undefined;
  /** The handler's data (the parsed body, a multipart body's fields, the body stream), or the events' data. */
  readonly data: unknown;
  readonly events: CloudEvent<unknown> | CloudEvent<unknown>[] | undefined;
  /** A multipart body's files. */
  readonly files: readonly UploadedFile[] | undefined;
  /** The body of a function that streams it. */
  readonly bodyStream: BodyStream | undefined;
}

// Methods whose empty body is still a body: with a Content-Type it is parsed ('' for text, {} for a form).
const SENDS_BODY = new Set(['POST', 'PUT', 'PATCH']);
const EMPTY = Buffer.alloc(0);

/** What a request without a body is read as: an empty one for a method that sends one with a Content-Type, else none. */
export function emptyBody(method: string, media: MediaType | undefined): Buffer | undefined {
  return media !== undefined && SENDS_BODY.has(method) ? EMPTY : undefined;
}

// A request that sent `Expect: 100-continue` and waits for the go-ahead before its body.
const AWAITS_CONTINUE = Symbol('funcrun awaits 100-continue');
type ContinueRequest = IncomingMessage & { [AWAITS_CONTINUE]?: boolean };

/** `100 Continue` is sent once the request may go on: after authorize, before its body is read. */
export function awaitContinue(req: IncomingMessage): void {
  (req as ContinueRequest)[AWAITS_CONTINUE] = true;
}

/** The request's head: its media type, CloudEvents mode, query, params and content type. Starts the metrics' clock. */
export function describeRequest(p: Pipeline, x: Exchange, destination: BodyReading, match: Match<Destination>): RequestHead {
  if (p.metrics !== undefined) x.began = now();
  const headers = x.req.headers;
  const media = parseMediaType(headers['content-type']);
  return {
    media,
    mode: destination.streamBody ? undefined : detectMode(headers, media, p.behaviour.binaryEventsById),
    query: queryOf(x.search),
    params: match.kind === 'found' ? match.params : {},
    contentType: contentTypeOf(headers['content-type'], p.behaviour.rawContentType),
  };
}

/**
 * The body read, or handed over unread: the Input, or a promise while the body is read, of a
 * multipart body's Input or of the bytes that inputOf() parses.
 */
export function readInput(p: Pipeline, x: Exchange, destination: BodyReading, head: RequestHead): Input | Promise<Input> | Promise<Buffer> {
  const req = x.req;
  if (destination.streamBody) return streamInput(p, x, head);
  if (!hasBody(req)) return parseInput(p, x, head, emptyBody(x.method, head.media));
  // In faas-js-runtime compatibility a multipart body is bytes, as it was there.
  if (head.media?.type === MULTIPART && head.mode === undefined && !p.behaviour.fastifyBodyParsers) return multipartInput(p, x, head);
  return readBody(req, allowBody(x, p.settings.bodyLimit, 'bodyLimit'));
}

/** The Input, once the body readInput() read has arrived. */
export function inputOf(p: Pipeline, x: Exchange, head: RequestHead, read: Input | Buffer): Input {
  return Buffer.isBuffer(read) ? parseInput(p, x, head, read) : read;
}

/** The same Input with other events: those a contract's validator gave back. Their data is request data like the body it came from. */
export function withEvents(input: Input, events: CloudEvent<unknown> | CloudEvent<unknown>[]): Input {
  return made(input.request, input, dataOf(events), events, input.rawBody, input.files, input.bodyStream);
}

// Every Input is made here, so that all share one shape.
function made(
  request: IncomingMessage,
  head: RequestHead,
  data: unknown,
  events: CloudEvent<unknown> | CloudEvent<unknown>[] | undefined,
  rawBody: string | Buffer | undefined,
  files: readonly UploadedFile[] | undefined,
  bodyStream: BodyStream | undefined,
): Input {
  const { media, mode, query, params, contentType } = head;
  return { request, media, mode, query, params, contentType, rawBody, data, events, files, bodyStream };
}

// An event is recognised by its class; its data is parsed request data like any body.
function dataOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): unknown {
  return Array.isArray(events) ? events.map((e) => e.data) : events.data;
}

/** The limit, once the body may come: over it by its Content-Length, a 413 now; else `100 Continue` when the client waits for it. */
function allowBody(x: Exchange, limit: number, setting: string): number {
  if (Number(x.req.headers['content-length']) > limit) throw tooLarge(limit, setting);
  const refused = refusedCoding(x.req);
  if (refused !== undefined) throw refused;
  continueBody(x);
  return limit;
}

function continueBody(x: Exchange): void {
  const req = x.req as ContinueRequest;
  if (req[AWAITS_CONTINUE] === true) {
    req[AWAITS_CONTINUE] = false;
    x.res.writeContinue();
  }
}

/** A multipart body: its fields are the data, its files the context's. */
async function multipartInput(p: Pipeline, x: Exchange, head: RequestHead): Promise<Input> {
  const { limits, memory } = p.settings.uploads;
  allowBody(x, limits.body, 'uploadLimit');
  // On the exchange before the body is read: a body that fails halfway leaves files to remove.
  // The uploads part loads with the first multipart body (scripts/bundle.js ON_DEMAND).
  const { Uploads } = require('./uploads/uploads') as typeof UploadsModule;
  const uploads = (x.uploads = new Uploads(p.uploadFolder(), memory));
  const fields = await (require('./uploads/multipart') as typeof Multipart).readMultipart(x.req, limits, uploads);
  return made(x.req, head, fields, undefined, undefined, uploads.files, undefined);
}

/** A body the function reads itself: nothing is read ahead of it. */
function streamInput(p: Pipeline, x: Exchange, head: RequestHead): Input {
  const stream = openBodyStream(p, x);
  return made(x.req, head, stream, undefined, undefined, undefined, stream);
}

/**
 * The request's body as a stream, unread, counted against a limit as it is read (a streamed
 * body's, uploadLimit; a fetch handler's Request's, bodyLimit, as for a body funcrun reads: the
 * handler's text() or json() holds it whole): a declared length over it is a 413 now.
 */
export function openBodyStream(
  p: Pipeline,
  x: Exchange,
  limit = p.settings.uploads.limits.body,
  setting: 'uploadLimit' | 'bodyLimit' = 'uploadLimit',
): BodyStream {
  if (Number(x.req.headers['content-length']) > limit) throw tooLarge(limit, setting);
  const refused = refusedCoding(x.req);
  if (refused !== undefined) throw refused;
  const options = { limit, setting, idleLimit: p.settings.requestTimeout, minRate: p.settings.uploads.minRate, onFirstRead: () => continueBody(x) };
  return new BodyStream(x.req, options);
}

function parseInput(p: Pipeline, x: Exchange, head: RequestHead, bytes: Buffer | undefined): Input {
  const { media, mode } = head;
  const rawBody = p.settings.includeRaw && bytes !== undefined ? rawBodyOf(bytes, media) : undefined;
  if (mode === undefined) {
    // In faas-js-runtime compatibility, only what fastify parses is parsed (an event's data aside).
    const data = bytes === undefined ? undefined : parseBody(bytes, p.behaviour.fastifyBodyParsers ? fastifyParsing(media, bytes) : media);
    return made(x.req, head, data, undefined, rawBody, undefined, undefined);
  }
  const events = readEvent(mode, x.req.headers, bytes, media, p.eventData);
  return made(x.req, head, dataOf(events), events, rawBody, undefined, undefined);
}
