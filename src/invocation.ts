// Step 8 of a request (request.ts): the function called, with the request's data or once per
// event of a batch, each invocation with a context of its own; with the frozen `this`
// faas-js-runtime gives, and within the request's timeout.
import type { CloudEvent } from 'cloudevents';
import { asCloudEvent } from './cloudevents/cloudevent';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { InvocationRecord } from './log/scope';
import {
  abortInvocation,
  Context,
  fetchInvocation,
  invocationOutlived,
  invocationRecord,
  invocationTrace,
  sharingQuery,
  type ContextParts,
  type ExecutionContext,
  type Invocation,
} from './context';
import { eventTrace, sibling, type Trace } from './telemetry/trace';
import type { Tracing } from './telemetry/otel';
import type { Logger } from './log/log';
import { HttpError, isUnreadable, runtimeError, UnreadableReturn } from './errors';
import type { ErrorCode } from './error-codes';
import { discard } from './respond';
import { inScope, invocationScope } from './log/scope';
import { isThenable, now, settleWithin } from './lifecycle/deadline';
import { settleOutcome } from './cloudevents/outcomes';
import type { FunctionDestination } from './routing/routes';
import type { Input } from './input';
import type { Exchange, Pipeline } from './exchange';

// A declared handler's `this`, as faas-js-runtime binds it: empty and frozen, not the global object.
/** What a handler's `this` is: nothing of funcrun's. */
export const HANDLER_THIS = Object.freeze({});

/** A handler as the runtime calls it: a `handle` function with its Context, a fetch handler's call with its ctx. */
type Handler<C extends Invocation, D> = (ctx: C, data: D) => unknown;

/** Calls a handler: `invoke(fn, context, data, deadline)`, its value or a promise of it. */
export type Invoke = <C extends Invocation, D>(fn: Handler<C, D>, ctx: C, data: D, deadline: number) => unknown;

/**
 * The invoker for a timeout in ms (0: none). A handler still running when the timeout passes is
 * answered 504 and its context's signal aborted (the handler decides whether to stop; its late
 * result is dropped). One that held the event loop past it (CPU-bound, no await) is answered with
 * what it returned, and a warning logged. The timeout is the request's: a batch's events share it.
 */
export function timedInvoker(timeout: number): Invoke {
  const tooLate = () => runtimeError('FUNCRUN_TIMEOUT', `the function did not answer within ${timeout} ms`);
  return function invoke(fn, ctx, data, deadline) {
    const left = timeout > 0 ? deadline - now() : Infinity;
    if (left <= 0) throw tooLate();
    // In the invocation's scope (scope.ts), when it is on: `log` and fault attribution find ctx;
    // and in its OpenTelemetry span's context, when the application traces (otel.ts).
    const scope = invocationScope();
    const otel = invocationTrace(ctx)?.otel;
    const result =
      otel !== undefined
        ? otel.within(enter, scope, fn, ctx, data)
        : scope === undefined
          ? fn.call(HANDLER_THIS, ctx, data)
          : inScope(scope, invocationRecord(ctx), callHandler, fn, ctx, data);
    if (timeout <= 0) return result;
    // The timer cannot fire while the handler holds the event loop: a value in hand is answered
    // all the same (a 504 would have a broker deliver the event again, and it would run twice).
    const remaining = deadline - now();
    if (remaining < 0) outranTimeout(ctx, timeout, -remaining);
    if (!isThenable(result)) return result;
    // A result that comes after the 504 is dropped; a stream in it is closed.
    return settleWithin(
      result,
      remaining,
      () => {
        const error = tooLate();
        // Its event's claim holds until it has really finished (idempotency.ts).
        invocationOutlived(ctx, result);
        abortInvocation(ctx, error);
        return error;
      },
      discard,
    );
  };
}

/** One warning for an invocation whose synchronous part ran past its timeout: nothing could interrupt it. */
function outranTimeout(ctx: Invocation, timeout: number, over: number): void {
  const overrun = Math.ceil(over);
  ctx.log.warn({ timeout, overrun }, `the invocation outran its timeout by ${overrun} ms while blocking the event loop`);
}

/**
 * `value`, or a 504 naming `what` once `deadline` (`now()` time) passes; with a timeout
 * of 0 (none), `value` as it is.
 */
export async function beforeDeadline<T>(value: T | Promise<T>, timeout: number, deadline: number, what: string, code: ErrorCode): Promise<T> {
  if (timeout <= 0 || !isThenable(value)) return value;
  return settleWithin(value, deadline - now(), () => runtimeError(code, `${what} did not finish within ${timeout} ms`));
}

type ContextClass = new (parts: ContextParts) => Context;

/** What a batch's invocations share: made once per batch, in callFunction(). */
interface BatchCall {
  readonly p: Pipeline;
  readonly x: Exchange;
  readonly input: Input;
  readonly destination: FunctionDestination;
  readonly events: CloudEvent<unknown>[];
  /** The contexts made so far, the request's (x.contexts). */
  readonly contexts: Context[];
  /** With the application's OpenTelemetry, each invocation is a span of its tracer. */
  readonly otel: Tracing | undefined;
  /** The spans begun so far, ended with the answer. */
  readonly spans: Trace[];
}

/** What the function returned (or a promise of it): called with the request's data, or once per event. */
export function callFunction(p: Pipeline, x: Exchange, destination: FunctionDestination, input: Input): unknown {
  const { behaviour, metrics } = p;
  const otel = p.tracing?.active() === true ? p.tracing : undefined;
  const events = input.events;
  // Every context is made before the call, so queueing ends here.
  if (events === undefined) {
    const ctx = singleContext(p, x, input, destination.route, otel, undefined);
    if (metrics !== undefined) metrics.queued((now() - x.began) / 1000);
    x.invoked = true;
    return p.invoke(destination.fn, ctx, input.data, x.deadline);
  }
  if (metrics !== undefined) metrics.queued((now() - x.began) / 1000);
  x.invoked = true;
  if (Array.isArray(events)) {
    const contexts: Context[] = (x.contexts = []);
    return batch({ p, x, input, destination, events, contexts, otel, spans: [] });
  }
  const ctx = singleContext(p, x, input, destination.route, otel, events);
  return p.invoke(destination.fn, ctx, behaviour.eventAsArgument ? events : events.data, x.deadline);
}

/**
 * A fetch handler's invocation (fetch/serve.ts): its `ctx`, whose waitUntil, signal, logger and
 * scope the handler's Request is made of too; called with `p.invoke`, within the request's
 * timeout. `admitted`: the events read and admitted before it (fetch/events.ts), if any; a single
 * one is the invocation's event, whose trace it runs in.
 */
export function fetchContext(p: Pipeline, x: Exchange, admitted: CloudEvent<unknown> | CloudEvent<unknown>[] | undefined): ExecutionContext {
  const event = Array.isArray(admitted) ? undefined : admitted;
  const trace = ownTrace(p, x, undefined, p.tracing?.active() === true ? p.tracing : undefined, event);
  const ctx = fetchInvocation(x.req, x.res, x.log, p.runtime, trace ?? x.trace, x.reqId, p.defaults, event);
  x.contexts = ctx;
  // Nothing is read before a fetch handler is called, unless its events are admitted first: its
  // queue latency is that reading, else none (and the clock is not read for it).
  if (p.metrics !== undefined) p.metrics.queued(admitted !== undefined ? (now() - x.began) / 1000 : 0);
  x.invoked = true;
  return ctx;
}

/** `route(event)`, its refusal naming the event's place in the batch, as an invalid event's does. */
function routedAt(route: (event: CloudEvent<unknown>) => void, event: CloudEvent<unknown>, index: number): void {
  try {
    route(event);
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    throw new HttpError(err.statusCode, `event [${index}]: ${err.message}`, { code: err.code, details: { ...err.details, index } });
  }
}

/**
 * A batch (`application/cloudevents-batch+json`): the handler runs once per event, in order.
 * The CloudEvents it returns are answered as a batch; values that are not events are not sent.
 */
async function batch(call: BatchCall): Promise<CloudEvent<unknown>[] | undefined> {
  const { p, x } = call;
  const fn = call.destination.fn;
  const asArgument = p.behaviour.eventAsArgument;
  // A batch's events share the request's query: one prototype holds its keys for all of them.
  const ContextClass = x.search === undefined ? Context : sharingQuery(call.input.query);
  const replies: CloudEvent<unknown>[] = [];
  // Named functions' events are routed before any runs: a batch with one no function takes is refused whole, as one with an invalid event is.
  const route = call.destination.routeEvent;
  if (route !== undefined) call.events.forEach((event, i) => routedAt(route, event, i));
  for (const event of call.events) {
    // The client went away, or the request was answered as failed (a fault of an earlier event's,
    // faults.ts): the sender delivers the batch again, so the rest of it is not run now.
    if (x.res.destroyed || x.res.writableEnded) {
      x.batchCut = true;
      return undefined;
    }
    const ctx = eventContext(call, ContextClass, event);
    const called = p.invoke(fn, ctx, asArgument ? event : event.data, x.deadline);
    // A value that answers nothing it is asked (a revoked Proxy), which await would ask for its `then`.
    if (isUnreadable(called)) throw new UnreadableReturn();
    const returned = await called;
    // A batch's event may be retried (the whole batch is) or dropped (no answer of its own).
    const value = settleOutcome(p.metrics, ctx.log, returned, ctx.cloudevent, x.res.destroyed);
    const reply = value !== null && typeof value === 'object' ? asCloudEvent(value) : undefined;
    if (reply !== undefined) replies.push(withTrace(reply, invocationTrace(ctx)));
    else discard(value);
  }
  return replies.length === 0 ? undefined : replies;
}

/**
 * The single invocation's context (the request's, or its one event's). Its trace, when it has one
 * of its own (its span, or the event's), is the request's from then on: the answer and the
 * runtime's lines carry it.
 */
function singleContext(
  p: Pipeline,
  x: Exchange,
  input: Input,
  route: string | undefined,
  otel: Tracing | undefined,
  event: CloudEvent<unknown> | undefined,
): Context {
  const own = ownTrace(p, x, route, otel, event);
  const ctx = contextOf(p, x, input, Context, x.log, own ?? x.trace, event);
  x.contexts = ctx;
  return ctx;
}

/**
 * The single invocation's trace of its own, if it has one (its span, or its event's): the
 * request's from then on, its logger carrying it.
 */
function ownTrace(p: Pipeline, x: Exchange, route: string | undefined, otel: Tracing | undefined, event: CloudEvent<unknown> | undefined): Trace | undefined {
  let own: Trace | undefined;
  if (otel !== undefined) {
    own = otel.begin(x.method, x.path, route, x.req.headers, event);
    if (own !== undefined) otel.endWith(x.res, [own]);
  }
  // An event brings its trace in its attributes, when the request had none.
  if (own === undefined && event !== undefined && x.trace === undefined) own = eventTrace(event);
  if (own !== undefined) x.log = p.log.forRequest(x.reqId, own.logFields);
  return own;
}

/**
 * A batch's event's context. An event brings its trace in its attributes, when the request had
 * none; under the request's trace, each event is an invocation of its own, with a span of its own.
 */
function eventContext(call: BatchCall, ContextClass: ContextClass, event: CloudEvent<unknown>): Context {
  const { p, x, otel, spans } = call;
  let own: Trace | undefined;
  if (otel !== undefined) {
    own = otel.begin(x.method, x.path, call.destination.route, x.req.headers, event);
    // The spans end with the answer: the array is handed over with the first, and the others join it.
    if (own !== undefined && spans.push(own) === 1) otel.endWith(x.res, spans);
  }
  own ??= x.trace === undefined ? eventTrace(event) : sibling(x.trace);
  const log = own === undefined ? x.log : p.log.forRequest(x.reqId, own.logFields);
  const ctx = contextOf(p, x, call.input, ContextClass, log, own ?? x.trace, event);
  call.contexts.push(ctx);
  return ctx;
}

/** A context for the function: the request's, or one event's, with the logger and trace it runs under. */
function contextOf(
  p: Pipeline,
  x: Exchange,
  input: Input,
  ContextClass: ContextClass,
  log: Logger,
  trace: Trace | undefined,
  event: CloudEvent<unknown> | undefined,
): Context {
  const parts: ContextParts = {
    req: x.req,
    res: x.res,
    log,
    reqId: x.reqId,
    path: x.path,
    query: input.query,
    params: input.params,
    contentType: input.contentType,
    defaults: p.defaults,
    trace,
    runtime: p.runtime,
    body: event === undefined ? input.data : event.data,
    rawBody: input.rawBody,
    event,
    files: input.files,
  };
  // Made by name where it is the Context class itself (every request but a batch's with a query):
  // optimised code then builds it inline, not through the generic construct stub.
  return ContextClass === Context ? new Context(parts) : new ContextClass(parts);
}

// A batch's answered event carries the trace of the invocation that made it (one it set itself is
// kept), as a single event's does (cloudevents/reply.ts).
function withTrace(reply: CloudEvent<unknown>, trace: Trace | undefined): CloudEvent<unknown> {
  if (trace === undefined || reply.traceparent !== undefined) return reply;
  const state = trace.traceState === undefined || reply.tracestate !== undefined ? {} : { tracestate: trace.traceState };
  return reply.cloneWith({ traceparent: trace.traceparent, ...state }, false);
}

function callHandler<C extends Invocation, D>(fn: Handler<C, D>, ctx: C, data: D): unknown {
  return fn.call(HANDLER_THIS, ctx, data);
}

/**
 * Runs `fn` as part of the invocation of `ctx`: in its scope and its OpenTelemetry span's context,
 * when they are on. The answer is sent this way, so that a returned stream's code (a generator
 * that logs, a read() that fails) belongs to the invocation too.
 */
export function inInvocation<A extends unknown[], R>(ctx: Invocation, fn: (...args: A) => R, ...args: A): R {
  const scope = invocationScope();
  const otel = invocationTrace(ctx)?.otel;
  if (otel !== undefined) return otel.within(() => (scope === undefined ? fn(...args) : scope.run(invocationRecord(ctx), fn, ...args)));
  return scope === undefined ? fn(...args) : inScope(scope, invocationRecord(ctx), fn, ...args);
}

function enter<C extends Invocation, D>(scope: AsyncLocalStorage<InvocationRecord> | undefined, fn: Handler<C, D>, ctx: C, data: D): unknown {
  return scope === undefined ? callHandler(fn, ctx, data) : scope.run(invocationRecord(ctx), callHandler, fn, ctx, data);
}
