// One request's way through funcrun: `onRequest` is the list of its numbered steps, each step a
// function of its own over the request's `Exchange`. What is decided once at start (routes,
// CORS origins, defaults) is in the `Pipeline` server.ts builds; the steps do per-request work only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { CloudEvent } from 'cloudevents';
import { fastifyParsing, hasBody, parseBody, rawBodyOf, readBody, refusedCoding, tooLarge } from './body/body';
import { BodyStream } from './body/body-stream';
import type * as Multipart from './uploads/multipart';
import type * as UploadsModule from './uploads/uploads';
import type { Uploads } from './uploads/uploads';
import type { UploadFolder } from './uploads/upload-folder';
import { queryOf, readTarget } from './http/target';
import type { Behaviour } from './start/compat';
import { detectMode, replyMode, type Mode, type ResponseDefaults } from './cloudevents/cloudevent';
import { readEvent } from './cloudevents/read';
import { Context, contentTypeOf, heldWork, invocationAnswered, outlivingHandler, sharingQuery, type ContextParts } from './context';
import { allowAnyOrigin, allowOrigin, isPreflight, type OriginCheck } from './http/cors';
import { runtimeError, sendError, withoutQueryValues, type SentError } from './errors';
import type { Logger, RootLogger } from './log/log';
import { parseMediaType, type MediaType } from './body/media-type';
import { discard, respond, type Reply } from './respond';
import { eventTrace, requestTrace, sibling, type Trace } from './telemetry/trace';
import type { Tracing } from './telemetry/otel';
import { JSON_TYPE, send } from './send';
import { METRICS_TYPE, type Metrics } from './telemetry/metrics';
import { requestDone, type Runtime } from './lifecycle/lifecycle';
import { answerProbe, type ProbeOptions } from './lifecycle/probes';
import { batch, beforeDeadline, inInvocation, type Invoke } from './invocation';
import { closeAfter, lingerAfter, requestArrived } from './http/connections';
import { now } from './lifecycle/deadline';
import type { RequestInput } from './body/provenance';
import type { Contracts } from './events/contracts';
import type { Idempotency, Settle } from './events/idempotency/idempotency';
import { Outcome, settleOutcome } from './cloudevents/outcomes';
import type * as AdmitEvents from './events/admit-events';
import type { Match } from './routing/router';
import type { Destination, FunctionDestination, RouteTable } from './routing/routes';
import type { Function as FunctionModule, RequestInfo } from './types';
import type { Settings } from './http-server';

/** What every request's steps share: decided once, when the server is made. */
export interface Pipeline {
  readonly settings: Settings;
  readonly behaviour: Behaviour;
  readonly module: FunctionModule;
  readonly routes: RouteTable;
  readonly log: RootLogger;
  readonly runtime: Runtime;
  readonly metrics: Metrics | undefined;
  readonly cors: OriginCheck | undefined;
  /** faas-js-runtime's blanket CORS, in compatibility mode without the module's own. */
  readonly corsForEveryOrigin: boolean;
  readonly eventData: { asFaasJsRuntime: boolean };
  readonly defaults: ResponseDefaults;
  readonly tracing: Tracing | undefined;
  readonly invoke: Invoke;
  /** The module's event contracts, when it declares types. */
  readonly contracts: Contracts | undefined;
  /** With idempotency on: duplicates answered from the store. */
  readonly idempotency: Idempotency | undefined;
  readonly probeOptions: ProbeOptions;
  /** The level of the line logged per answered request, or undefined when it would not be written. */
  readonly accessLevel: 'info' | 'debug' | undefined;
  /** Where temporary files of uploads go. */
  readonly uploadFolder: () => UploadFolder;
  /** The last reqId given out. */
  requests: number;
}

// Methods whose empty body is still a body: with a Content-Type it is parsed ('' for text, {} for a form).
const SENDS_BODY = new Set(['POST', 'PUT', 'PATCH']);
const EMPTY = Buffer.alloc(0);
// The methods faas-js-runtime routes to the function (fastify answers HEAD for a GET route).
const ROOT_METHODS = new Set(['GET', 'HEAD', 'POST']);

// A request that sent `Expect: 100-continue` and waits for the go-ahead before its body.
const AWAITS_CONTINUE = Symbol('funcrun awaits 100-continue');
type ContinueRequest = IncomingMessage & { [AWAITS_CONTINUE]?: boolean };

/** `100 Continue` is sent once the request may go on: after authorize, before its body is read. */
export function awaitContinue(req: IncomingMessage): void {
  (req as ContinueRequest)[AWAITS_CONTINUE] = true;
}

/** One request and its answer, as the steps read and fill it in. Every field is set here, so all share one shape. */
export class Exchange {
  /** The request's logger; a single event's own trace replaces it once the event is read. */
  log: Logger;
  readonly method: string;
  /** The request path as sent, and the query string after `?`. */
  readonly path: string;
  readonly search: string | undefined;
  params: Record<string, string> | undefined = undefined;
  /** The trace an answered event carries: the single invocation's. */
  replyTrace: Trace | undefined;
  /** What the request was parsed into, so far: never read as response instructions (provenance.ts). */
  input: RequestInput | undefined = undefined;
  /** When the request's timeout starts: the access check, the body and the function count against it. */
  started = 0;
  /** When the request reached the function, for the metrics; -1 until then. */
  began = -1;
  /** Set once the function has been called: from then on an error is the function's. */
  invoked = false;
  // The body and what it was read as (step 6).
  media: MediaType | undefined = undefined;
  mode: Mode | undefined = undefined;
  query: Record<string, string | string[]> | undefined = undefined;
  contentType: string | undefined = undefined;
  rawBody: string | Buffer | undefined = undefined;
  /** The handler's data, or the events read from the body. */
  data: unknown = undefined;
  events: CloudEvent<unknown> | CloudEvent<unknown>[] | undefined = undefined;
  // The contexts (step 7): a batch's share one prototype for the query's keys.
  contextClass: new (parts: ContextParts) => Context = Context;
  /** With the application's OpenTelemetry, each invocation is a span of its tracer. */
  otel: Tracing | undefined = undefined;
  spans: Trace[] | undefined = undefined;
  /** The single invocation's context (not a batch's): its answer is sent as part of it. */
  single: Context | undefined = undefined;
  /** The contexts made for the function: their invocations end with this request's answer. */
  contexts: Context | Context[] | undefined = undefined;
  /** What was sent: the function's answer (respond()) or an error's (sendError()). */
  sent: Reply | SentError | undefined = undefined;
  /** With idempotency: keeps the answer for duplicates, or releases the event's claim, once answered. */
  settleClaim: Settle | undefined = undefined;
  /** A multipart body's files, removed when the request is answered. */
  uploads: Uploads | undefined = undefined;
  /** The body of a function that streams it. */
  bodyStream: BodyStream | undefined = undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly reqId: number,
    log: RootLogger,
    /** The trace the request arrived in, if any. */
    readonly trace: Trace | undefined,
  ) {
    this.log = trace === undefined ? log.forRequest(reqId) : log.forRequest(reqId, trace.logFields);
    this.replyTrace = trace;
    this.method = req.method ?? 'GET';
    const { path, search } = readTarget(req.url ?? '/');
    this.path = path;
    this.search = search;
  }

  get inBatch(): boolean {
    return Array.isArray(this.events);
  }
}

export async function onRequest(p: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const x = arrive(p, req, res);
  try {
    // 1. The request line and headers: what HTTP itself requires.
    checkHttp(x);
    // 2. CORS: a preflight is answered here.
    if (answerCors(p, x)) return;
    // 3. The route, and 4. the module's access check, before the body is read or a 404 says which routes exist.
    const match = p.routes.router.find(x.method, x.path);
    x.started = now();
    if (p.module.authorize !== undefined && !isProbe(match)) await checkAccess(p, x);
    const destination = destinationOf(p, x, match);
    // 5. Probes and metrics are answered by the runtime itself.
    if (destination.kind !== 'function') return await answerRuntime(p, x, destination);
    // 6. The body, within its limit: parsed by its media type or read as CloudEvents; a multipart
    // body's large files go to temporary files; a function that streams its body gets it unread.
    const reading = readInput(p, x, destination);
    if (reading !== undefined) {
      const bytes = await reading;
      if (bytes !== undefined) parseInput(p, x, bytes);
    }
    // 7. Events: checked against the module's contracts; with idempotency, a duplicate is answered as the first delivery was.
    if (x.events !== undefined && (p.contracts !== undefined || p.idempotency !== undefined)) {
      const answered = (require('./events/admit-events') as typeof AdmitEvents).admitEvents(p, x);
      if (answered === true || (answered !== false && (await answered))) return;
    }
    // 8. The function: with the request's data, or once per event.
    // Awaited even when it is not a promise: what the function queued as it returned (a microtask
    // that finishes the value) runs before the answer, as in faas-js-runtime.
    const value = await callFunction(p, x, destination);
    if (x.uploads !== undefined || x.bodyStream !== undefined) await bodyDone(x, value);
    // 9. The answer, by the return rules.
    const sent = answer(p, x, value);
    if (sent !== undefined) await sent;
  } catch (err) {
    // Temporary files are gone before any answer is sent (unless waitUntil work still reads them).
    if (x.uploads !== undefined && !holdsWork(x)) await x.uploads.remove();
    // Any step's failure becomes an answer in one place: sendError().
    fail(p, x, err);
  } finally {
    finish(p, x);
  }
}

/** 0. The request is counted on its connection and among those in flight, with a reqId and a logger. */
function arrive(p: Pipeline, req: IncomingMessage, res: ServerResponse): Exchange {
  const x = new Exchange(req, res, ++p.requests, p.log, requestTrace(req.headers));
  requestArrived(req);
  p.runtime.inFlight.set(req, x.reqId);
  if (p.accessLevel !== undefined) logWhenAnswered(x, p.accessLevel);
  return x;
}

function checkHttp(x: Exchange): void {
  const req = x.req;
  // HTTP/1.1 requires Host (RFC 9112 section 3.2); node's own check would answer without a JSON body.
  if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
    throw runtimeError('FUNCRUN_NO_HOST', 'the request has no Host header');
  }
  // funcrun upgrades nothing, and node has handed the rest of this connection's bytes to the
  // upgrade: answer this request, then close, rather than leave requests behind it unanswered.
  if (req.headers.upgrade !== undefined) x.res.setHeader('connection', 'close');
}

/** True when the request was answered here: a preflight, or OPTIONS under faas-js-runtime's blanket CORS. */
function answerCors(p: Pipeline, x: Exchange): boolean {
  const { req, res } = x;
  if (p.cors !== undefined && req.headers.origin !== undefined) {
    const allowed = allowOrigin(req, res, p.cors);
    if (!isPreflight(req)) return false;
    if (!allowed) throw runtimeError('FUNCRUN_ORIGIN_NOT_ALLOWED', `origin '${req.headers.origin}' is not allowed`);
    send(req, res, 204, undefined, undefined);
    return true;
  }
  if (p.corsForEveryOrigin && x.method === 'OPTIONS' && (x.path === '/' || !p.behaviour.rootOnly)) {
    // faas-js-runtime answers OPTIONS itself, whoever asks, without calling the function.
    allowAnyOrigin(res);
    send(req, res, 204, { 'content-type': JSON_TYPE, 'access-control-allow-headers': '*' }, undefined);
    return true;
  }
  return false;
}

// Probes are exempt from the access check: the platform asks them without credentials.
function isProbe(match: Match<Destination>): boolean {
  return match.kind === 'found' && match.handler.kind === 'probe';
}

/** The module's `authorize()`: `false` or a throw refuses; within the request's timeout, as the function is. */
async function checkAccess(p: Pipeline, x: Exchange): Promise<void> {
  const info: RequestInfo = { method: x.method, path: x.path, headers: x.req.headers, query: queryOf(x.search) };
  // What it throws is read by the same rule as a handler's: headers that are the request's own are not sent back.
  x.input = { access: info };
  const timeout = p.settings.timeout;
  // A hung auth backend is a 504, not a pile-up of requests up to the connection cap.
  const verdict = await beforeDeadline(p.module.authorize!(info), timeout, x.started + timeout, 'authorize()', 'FUNCRUN_AUTHORIZE_TIMEOUT');
  // `false` refuses as a throw does: the types, and the probes' own rule, say a boolean answers.
  if (verdict === false) throw runtimeError('FUNCRUN_NOT_AUTHORIZED', 'not allowed');
}

/** The route's destination, or a 404 or 405 for a request no route takes. */
function destinationOf(p: Pipeline, x: Exchange, match: Match<Destination>): Destination {
  const { method, path } = x;
  if (match.kind === 'found') {
    x.params = match.params;
    return match.handler;
  }
  if (match.kind === 'method')
    throw runtimeError('FUNCRUN_METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${path}`, { headers: { allow: match.allow.join(', ') } });
  const rootOnly = p.behaviour.rootOnly;
  if (p.routes.fallback !== undefined && (!rootOnly || (path === '/' && ROOT_METHODS.has(method)))) return p.routes.fallback;
  // fastify's own 404, as faas-js-runtime answers a path or method it has no route for.
  if (rootOnly) throw runtimeError('FUNCRUN_NOT_FOUND', `Route ${method}:${x.req.url} not found`);
  throw runtimeError('FUNCRUN_NOT_FOUND', `no route for ${method} ${path}`);
}

function answerRuntime(p: Pipeline, x: Exchange, destination: Exclude<Destination, FunctionDestination>): Promise<void> | void {
  if (destination.kind === 'probe') return answerProbe(x.req, x.res, destination, p.runtime, p.probeOptions, x.log);
  send(x.req, x.res, 200, { 'content-type': METRICS_TYPE }, p.metrics!.render());
}

/**
 * Reads the body, or hands it over unread: a promise while it is being read, of the bytes when
 * they are still to be parsed (parseInput).
 */
function readInput(p: Pipeline, x: Exchange, destination: FunctionDestination): Promise<Buffer | void> | void {
  const { req, method } = x;
  if (p.metrics !== undefined) x.began = now();
  const media = (x.media = parseMediaType(req.headers['content-type']));
  if (destination.streamBody) return streamInput(p, x);
  const mode = (x.mode = detectMode(req.headers, media, p.behaviour.binaryEventsById));
  // Without a body: an empty one for a method that sends one with a Content-Type, else none.
  if (!hasBody(req)) return parseInput(p, x, media !== undefined && SENDS_BODY.has(method) ? EMPTY : undefined);
  // In faas-js-runtime compatibility a multipart body is bytes, as it was there.
  if (media?.type === 'multipart/form-data' && mode === undefined && !p.behaviour.fastifyBodyParsers) return multipartInput(p, x);
  return readBody(req, allowBody(x, p.settings.bodyLimit, 'bodyLimit'));
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
async function multipartInput(p: Pipeline, x: Exchange): Promise<void> {
  const { limits, memory } = p.settings.uploads;
  allowBody(x, limits.body, 'uploadLimit');
  // The uploads part loads with the first multipart body (scripts/bundle.js ON_DEMAND).
  const { Uploads } = require('./uploads/uploads') as typeof UploadsModule;
  const uploads = (x.uploads = new Uploads(p.uploadFolder(), memory));
  const fields = await (require('./uploads/multipart') as typeof Multipart).readMultipart(x.req, limits, uploads);
  describeRequest(p, x);
  x.data = fields;
  x.input = { data: fields, query: x.query, request: x.req, params: x.params };
}

/** A body the function reads itself: nothing is read ahead of it. */
function streamInput(p: Pipeline, x: Exchange): void {
  const limit = p.settings.uploads.limits.body;
  if (Number(x.req.headers['content-length']) > limit) throw tooLarge(limit, 'uploadLimit');
  const refused = refusedCoding(x.req);
  if (refused !== undefined) throw refused;
  describeRequest(p, x);
  const options = { limit, idleLimit: p.settings.requestTimeout, minRate: p.settings.uploads.minRate, onFirstRead: () => continueBody(x) };
  const stream = (x.data = x.bodyStream = new BodyStream(x.req, options));
  x.input = { data: stream, query: x.query, request: x.req, params: x.params };
}

/**
 * After the function, before the answer: temporary files are removed (a file stream the function
 * returned was opened already), a streamed body over its limit is a 413 whatever the function
 * returned, and a body left unread closes the connection.
 */
async function bodyDone(x: Exchange, value: unknown): Promise<void> {
  if (x.uploads !== undefined && !holdsWork(x)) await x.uploads.remove();
  const stream = x.bodyStream;
  if (stream === undefined) return;
  if (stream.refused !== undefined) {
    discard(value);
    throw stream.refused;
  }
  if (!x.req.complete && !x.res.headersSent) closeUnread(x.req, x.res);
}

/** The answer closes the connection, whose request's body is still coming: lingering, so the client reads the answer. */
function closeUnread(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  lingerAfter(req);
}

/** Whether the request's invocations handed work to waitUntil: their files stay until it settles. */
function holdsWork(x: Exchange): boolean {
  const made = x.contexts;
  if (made === undefined) return false;
  return Array.isArray(made) ? made.some((ctx) => heldWork(ctx) !== undefined) : heldWork(made) !== undefined;
}

/**
 * The request's invocations have ended, or will once their waitUntil work settles (work it hands
 * on to waitUntil included): their uploads end then.
 */
function endUploads(x: Exchange, uploads: Uploads, settled = 0): void {
  const made = x.contexts;
  const held = made === undefined ? [] : (Array.isArray(made) ? made : [made]).flatMap((ctx) => heldWork(ctx) ?? []);
  if (held.length === settled) void uploads.end();
  else void Promise.all(held).then(() => endUploads(x, uploads, held.length));
}

/** The request's query, params and content type, as every function sees them. */
function describeRequest(p: Pipeline, x: Exchange): void {
  x.query = queryOf(x.search);
  x.params ??= {};
  x.contentType = contentTypeOf(x.req.headers['content-type'], p.behaviour.rawContentType);
}

function parseInput(p: Pipeline, x: Exchange, bytes: Buffer | undefined): void {
  const { req, media, mode } = x;
  const behaviour = p.behaviour;
  describeRequest(p, x);
  const query = x.query!;
  // Once per request: a batch's events all share it.
  if (p.settings.includeRaw && bytes !== undefined) x.rawBody = rawBodyOf(bytes, media);
  if (mode === undefined) {
    // In faas-js-runtime compatibility, only what fastify parses is parsed (an event's data aside).
    const data = (x.data = bytes === undefined ? undefined : parseBody(bytes, behaviour.fastifyBodyParsers ? fastifyParsing(media, bytes) : media));
    x.input = { data, query, request: req, params: x.params };
    return;
  }
  const events = (x.events = readEvent(mode, req.headers, bytes, media, p.eventData));
  // A batch's events share the request's query: one prototype holds its keys for all of them.
  if (Array.isArray(events) && x.search !== undefined) x.contextClass = sharingQuery(query);
  // An event is recognised by its class; its data is parsed request data like any body.
  x.input = { events, data: Array.isArray(events) ? events.map((e) => e.data) : events.data, query, request: req, params: x.params };
}

/** What the function returned (or a promise of it). */
function callFunction(p: Pipeline, x: Exchange, destination: FunctionDestination): unknown {
  const { settings, behaviour, metrics } = p;
  const fn = destination.fn;
  const deadline = settings.timeout > 0 ? x.started + settings.timeout : Infinity;
  if (p.tracing?.active() === true) x.otel = p.tracing;
  const events = x.events;
  // Every context is made before the call, so queueing ends here.
  if (events === undefined) {
    const ctx = (x.single = contextFor(p, x, destination, undefined));
    if (metrics !== undefined) metrics.queued((now() - x.began) / 1000);
    x.invoked = true;
    return p.invoke(fn, ctx, x.data, deadline);
  }
  if (metrics !== undefined) metrics.queued((now() - x.began) / 1000);
  x.invoked = true;
  if (Array.isArray(events)) {
    const context = (event: CloudEvent<unknown>) => contextFor(p, x, destination, event);
    return batch(
      events,
      fn,
      context,
      (f, ctx, data) => p.invoke(f, ctx, data, deadline),
      // A batch's event may be retried (the whole batch is) or dropped (no answer of its own).
      (value, ctx) => settleOutcome(p.metrics, ctx.log, value, ctx.cloudevent),
      () => x.res.destroyed,
      behaviour.eventAsArgument,
    );
  }
  const ctx = (x.single = contextFor(p, x, destination, events));
  return p.invoke(fn, ctx, behaviour.eventAsArgument ? events : events.data, deadline);
}

/** A context for the function: the request's, or one event's (with its own trace and span). */
function contextFor(p: Pipeline, x: Exchange, destination: FunctionDestination, event: CloudEvent<unknown> | undefined): Context {
  const inBatch = x.inBatch;
  let own = x.otel?.begin(x.method, x.path, destination.route, x.req.headers, event);
  if (own !== undefined) {
    if ((x.spans ??= []).push(own) === 1) x.otel!.endWith(x.res, x.spans);
  } else if (event !== undefined) {
    // An event brings its trace in its attributes, when the request had none; a batch's events
    // under the request's trace are each an invocation of their own, with a span of their own.
    own = x.trace === undefined ? eventTrace(event) : inBatch ? sibling(x.trace) : undefined;
  }
  let log = x.log;
  if (own !== undefined) {
    log = p.log.forRequest(x.reqId, own.logFields);
    // The single invocation's trace is the request's from now on: its answer and the runtime's lines carry it.
    if (!inBatch) {
      x.replyTrace = own;
      x.log = log;
    }
  }
  const { req, res, reqId, path } = x;
  const ctx = new x.contextClass({
    req,
    res,
    log,
    reqId,
    path,
    query: x.query!,
    params: x.params!,
    contentType: x.contentType,
    defaults: p.defaults,
    trace: own ?? x.trace,
    runtime: p.runtime,
    body: event === undefined ? x.data : event.data,
    rawBody: x.rawBody,
    event,
    files: x.uploads?.files,
  });
  const made = x.contexts;
  x.contexts = made === undefined ? ctx : Array.isArray(made) ? (made.push(ctx), made) : [made, ctx];
  return ctx;
}

/** Sends the answer; a promise while a returned stream is still being sent. */
function answer(p: Pipeline, x: Exchange, returned: unknown): Promise<void> | undefined {
  let value = returned;
  const { req, res } = x;
  const behaviour = p.behaviour;
  // A fault in the invocation was answered 500 already (faults.ts).
  if (res.writableEnded) return void discard(value);
  if (value instanceof Outcome) value = settleOutcome(p.metrics, x.log, value, x.single?.cloudevent);
  closeAfter(req, res, p.runtime.draining);
  const how = replyMode(x.mode, behaviour.eventsAnsweredBinary);
  // faas-js-runtime's blanket CORS is on the function's answers only: not on errors, probes or its 404s.
  if (p.corsForEveryOrigin) allowAnyOrigin(res);
  const input = x.input ?? {};
  // A returned stream's code (a generator that logs, a read() that fails) runs while the answer
  // is sent: as part of the invocation. Other answers run no code of the function's after it returned.
  const sent =
    x.single !== undefined && streams(value)
      ? inInvocation(x.single, respond, req, res, value, how, input, behaviour, x.replyTrace)
      : respond(req, res, value, how, input, behaviour, x.replyTrace);
  if (sent instanceof Promise) return sent.then((reply) => answered(p, x, reply));
  answered(p, x, sent);
}

function answered(p: Pipeline, x: Exchange, reply: Reply): void {
  x.sent = reply;
  if (reply.dropped !== undefined) x.log.warn({ headers: reply.dropped }, 'response headers left out');
  if (x.began >= 0) p.metrics!.record((now() - x.began) / 1000, false);
}

function fail(p: Pipeline, x: Exchange, err: unknown): void {
  const { req, res } = x;
  closeAfter(req, res, p.runtime.draining);
  // A body left unread (refused before or while reading it) leaves the connection unusable.
  if (!res.headersSent && hasBody(req) && !req.complete) closeUnread(req, res);
  x.sent = sendError(req, res, err, x.log, {
    format: p.module.errorBody,
    input: x.input,
    asText: x.invoked && p.behaviour.errorsAsText,
    withoutCodes: p.behaviour.withoutErrorCodes,
  });
  if (x.began >= 0) p.metrics!.record((now() - x.began) / 1000, true);
}

/** The request is answered: its invocations end (once their waitUntil work settles), and its connection counts it. */
function finish(p: Pipeline, x: Exchange): void {
  // A batch whose client went away may have been cut short (batch() stops): its answer is not the whole batch's.
  if (x.settleClaim !== undefined) x.settleClaim(x.inBatch && x.res.destroyed, x.sent, outliving(x));
  // However the request ended: its temporary files go (once its waitUntil work settles), and a body still streaming stops.
  if (x.uploads !== undefined) endUploads(x, x.uploads);
  if (x.bodyStream !== undefined && !x.bodyStream.readableEnded) x.bodyStream.destroy();
  const made = x.contexts;
  if (Array.isArray(made)) for (const ctx of made) invocationAnswered(ctx);
  else if (made !== undefined) invocationAnswered(made);
  requestDone(p.runtime, x.req, x.res);
}

/** What a handler answered for at its timeout still runs, if one does: its event's claim waits for it. */
function outliving(x: Exchange): PromiseLike<unknown> | undefined {
  const made = x.contexts;
  if (!Array.isArray(made)) return made === undefined ? undefined : outlivingHandler(made);
  // In a batch, only the event that timed out can be still running: the others had finished.
  for (const ctx of made) {
    const running = outlivingHandler(ctx);
    if (running !== undefined) return running;
  }
  return undefined;
}

/** Whether a returned value is, or holds as its body, a stream (read after the function returned). */
function streams(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  try {
    return value instanceof Readable || (value as { body?: unknown }).body instanceof Readable;
  } catch {
    // A Proxy's trap or a getter threw: respond() reads the value again and answers the failure.
    return false;
  }
}

// One line per answered request, with the logger the request has by then (a single event's trace).
function logWhenAnswered(x: Exchange, level: 'info' | 'debug'): void {
  const started = process.hrtime.bigint();
  x.res.once('finish', () => {
    const responseTime = Number(process.hrtime.bigint() - started) / 1e6;
    x.log[level]({ method: x.req.method, url: withoutQueryValues(x.req.url ?? ''), statusCode: x.res.statusCode, responseTime }, 'request completed');
  });
}
