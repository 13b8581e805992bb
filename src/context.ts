// The handler's first argument. A class, so every request's context shares one shape and
// its method lives on the prototype.
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
 * A context's own state, which the handler never sees: one record per context, read by the class
 * and by this module's functions (the request path's), and by no other module.
 */
interface ContextState extends InvocationParts {
  readonly trace: Trace | undefined;
  readonly reqId: number;
  readonly defaults: ResponseDefaults;
  controller: AbortController | undefined;
  record: InvocationRecord | undefined;
  /** Work handed to waitUntil: what the request's uploads wait for. */
  held: Promise<void>[] | undefined;
  /** The handler's promise, when its timeout was answered before it settled: its event's claim waits for it. */
  outliving: PromiseLike<unknown> | undefined;
}

/**
 * The key of a context's state: not exported, so only this module reaches it. An accessor on the
 * prototype, not an own property, so that `{ ...context }` and util.inspect leave it out.
 */
const STATE = Symbol('funcrun.context.state');

/**
 * What the invocation's scope holds for a context (scope.ts): made once, when the invocation is
 * entered, and cut loose from the context when it ends.
 */
export function invocationRecord(ctx: Context): InvocationRecord {
  const state = ctx[STATE];
  return (state.record ??= new InvocationRecord(ctx, state.log, state.reqId, state.runtime?.log));
}

/** The request of `ctx` has been answered: its invocation ends once its waitUntil work settles. */
export function invocationAnswered(ctx: Context): void {
  ctx[STATE].record?.answered();
}

/** Aborts the context's `signal`: its timeout has passed. */
export function abortInvocation(ctx: Context, reason: Error): void {
  const state = ctx[STATE];
  (state.controller ??= new AbortController()).abort(reason);
}

/** The request, response, logger and runtime a context was made with. */
export function invocationParts(ctx: Context): InvocationParts {
  return ctx[STATE];
}

/** The work handed to the context's waitUntil so far (each never rejects), if any. */
export function heldWork(ctx: Context): readonly Promise<void>[] | undefined {
  return ctx[STATE].held;
}

/** The handler was answered for at its timeout and still runs: `running` is what it returned. */
export function invocationOutlived(ctx: Context, running: PromiseLike<unknown>): void {
  ctx[STATE].outliving = running;
}

/** What the handler returned, when it was answered for at its timeout and may still run. */
export function outlivingHandler(ctx: Context): PromiseLike<unknown> | undefined {
  return ctx[STATE].outliving;
}

/**
 * The mode an event answering the context's request is written in when the function names none
 * (eventResponse()): the request's, as replyMode() decides a returned event's: structured for a
 * structured event, binary for any other request; binary always in faas-js-runtime's way.
 */
export function answerMode(ctx: Context): 'binary' | 'structured' {
  const { req, defaults } = ctx[STATE];
  if (defaults.binaryAnswers === true) return 'binary';
  const headers = req.headers;
  return detectMode(headers, parseMediaType(headers['content-type'])) === 'structured' ? 'structured' : 'binary';
}

/** The trace a context was made with (its OpenTelemetry span, when there is one). */
export function invocationTrace(ctx: Context): Trace | undefined {
  return ctx[STATE].trace;
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
  readonly #state: ContextState;

  constructor(parts: ContextParts) {
    const { req, log, query } = parts;
    this.#state = {
      req,
      res: parts.res,
      log,
      runtime: parts.runtime,
      trace: parts.trace,
      reqId: parts.reqId ?? 1,
      defaults: parts.defaults,
      controller: undefined,
      record: undefined,
      held: undefined,
      outliving: undefined,
    };
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
    const { record, log } = this.#state;
    return record === undefined || record.context !== undefined ? log : record.log;
  }

  /** The context's state, for this module's functions: see STATE. */
  get [STATE](): ContextState {
    return this.#state;
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
    const state = this.#state;
    const work = keepInFlight(state.runtime, promise, state.log);
    (state.held ??= []).push(work);
    // The invocation goes on until its waitUntil work settles: its lines keep their reqId until then.
    state.record?.holdUntil(work);
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
    const state = this.#state;
    if (state.controller === undefined) {
      const controller = (state.controller = new AbortController());
      if (state.res !== undefined) abortWhenClientGoes(state.res, controller);
    }
    return state.controller.signal;
  }

  /**
   * Starts a CloudEvent response: chain `.id()`, `.source()`, `.type()`, `.version()`, end with
   * `.response()`, a `CloudEvent<T>` of the data given here.
   */
  cloudEventResponse<T = undefined>(data?: T): CloudEventResponse<T> {
    return new CloudEventResponse(data as T, this.#state.defaults);
  }
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
