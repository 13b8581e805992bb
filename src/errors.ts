// The one place where a thrown value becomes a response: its status, JSON body and headers.
// A thrown value may be anything a function made: a Proxy, an object whose getters throw, a
// cyclic null-prototype object. It is read once, defensively, into plain facts; nothing after
// that touches it again, and a last-resort path answers when even that goes wrong.
import { STATUS_CODES, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { brand } from './util/brand';
import { safeHeaders, type Dropped } from './http/headers';
import type { Logger } from './log/log';
import { REDACTED } from './log/serializers';
import { describeReceived, describeThrown, isCredentialOf, loggedMessage, pathOf, UNREADABLE } from './log/redact';
import { isInstance, isPartOf, isReceived, type RequestInput } from './body/provenance';
import { JSON_TYPE, send, TEXT } from './send';
import { ERROR_CODES, type ErrorCode } from './error-codes';
import { cutAnswer, lastAnswer } from './http/connections';

/** An error with an HTTP status. Its message is shown to the client when the status is below 500. */
export class HttpError extends Error {
  readonly statusCode: number;
  /** Extra fields for the JSON body (for example where a parse failed). */
  readonly details?: Record<string, unknown>;
  /** Response headers that go with this error (for example `Allow` on a 405). */
  readonly headers?: Record<string, string>;
  /** A stable, machine-readable name for the error, sent as the body's `code` (funcrun's own: docs/errors.md). */
  readonly code?: string;

  constructor(
    statusCode: number,
    message: string,
    options?: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown; code?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.details = options?.details;
    this.headers = options?.headers;
    this.code = options?.code;
  }

  /**
   * The error as a web Response: funcrun's JSON error body, status and headers. Frameworks that
   * answer whatever a handler throws ask an error for its own answer this way (Hono's default
   * error handler answers an error with `getResponse()` as it would its HTTPException), so that a
   * fetch handler's app that catches everything still answers readEvent()'s 400 or a body limit's
   * 413 as funcrun does. The module's errorBody() does not apply: the app sends it, not funcrun.
   */
  getResponse(): Response {
    const headers = new Headers();
    // Only those node would send (a Response refuses others, and this must not throw).
    for (const [name, value] of Object.entries(safeHeaders(this.headers))) if (typeof value === 'string') headers.set(name, value);
    headers.set('content-type', JSON_TYPE);
    return new Response(JSON.stringify(errorBody(this.statusCode, this)), { status: this.statusCode, headers });
  }
}
brand(HttpError, 'HttpError');

/** One of funcrun's own errors: its status comes from the table of codes (error-codes.ts). */
export function runtimeError(code: ErrorCode, message: string, options?: { details?: Record<string, unknown>; headers?: Record<string, string> }): HttpError {
  return new HttpError(ERROR_CODES[code].status, message, { ...options, code });
}

/**
 * The 504 of an answer whose body produced neither its first chunk nor its end within the
 * request's timeout: a web answer's (fetch/web-response.ts) or a returned Readable's (respond.ts).
 */
export function firstChunkTimeout(): HttpError {
  return runtimeError('FUNCRUN_TIMEOUT', "the function's response did not produce its first chunk within the timeout");
}

export interface ErrorBody {
  statusCode: number;
  /** Set on funcrun's own errors: a stable name to match (docs/errors.md). */
  code?: string;
  error: string;
  message: string;
  [detail: string]: unknown;
}

/** What a thrown value says about itself, read once inside `try`. */
export interface Thrown {
  status: number;
  /** The thrown message, for statuses below 500 only. */
  message?: string;
  details?: Record<string, unknown>;
  headers?: OutgoingHttpHeaders;
  /** The error's stable code, when it is one of funcrun's own (or an HttpError given one). */
  code?: string;
  /**
   * What the log gets: `{ err }` for an Error, `{ thrown }` describing a value that is not one, or
   * `{ returned }` for a returned value that cannot be read at all (UnreadableReturn).
   */
  logged: { err: unknown } | { thrown: string } | { returned: string };
}

// How a value that cannot be read at all is logged.

/**
 * Whether a value of the function's cannot be read at all: a revoked Proxy, or one whose
 * getPrototypeOf trap throws, fails whatever it is asked (its class, its `then`), and what it
 * throws then would be logged as funcrun's own error. Never throws.
 */
export function isUnreadable(value: unknown): boolean {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  try {
    Object.getPrototypeOf(value);
    return false;
  } catch {
    return true;
  }
}

/**
 * Thrown by funcrun for a returned value that cannot be read (isUnreadable()): answered 500, and
 * logged as what the function did (`returned: '[unreadable value]'`), not as an error of funcrun's.
 */
export class UnreadableReturn {}

/**
 * An Error the function returned (or gave as a structured answer's `body`) rather than threw:
 * answered as faas-js-runtime's fastify answers an Error sent as the reply, its status from its
 * own `statusCode` (400 to 599, else 500), in funcrun's JSON error body, in either mode.
 */
export class ReturnedError {
  constructor(readonly error: Error) {}
}

/** `failure` unwrapped when it is a ReturnedError; asked without throwing (a revoked Proxy throws when asked its class). */
export function returnedError(failure: unknown): Error | undefined {
  try {
    return failure instanceof ReturnedError ? failure.error : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A status as fastify's `reply.code()` takes it (faas-js-runtime's returned `statusCode`, and the
 * `code` of what it threw): a number or numeric text, cut to an integer; undefined for a falsy one
 * (faas-js-runtime sets none) and for any outside 200 to 599 (a 1xx is no final answer).
 */
export function fastifyStatus(value: unknown): number | 'invalid' | undefined {
  if (!value) return undefined;
  const number = typeof value === 'number' || typeof value === 'string' ? Math.trunc(Number(value)) : NaN;
  return number >= 200 && number <= 599 ? number : 'invalid';
}

function read<T>(get: () => T): T | undefined {
  try {
    return get();
  } catch {
    return undefined;
  }
}

function errorStatus(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599 ? value : undefined;
}

/**
 * The status for a thrown value: its own numeric `statusCode` (400 to 599), else a numeric
 * `code` in that range (faas-js-runtime's convention), else 500. `codeOnly`: faas-js-runtime's
 * own reading, where a `statusCode` alone is a 500 and the `code` is read as fastify reads a
 * status (fastifyStatus()).
 */
export function statusOf(thrown: unknown, codeOnly = false): number {
  if (thrown === null || (typeof thrown !== 'object' && typeof thrown !== 'function')) return 500;
  const value = thrown as { statusCode?: unknown; code?: unknown };
  if (codeOnly) {
    // faas-js-runtime answers with the status its `code` gives fastify's reply.code(): numeric text, any final status.
    const status = fastifyStatus(read(() => value.code));
    return typeof status === 'number' ? status : 500;
  }
  return errorStatus(read(() => value.statusCode)) ?? errorStatus(read(() => value.code)) ?? 500;
}

// Messages are the client's to read below 500; a runaway one is cut rather than echoed whole.
const MAX_MESSAGE = 1024;
const MAX_CODE = 100;

/**
 * Reads a thrown value into plain facts. Never throws. `input` is what the request was parsed
 * into: a function that throws that (or a part of it) has failed; the client does not get to
 * pick the status, message or headers. `asFaasJsRuntime`: a function's error as faas-js-runtime
 * reads it, the status from `code` only and no headers (funcrun's own errors keep theirs).
 * `faultOnly`: a fetch handler's throw, a 500 whatever it carries (funcrun's own errors keep theirs).
 */
export function readThrown(thrown: unknown, dropped?: Dropped[], input?: RequestInput, asFaasJsRuntime = false, faultOnly = false): Thrown {
  const isObject = thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function');
  if (isObject && read(() => thrown instanceof UnreadableReturn) === true) return { status: 500, logged: { returned: UNREADABLE } };
  // Parsed data is plain objects and arrays, walked; a class instance (every Error) is compared
  // only with the request's own objects, such as the received event, so throwing costs no walk.
  const fromRequest = (): boolean => (isInstance(thrown as object) ? isReceived(thrown, input!) : isPartOf(thrown as object, input!));
  const received = isObject && input !== undefined ? read(fromRequest) : false;
  if (received !== false) {
    // Its shape, not its values: a request's headers and body hold credentials. (One that cannot be read is told as it can be.)
    return { status: 500, logged: { thrown: received === true ? describeReceived(thrown as object) : describeThrown(thrown) } };
  }
  // A request's credential (`throw context.headers.authorization`) is not written out either.
  if (typeof thrown === 'string' && input?.request !== undefined && isCredentialOf(thrown, input.request)) {
    return { status: 500, logged: { thrown: REDACTED } };
  }
  const ours = isObject && read(() => thrown instanceof HttpError) === true;
  const faas = asFaasJsRuntime && !ours;
  const isError = ours || (isObject && read(() => thrown instanceof Error) === true);
  // Neither its status nor its message, headers or code: a fetch handler answers with a Response.
  if (faultOnly && !ours) return { status: 500, logged: isError ? { err: thrown } : { thrown: describeThrown(thrown) } };
  const status = statusOf(thrown, faas);
  const facts: Thrown = { status, logged: isError ? { err: thrown } : { thrown: describeThrown(thrown) } };
  if (!isObject) return facts;
  const value = thrown as { message?: unknown; details?: unknown; headers?: unknown };
  // Read at any status; errorBodyOf() shows them below 500 only.
  const message = read(() => value.message);
  if (typeof message === 'string' && message !== '') facts.message = message.length > MAX_MESSAGE ? message.slice(0, MAX_MESSAGE) + '…' : message;
  if (ours) {
    facts.details = read(() => copy(value.details));
    const code = read(() => (value as { code?: unknown }).code);
    if (typeof code === 'string' && code !== '') facts.code = code.length > MAX_CODE ? code.slice(0, MAX_CODE) : code;
  }
  // Headers a thrown error asks for (`Allow` on a 405, `WWW-Authenticate` on a 401): from funcrun's
  // HttpError, or from an error that chose its own 4xx status (a library error that happens to
  // carry `headers` and no status adds none).
  if (ours || (status < 500 && !faas)) {
    const headers = read(() => value.headers);
    if (headers !== null && typeof headers === 'object') {
      // Headers that came from the request (`headers: context.headers`, a part of the body): the
      // client would choose the answer's headers. The same rule as for returned responses: a 500.
      if (input !== undefined && read(() => isPartOf(headers, input)) !== false) return { status: 500, logged: facts.logged };
      facts.headers = safeHeaders(headers, dropped);
    }
  }
  return facts;
}

function copy(details: unknown): Record<string, unknown> | undefined {
  if (details === null || typeof details !== 'object') return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(details)) out[key] = (details as Record<string, unknown>)[key];
  return out;
}

/**
 * The JSON body for an error: `{ statusCode, error, message }`, fastify's shape. Below 500 the
 * thrown message is the client's to read; at 500 and above the body is generic so that nothing
 * internal leaks (the detail goes to the log).
 */
export function errorBody(status: number, thrown: unknown): ErrorBody {
  return errorBodyOf({ ...readThrown(thrown), status });
}

function errorBodyOf(facts: Thrown, withoutCodes = false): ErrorBody {
  const error = STATUS_CODES[facts.status] ?? 'Error';
  const code = facts.code === undefined || withoutCodes ? undefined : { code: facts.code };
  if (facts.status >= 500) return { statusCode: facts.status, ...code, error, message: error };
  return { statusCode: facts.status, ...code, error, message: facts.message ?? error, ...facts.details };
}

/** Shapes an error body: the module's `errorBody(body, thrown)`, when it has one. */
export type ErrorFormat = (body: ErrorBody, thrown: unknown) => unknown;

/** How an error is answered, beside what was thrown. */
export interface ErrorStyle {
  /** The module's `errorBody`, when it shapes its own error bodies. */
  format?: ErrorFormat;
  /** What the request was parsed into: thrown back, it is a failure (provenance.ts). */
  input?: RequestInput;
  /** faas-js-runtime's reading of a function's error: the message as text. */
  asText?: boolean;
  /** faas-js-runtime's bodies: without funcrun's error codes. */
  withoutCodes?: boolean;
  /** Fields funcrun itself wrote, safe at any status (why readiness fails). */
  said?: Record<string, string>;
  /** A fetch handler's throw: a fault, a 500 whatever it carries; only funcrun's own errors keep their status. */
  faultOnly?: boolean;
}

/** The JSON text of an error body. Never throws: a failing format or details fall back to the plain body. */
export function errorJson(facts: Thrown, thrown: unknown, log: Logger, style: ErrorStyle = {}): string {
  const format = style.format;
  const body = style.said === undefined ? errorBodyOf(facts, style.withoutCodes) : { ...errorBodyOf(facts, style.withoutCodes), ...style.said };
  if (format !== undefined) {
    try {
      const value = format(body, thrown);
      // An error body is data: a stream (or any class instance) there would leak its state and
      // its file descriptor; the plain body is sent instead.
      if (value instanceof Readable) {
        value.on('error', () => undefined);
        value.destroy();
        throw new Error('errorBody() returned a stream');
      }
      const shaped = JSON.stringify(value);
      if (shaped !== undefined) return shaped;
    } catch (err) {
      quietly(() => log.error(err, 'errorBody() failed'));
    }
  }
  try {
    return JSON.stringify(body);
  } catch {
    // Details that cannot be serialised (cyclic, BigInt): the body without them.
    return JSON.stringify({ statusCode: body.statusCode, code: body.code, error: body.error, message: body.message });
  }
}

// 5xx answers that are outcomes, not failures: the function's retry(), and a store outage (its
// store logs the outage once). The request's own line says more, where they are raised.
const LOGGED_WHERE_RAISED = new Set<string | undefined>(['FUNCRUN_RETRY', 'FUNCRUN_STORE_UNAVAILABLE']);
// 5xx answers to what a client sent (a transfer coding funcrun does not read): refusals, logged as a 4xx is, not server errors any client could flood the log with.
const CLIENTS_DOING = new Set<string | undefined>(['FUNCRUN_TRANSFER_ENCODING']);

/** What sendError() sent. */
export interface SentError {
  status: number;
  headers: OutgoingHttpHeaders;
  body: string;
}

/**
 * The one place a thrown value becomes a response. 5xx details go to the log, never to the client.
 * Returns what it sent (undefined when it could only cut the connection). Never throws.
 */
export function sendError(req: IncomingMessage, res: ServerResponse, thrown: unknown, log: Logger, style: ErrorStyle = {}): SentError | undefined {
  try {
    const { input, asText = false, faultOnly = false } = style;
    const dropped: Dropped[] = [];
    const facts = readThrown(thrown, dropped, input, asText, faultOnly);
    const request = { method: req.method, path: pathOf(req.url), statusCode: facts.status };
    if (facts.status >= 500 && !LOGGED_WHERE_RAISED.has(facts.code) && !CLIENTS_DOING.has(facts.code))
      quietly(() => log.error({ ...facts.logged, ...request }, 'request failed'));
    else quietly(() => log.debug({ ...request, message: loggedMessage(facts.message, req.url) }, 'request rejected'));
    if (dropped.length > 0) quietly(() => log.warn({ headers: dropped }, 'error headers left out'));
    if (res.headersSent || res.destroyed) {
      // Part of another answer is on the wire: the only honest signal left is a cut connection,
      // once what was written of it has reached the client (connections.ts).
      cutAnswer(res);
      return undefined;
    }
    for (const name of res.getHeaderNames()) {
      if (!name.startsWith('access-control-') && name !== 'vary' && name !== 'connection') res.removeHeader(name);
    }
    const headers: OutgoingHttpHeaders = { ...facts.headers, 'content-type': asText ? TEXT : JSON_TYPE };
    // A writeHead that failed (a header node refused) leaves its reason phrase behind: not "500 OK".
    res.statusMessage = '';
    // A body we stopped reading leaves the connection unusable.
    if (facts.status === 413) headers.connection = 'close';
    // faas-js-runtime's compatibility: the message as text. At 5xx it is generic there too.
    const body = asText ? errorBodyOf(facts).message : errorJson(facts, thrown, log, style);
    send(req, res, facts.status, headers, body);
    return { status: facts.status, headers, body };
  } catch (err) {
    lastResort(res, log, err);
    return undefined;
  }
}

const INTERNAL = JSON.stringify({ statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });

/**
 * When answering failed: a bare 500 if nothing was written yet, else a cut connection. Either
 * closes the connection, as its last answer: a request pipelined behind it is not run
 * (connections.ts). Never throws.
 */
export function lastResort(res: ServerResponse, log: Logger, err: unknown): void {
  quietly(() => log.error(err instanceof Error ? err : { thrown: describeThrown(err) }, 'answering the request failed'));
  try {
    if (res.headersSent || res.destroyed) return void cutAnswer(res);
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    res.statusMessage = '';
    lastAnswer(res.req, res);
    res.writeHead(500, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(INTERNAL) });
    res.end(INTERNAL);
  } catch {
    quietly(() => res.destroy());
  }
}

/** Runs `fn` and ignores what it throws: for logging on paths that must not fail. */
export function quietly(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // Nothing left to tell it to.
  }
}
