// Calling the function: with the frozen `this` faas-js-runtime gives, within the request's
// timeout, and once per event of a batch.
import type { CloudEvent } from 'cloudevents';
import { asCloudEvent } from './cloudevents/cloudevent';
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { InvocationRecord } from './log/scope';
import { abortInvocation, invocationOutlived, invocationRecord, invocationTrace, type Context } from './context';
import type { Trace } from './telemetry/trace';
import { runtimeError } from './errors';
import type { ErrorCode } from './error-codes';
import { discard } from './respond';
import { invocationScope } from './log/scope';
import { isThenable, now, settleWithin } from './lifecycle/deadline';
import type { Invokable } from './types';

// A declared handler's `this`, as faas-js-runtime binds it: empty and frozen, not the global object.
const HANDLER_THIS = Object.freeze({});

/** Calls a handler: `invoke(fn, context, data, deadline)`, its value or a promise of it. */
export type Invoke = (fn: Invokable, ctx: Context, data: unknown, deadline: number) => unknown;

/**
 * The invoker for a timeout in ms (0: none). A handler still running when the timeout passes is
 * answered 504 and its context's signal aborted (the handler decides whether to stop; its late
 * result is dropped). The timeout is the request's: a batch's events share it.
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
          : scope.run(invocationRecord(ctx), call, fn, ctx, data);
    if (timeout <= 0 || !isThenable(result)) return result;
    let late = false;
    // A result that comes after the 504 is dropped; a stream in it is closed.
    Promise.resolve(result).then((value) => late && discard(value), ignore);
    return settleWithin(result, left, () => {
      late = true;
      const error = tooLate();
      // Its event's claim holds until it has really finished (idempotency.ts).
      invocationOutlived(ctx, result);
      abortInvocation(ctx, error);
      return error;
    });
  };
}

/**
 * `value`, or a 504 naming `what` once `deadline` (`now()` time) passes; with a timeout
 * of 0 (none), `value` as it is.
 */
export async function beforeDeadline<T>(value: T | Promise<T>, timeout: number, deadline: number, what: string, code: ErrorCode): Promise<T> {
  if (timeout <= 0 || !isThenable(value)) return value;
  return settleWithin(value, deadline - now(), () => runtimeError(code, `${what} did not finish within ${timeout} ms`));
}

/**
 * A batch (`application/cloudevents-batch+json`): the handler runs once per event, in order.
 * The CloudEvents it returns are answered as a batch; values that are not events are not sent.
 */
export async function batch(
  events: CloudEvent<unknown>[],
  fn: Invokable,
  context: (event: CloudEvent<unknown>) => Context,
  invoke: (fn: Invokable, ctx: Context, data: unknown) => unknown,
  settle: (value: unknown, ctx: Context) => unknown,
  gone: () => boolean,
  eventAsArgument: boolean,
): Promise<CloudEvent<unknown>[] | undefined> {
  const replies: CloudEvent<unknown>[] = [];
  for (const event of events) {
    // The client went away: the answer cannot be sent, so the rest of the batch is not run.
    if (gone()) return undefined;
    const ctx = context(event);
    const value = settle(await invoke(fn, ctx, eventAsArgument ? event : event.data), ctx);
    const reply = value !== null && typeof value === 'object' ? asCloudEvent(value) : undefined;
    if (reply !== undefined) replies.push(withTrace(reply, invocationTrace(ctx)));
    else discard(value);
  }
  return replies.length === 0 ? undefined : replies;
}

// A batch's answered event carries the trace of the invocation that made it (one it set itself is
// kept), as a single event's does (cloudevent-reply.ts).
function withTrace(reply: CloudEvent<unknown>, trace: Trace | undefined): CloudEvent<unknown> {
  if (trace === undefined || reply.traceparent !== undefined) return reply;
  const state = trace.traceState === undefined || reply.tracestate !== undefined ? {} : { tracestate: trace.traceState };
  return reply.cloneWith({ traceparent: trace.traceparent, ...state }, false);
}

function ignore(): void {}

function call(fn: Invokable, ctx: Context, data: unknown): unknown {
  return fn.call(HANDLER_THIS, ctx, data);
}

/**
 * Runs `fn` as part of the invocation of `ctx`: in its scope and its OpenTelemetry span's context,
 * when they are on. The answer is sent this way, so that a returned stream's code (a generator
 * that logs, a read() that fails) belongs to the invocation too.
 */
export function inInvocation<A extends unknown[], R>(ctx: Context, fn: (...args: A) => R, ...args: A): R {
  const scope = invocationScope();
  const otel = invocationTrace(ctx)?.otel;
  if (otel !== undefined) return otel.within(() => (scope === undefined ? fn(...args) : scope.run(invocationRecord(ctx), fn, ...args)));
  return scope === undefined ? fn(...args) : scope.run(invocationRecord(ctx), fn, ...args);
}

function enter(scope: AsyncLocalStorage<InvocationRecord> | undefined, fn: Invokable, ctx: Context, data: unknown): unknown {
  return scope === undefined ? call(fn, ctx, data) : scope.run(invocationRecord(ctx), call, fn, ctx, data);
}
