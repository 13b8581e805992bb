// An invocation and the faces its handler is given: a `handle` function's Context (its first
// argument), a fetch handler's ExecutionContext (its `ctx`), both over one InvocationState that
// the runtime's functions below read. Classes, so every request's shares one shape and their
// methods live on the prototype.
import { AsyncResource } from 'node:async_hooks';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import type { Logger } from './log/log';
import { parseMediaType } from './body/media-type';
import { CloudEventResponse, detectMode, type ResponseDefaults } from './cloudevents/cloudevent';
import type { Trace } from './telemetry/trace';
import { keepInFlight, type Runtime } from './lifecycle/lifecycle';
import { InvocationRecord } from './log/scope';
import type { UploadedFile } from './uploads/uploads';
import type { FetchContext } from './types';

/** What the runtime itself needs back from a context (faults.ts): not part of its public face. */
export interface InvocationParts {
  readonly req: IncomingMessage;
  readonly res: ServerResponse | undefined;
  readonly log: Logger;
  readonly runtime: Runtime | undefined;
}

/** What a context is made of. */
export interface ContextParts {
  readonly req: IncomingMessage;
  /** The invocation's logger, carrying its reqId (and trace). */
  readonly log: Logger;
  readonly reqId?: number;
  /** The request path, as sent. */
  readonly path: string;
  readonly query: Record<string, string | string[]>;
  readonly params: Record<string, string>;
  readonly contentType: string | undefined;
  readonly defaults: ResponseDefaults;
  readonly res?: ServerResponse;
  readonly trace?: Trace;
  readonly runtime?: Runtime;
  /** The handler's data: the parsed body, or the event's data. */
  readonly body?: unknown;
  readonly rawBody?: string | Buffer;
  readonly event?: CloudEvent<unknown>;
  /** A multipart body's files. */
  readonly files?: readonly UploadedFile[];
}

const NO_FILES: readonly UploadedFile[] = Object.freeze([]);

/**
 * An invocation as the runtime holds it, which the handler never sees: one per invocation, read by
 * its two faces (a `handle` function's Context, a fetch handler's ExecutionContext) and by this
 * module's functions (the request path's), and by no other module.
 */
class InvocationState implements InvocationParts {
  controller: AbortController | undefined = undefined;
  record: InvocationRecord | undefined = undefined;
  /** Work handed to waitUntil: what the request's uploads wait for. */
  held: Promise<void>[] | undefined = undefined;
  /** The handler's promise, when its timeout was answered before it settled: its event's claim waits for it. */
  outliving: PromiseLike<unknown> | undefined = undefined;
  /** A fetch handler's events admitted before it ran, with the method and URL of the Request it was handed. */
  admitted: AdmittedRequest | undefined = undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse | undefined,
    /** The logger the invocation was made with, carrying its reqId (and trace). */
    readonly log: Logger,
    readonly runtime: Runtime | undefined,
    readonly trace: Trace | undefined,
    readonly reqId: number,
    readonly defaults: ResponseDefaults,
    /** The event the invocation runs for, if any. */
    readonly event: CloudEvent<unknown> | undefined,
  ) {}

  /** The logger the function is given: once the invocation has ended, one whose lines say it outlived its request. */
  get currentLog(): Logger {
    const record = this.record;
    return record === undefined || record.context !== undefined ? this.log : record.log;
  }

  waitUntil(promise: PromiseLike<unknown>): void {
    // Handed over after the invocation ended (a kept ctx, a timer), its failure says it outlived it.
    const work = keepInFlight(this.runtime, promise, this.currentLog);
    (this.held ??= []).push(work);
    // The invocation goes on until its waitUntil work settles: its lines keep their reqId until then.
    this.record?.holdUntil(work);
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = (this.controller = new AbortController());
      if (this.res !== undefined) abortWhenClientGoes(this.res, controller);
    }
    return this.controller.signal;
  }
}

/**
 * An invocation's state, read from either face's private field by the accessors their classes
 * set (static blocks below): nothing on a context or ctx, own or inherited, leads to it (a symbol
 * key would: Reflect.ownKeys finds it), so the function reaches none of its request's internals.
 */
let contextState: (ctx: Context) => InvocationState;
let executionState: (ctx: ExecutionContext) => InvocationState;

function stateOf(ctx: Invocation): InvocationState {
  return ctx instanceof ExecutionContext ? executionState(ctx) : contextState(ctx);
}

/** An invocation, by the face its handler was given: a `handle` function's Context, or a fetch handler's ctx. */
export type Invocation = Context | ExecutionContext;

/**
 * What the invocation's scope holds for an invocation (scope.ts): made once, when it is entered,
 * and cut loose from the invocation when it ends.
 */
export function invocationRecord(ctx: Invocation): InvocationRecord {
  const state = stateOf(ctx);
  return (state.record ??= new InvocationRecord(ctx, state.log, state.reqId, state.runtime?.log));
}

/** The request of `ctx` has been answered: its invocation ends once its waitUntil work settles. */
export function invocationAnswered(ctx: Invocation): void {
  stateOf(ctx).record?.answered();
}

/** Aborts the invocation's `signal`: its timeout has passed. */
export function abortInvocation(ctx: Invocation, reason: Error): void {
  const state = stateOf(ctx);
  (state.controller ??= new AbortController()).abort(reason);
}

/** The request, response, logger and runtime an invocation was made with. */
export function invocationParts(ctx: Invocation): InvocationParts {
  return stateOf(ctx);
}

/** What a fetch handler's Request carried when its events were admitted first (fetch/events.ts). */
export interface AdmittedRequest {
  readonly method: string;
  readonly url: string;
  readonly events: CloudEvent<unknown> | CloudEvent<unknown>[];
}

/** The events admitted for a fetch handler's invocation, noted for readEvent() of a copy of its Request. */
export function noteAdmitted(ctx: Invocation, admitted: AdmittedRequest): void {
  stateOf(ctx).admitted = admitted;
}

/** The events admitted for the invocation, with its Request's method and URL, if any. */
export function invocationAdmitted(ctx: Invocation): AdmittedRequest | undefined {
  return stateOf(ctx).admitted;
}

/** The work handed to the invocation's waitUntil so far (each never rejects), if any. */
export function heldWork(ctx: Invocation): readonly Promise<void>[] | undefined {
  return stateOf(ctx).held;
}

/** The handler was answered for at its timeout and still runs: `running` is what it returned. */
export function invocationOutlived(ctx: Invocation, running: PromiseLike<unknown>): void {
  stateOf(ctx).outliving = running;
}

/** What the handler returned, when it was answered for at its timeout and may still run. */
export function outlivingHandler(ctx: Invocation): PromiseLike<unknown> | undefined {
  return stateOf(ctx).outliving;
}

/**
 * The mode an event answering the invocation's request is written in when the function names none
 * (eventResponse()): the request's, as replyMode() decides a returned event's: structured for a
 * structured event, binary for any other request; binary always in faas-js-runtime's way.
 */
export function answerMode(ctx: Invocation): 'binary' | 'structured' {
  const { req, defaults } = stateOf(ctx);
  if (defaults.binaryAnswers === true) return 'binary';
  const headers = req.headers;
  return detectMode(headers, parseMediaType(headers['content-type'])) === 'structured' ? 'structured' : 'binary';
}

/** The trace an invocation was made with (its OpenTelemetry span, when there is one). */
export function invocationTrace(ctx: Invocation): Trace | undefined {
  return stateOf(ctx).trace;
}

/** The event an invocation runs for, if any. */
export function invocationEvent(ctx: Invocation): CloudEvent<unknown> | undefined {
  return stateOf(ctx).event;
}

/** Where the invocation's signal comes from, made on first use (a Request's `signal`). */
export function signalSource(ctx: Invocation): { readonly signal: AbortSignal } {
  return stateOf(ctx);
}

/**
 * `Data` is the type of the incoming event's data (`CloudEventFunction<Data>` sets it). Query
 * keys are also set on the context itself at run time, as the function contract says, but the
 * type leaves them out: a misspelt member (`context.qeury`) is then an error, not an `unknown`.
 * Typed code reads them from `context.query`.
 */
export class Context<Data = unknown> {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly httpVersion: string;
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  /** The request path, without the query string, as it was sent (not percent-decoded). */
  readonly path: string;
  /** The query string as an object; a repeated key gives an array. */
  readonly query: Record<string, string | string[]>;
  /** Path parameters of the matched route (`/items/:id` gives `params.id`). */
  readonly params: Record<string, string>;
  /** The request's media type, lowercase and without parameters, such as `application/json`. */
  readonly contentType: string | undefined;
  /** The request body as the handler's second argument receives it. */
  body: unknown;
  /**
   * The body as it arrived, when the `includeRaw` option is on: text for textual media types
   * (JSON, XML, forms, `text/*`), as faas-js-runtime gives it; the bytes for anything else.
   */
  rawBody: string | Buffer | undefined;
  /** The incoming CloudEvent, when the request is one. */
  cloudevent: CloudEvent<Data> | undefined;
  /** The files of a multipart/form-data body (its other fields are the body); empty for any other body. */
  readonly files: readonly UploadedFile[];
  readonly #state: InvocationState;

  constructor(parts: ContextParts) {
    const { req, log, query } = parts;
    this.#state = new InvocationState(req, parts.res, log, parts.runtime, parts.trace, parts.reqId ?? 1, parts.defaults, parts.event);
    this.method = req.method ?? 'GET';
    this.headers = req.headers;
    this.httpVersion = req.httpVersion;
    this.httpVersionMajor = req.httpVersionMajor;
    this.httpVersionMinor = req.httpVersionMinor;
    this.path = parts.path;
    this.query = query;
    this.params = parts.params;
    this.contentType = parts.contentType;
    this.body = parts.body;
    this.rawBody = parts.rawBody;
    this.files = parts.files ?? NO_FILES;
    this.cloudevent = parts.event as CloudEvent<Data> | undefined;
    // A query key never replaces a field or method of the context (`?method=DELETE` leaves
    // `context.method` alone) nor anything inherited (`?constructor=x`). Contexts made by
    // `sharingQuery` have the keys on their prototype already.
    if (new.target === Context) {
      const self = this as unknown as Record<string, unknown>;
      for (const key in query) {
        if (!(key in self)) self[key] = query[key];
      }
    }
  }

  /**
   * The logger; its lines carry this request's `reqId`, until the invocation has ended (see scope.ts).
   * A getter, so a copy of the context holds no logger internals.
   */
  get log(): Logger {
    // Once the invocation has ended, what still logs through it says it outlived its request.
    return this.#state.currentLog;
  }

  static {
    contextState = (ctx) => ctx.#state;
  }

  /**
   * The W3C `traceparent` for calls this invocation makes: the trace the request (or its event)
   * arrived in, with this invocation's span. Undefined when none arrived.
   * `fetch(url, { headers: { traceparent: context.traceparent } })` continues the trace.
   */
  get traceparent(): string | undefined {
    return this.#state.trace?.traceparent;
  }

  /** The `tracestate` that came with the trace, to pass on beside `traceparent`. */
  get tracestate(): string | undefined {
    return this.#state.trace?.traceState;
  }

  /**
   * Work to finish after the answer: the function returns at once, and `promise` goes on. It
   * counts as in flight: a SIGTERM (stop()) waits for it within the grace period, and shutdown()
   * runs after it. Its failure is logged with this invocation's reqId and trace, never an
   * unhandled rejection.
   */
  waitUntil(promise: PromiseLike<unknown>): void {
    this.#state.waitUntil(promise);
  }

  /**
   * The request itself. A getter, not a field: `{ ...context }` (a copy a function may log or
   * return) then holds data only, not the socket and everything behind it.
   */
  get req(): IncomingMessage {
    return this.#state.req;
  }

  /**
   * Aborted when the request should stop: the function's timeout passed, or the client went
   * away before its answer. Made on first use, so requests that never look cost nothing.
   */
  get signal(): AbortSignal {
    return this.#state.signal;
  }

  /**
   * Starts a CloudEvent response: chain `.id()`, `.source()`, `.type()`, `.version()`, end with
   * `.response()`, a `CloudEvent<T>` of the data given here.
   */
  cloudEventResponse<T = undefined>(data?: T): CloudEventResponse<T> {
    return new CloudEventResponse(data as T, this.#state.defaults);
  }
}

const NO_PROPS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * A fetch handler's `ctx`: the invocation's waitUntil, logger and reqId, in the shape Workers code
 * expects. The invocation's only face: a fetch handler has no Context.
 */
export class ExecutionContext implements FetchContext {
  readonly reqId: number;
  readonly #state: InvocationState;

  constructor(state: InvocationState) {
    this.#state = state;
    this.reqId = state.reqId;
  }

  waitUntil(promise: PromiseLike<unknown>): void {
    this.#state.waitUntil(promise);
  }

  passThroughOnException(): void {}

  /** Workers' props (what a binding passes on): none here, the same empty object for every request. */
  get props(): Readonly<Record<string, unknown>> {
    return NO_PROPS;
  }

  /** The request's logger, as a Context's `log`. */
  get log(): Logger {
    return this.#state.currentLog;
  }

  static {
    executionState = (ctx) => ctx.#state;
  }
}

/** A fetch handler's invocation: the `ctx` it is called with. */
export function fetchInvocation(
  req: IncomingMessage,
  res: ServerResponse,
  log: Logger,
  runtime: Runtime,
  trace: Trace | undefined,
  reqId: number,
  defaults: ResponseDefaults,
  event: CloudEvent<unknown> | undefined,
): ExecutionContext {
  return new ExecutionContext(new InvocationState(req, res, log, runtime, trace, reqId, defaults, event));
}

// One 'close' listener per response, however many contexts (a batch's events) ask for a signal.
// Each signal is aborted in the scope of the invocation that asked for it: what its 'abort'
// listeners log carries that invocation's reqId and trace, and what they throw is its fault.
const watching = new WeakMap<ServerResponse, Map<AbortController, InScope>>();
type InScope = (abort: () => void) => void;

/** The invocations of `res`'s request whose signal was asked for are aborted now, with `reason` (the drain cuts the request). */
export function abortInvocations(res: ServerResponse, reason: Error): void {
  const controllers = watching.get(res);
  if (controllers !== undefined) for (const [c, inScope] of controllers) inScope(() => c.abort(reason));
}

function abortWhenClientGoes(res: ServerResponse, controller: AbortController): void {
  if (res.writableFinished) return;
  const gone = () => new Error('the client closed the connection');
  // Asked for only after the client went away: abort at once rather than wait for a 'close' that has passed.
  if (res.closed || res.destroyed) return void controller.abort(gone());
  let controllers = watching.get(res);
  if (controllers === undefined) {
    const all = (controllers = new Map());
    watching.set(res, all);
    res.once('close', () => {
      if (!res.writableFinished) for (const [c, inScope] of all) inScope(() => c.abort(gone()));
    });
  }
  controllers.set(
    controller,
    AsyncResource.bind((abort: () => void) => abort()),
  );
}

/**
 * `context.contentType`, one way for the server and funcrun/testing: the parsed media type
 * (`application/json`), or with FUNC_COMPAT=faas-js-runtime the header as sent.
 */
export function contentTypeOf(header: string | undefined, asSent: boolean): string | undefined {
  return asSent ? header : parseMediaType(header)?.type;
}

type ContextClass = new (parts: ContextParts) => Context;

/**
 * A Context class whose instances find the query keys on a prototype made once: the contexts of
 * a batch's events share one request's query, so copying it onto each would cost events × keys.
 */
export function sharingQuery(query: Record<string, string | string[]>): ContextClass {
  class BatchContext extends Context {}
  const proto = BatchContext.prototype as unknown as Record<string, unknown>;
  for (const key in query) if (!(key in proto)) proto[key] = query[key];
  return BatchContext;
}
