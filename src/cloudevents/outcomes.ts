// Explicit outcomes for an event: `retry()` asks the sender to deliver it again later, `drop()`
// says it was handled by being set aside. A function returns one instead of relying on what a
// throw means to its broker. Recognised by their class, so no returned data can pose as one.
import type { CloudEvent } from 'cloudevents';
import { HttpError } from '../errors';
import type { Logger } from '../log/log';
import type { Metrics } from '../telemetry/metrics';

export type OutcomeKind = 'retry' | 'drop';

export class Outcome {
  /** @internal */
  constructor(
    readonly kind: OutcomeKind,
    readonly reason: string,
    /** retry(): seconds for Retry-After. */
    readonly after: number,
    /** retry(): 503, or 429 when asked for. */
    readonly status: 429 | 503,
  ) {}
}

export interface RetryOptions {
  /** Seconds the sender should wait: the Retry-After header. Default 1. */
  after?: number;
  /** 503 (default): the function cannot take it now; 429: it is taking too much. */
  status?: 429 | 503;
}

/**
 * Returned by a function: answer 503 (or 429) with Retry-After, so that the broker delivers the
 * event again. The reason goes to the log, never to the sender.
 */
export function retry(reason: string, options: RetryOptions = {}): Outcome {
  const after = options.after ?? 1;
  if (!Number.isInteger(after) || after < 0) throw new TypeError(`retry(): 'after' is whole seconds, 0 or more: got ${String(after)}`);
  const status = options.status ?? 503;
  if (status !== 429 && status !== 503) throw new TypeError(`retry(): 'status' is 429 or 503: got ${String(status)}`);
  return new Outcome('retry', String(reason), after, status);
}

/** Returned by a function: answer 204, so that the event is never delivered again; the reason is logged. */
export function drop(reason: string): Outcome {
  return new Outcome('drop', String(reason), 0, 503);
}

/** What an outcome is answered with: a retry is thrown as this error; a drop is an empty 204. */
export function retryError(outcome: Outcome): HttpError {
  return new HttpError(outcome.status, 'the function asked for the event to be delivered again', {
    code: 'FUNCRUN_RETRY',
    headers: { 'retry-after': String(outcome.after) },
  });
}

/** Whether `value` is retry()'s or drop()'s outcome. Never throws: a revoked Proxy, asked its class, would. */
export function isOutcome(value: unknown): value is Outcome {
  try {
    return value instanceof Outcome;
  } catch {
    return false;
  }
}

/** An event's identity for the log: what an operator searches by. */
export function eventIdentity(event: CloudEvent<unknown>): { id: string; source: string; type: string; traceparent?: string } {
  const identity = { id: event.id, source: event.source, type: event.type };
  return typeof event.traceparent === 'string' ? { ...identity, traceparent: event.traceparent } : identity;
}

/**
 * A returned outcome, logged with its event and counted: retry() is thrown as its 503 or 429; drop()
 * answers nothing (204). Any other value is returned as it is. `clientGone`: the client went away
 * before the answer, so nobody will deliver the event again because of it: a retry is then neither
 * logged nor counted as one (the request is logged as a client gone is, at debug).
 */
export function settleOutcome(metrics: Metrics | undefined, log: Logger, value: unknown, event: CloudEvent<unknown> | undefined, clientGone = false): unknown {
  if (!isOutcome(value)) return value;
  const identity = event === undefined ? {} : { event: eventIdentity(event) };
  if (value.kind === 'drop') {
    metrics?.event('dropped');
    log.info({ ...identity, reason: value.reason }, 'event dropped');
    return undefined;
  }
  if (clientGone) throw retryError(value);
  metrics?.event('retried');
  log.info({ ...identity, reason: value.reason, retryAfter: value.after }, 'event to be delivered again');
  throw retryError(value);
}
