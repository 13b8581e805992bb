// W3C Trace Context (www.w3.org/TR/trace-context): the trace a request or event arrived in, and
// each invocation's own span in it. Nothing is made up: without a valid traceparent there is no trace.
import { randomFillSync } from '../util/random';
import type { IncomingHttpHeaders } from 'node:http';

export interface Trace {
  /** 32 lowercase hex digits, never all zero. */
  readonly traceId: string;
  /** This invocation's span: 16 lowercase hex digits, new for each invocation. */
  readonly spanId: string;
  /** The caller's span, from the traceparent that arrived. */
  readonly parentSpanId: string;
  /** Two hex digits; `01` is sampled. */
  readonly flags: string;
  /** The vendors' state, passed on as it came (when valid). */
  readonly traceState: string | undefined;
  /** `00-<traceId>-<spanId>-<flags>`: the header for calls this invocation makes. */
  readonly traceparent: string;
  /** The log fields, as OpenTelemetry names them, as JSON text: `,"trace_id":...`. */
  readonly logFields: string;
  /** The OpenTelemetry span this trace is, when the application traces (otel.ts). */
  readonly otel?: OtelSpan;
}

export interface OtelSpan {
  readonly span: unknown;
  /** Runs `fn` in the span's OpenTelemetry context, so that spans the function starts nest under it. */
  within<A extends unknown[], R>(fn: (...args: A) => R, ...args: A): R;
}

const LOWER_HEX = /^[0-9a-f]+$/;
const ALL_ZERO = /^0+$/;
// tracestate: at most 32 list members of at most 256 characters each; printable ASCII only.
const MAX_TRACESTATE = 32 * 257;
const PRINTABLE = /^[\x20-\x7e]*$/;

/**
 * The trace of a traceparent value, with a new span for this invocation; undefined when the
 * value is missing or invalid (ignored, never an error: the request is served all the same).
 */
export function traceOf(traceparent: unknown, tracestate: unknown): Trace | undefined {
  if (typeof traceparent !== 'string' || traceparent.length < 55) return undefined;
  const version = traceparent.slice(0, 2);
  // Version 00 is exactly 55 characters; a later version may add fields after a dash. ff is invalid.
  if (version === 'ff' || !LOWER_HEX.test(version)) return undefined;
  if (traceparent.length > 55 && (version === '00' || traceparent[55] !== '-' || traceparent.length > 512)) return undefined;
  if (traceparent[2] !== '-' || traceparent[35] !== '-' || traceparent[52] !== '-') return undefined;
  const traceId = traceparent.slice(3, 35);
  const parentSpanId = traceparent.slice(36, 52);
  const flags = traceparent.slice(53, 55);
  if (!LOWER_HEX.test(traceId) || !LOWER_HEX.test(parentSpanId) || !LOWER_HEX.test(flags)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(parentSpanId)) return undefined;
  const state =
    typeof tracestate === 'string' && tracestate.length <= MAX_TRACESTATE && PRINTABLE.test(tracestate) && tracestate.trim() !== '' ? tracestate : undefined;
  return newSpan(traceId, parentSpanId, flags, state);
}

function newSpan(traceId: string, parentSpanId: string, flags: string, traceState: string | undefined): Trace {
  return made(traceId, spanIds.next(), parentSpanId, flags, traceState, undefined);
}

function made(traceId: string, spanId: string, parentSpanId: string, flags: string, traceState: string | undefined, otel: OtelSpan | undefined): Trace {
  return {
    traceId,
    spanId,
    parentSpanId,
    flags,
    traceState,
    traceparent: `00-${traceId}-${spanId}-${flags}`,
    logFields: `,"trace_id":"${traceId}","span_id":"${spanId}","trace_flags":"${flags}"`,
    otel,
  };
}

/**
 * The trace of an OpenTelemetry span (ids as the API validated them: lowercase hex). Its
 * tracestate is kept only when it is what a header may carry.
 */
export function fromSpan(traceId: string, spanId: string, parentSpanId: string, flags: number, traceState: string | undefined, otel: OtelSpan): Trace {
  const state = traceState !== undefined && traceState.length <= MAX_TRACESTATE && PRINTABLE.test(traceState) ? traceState : undefined;
  return made(traceId, spanId, parentSpanId, (flags & 0xff).toString(16).padStart(2, '0'), state, otel);
}

/**
 * Span ids from a pool of random bytes, refilled 512 ids at a time: one system call per 512
 * traced invocations rather than one each.
 */
class SpanIds {
  readonly #pool = Buffer.alloc(8 * 512);
  #next = this.#pool.length;

  next(): string {
    const pool = this.#pool;
    for (;;) {
      if (this.#next === pool.length) {
        randomFillSync(pool);
        this.#next = 0;
      }
      const at = this.#next;
      this.#next += 8;
      const id = pool.toString('hex', at, at + 8);
      if (id !== '0000000000000000') return id;
    }
  }
}

// One pool for the process: its bytes are random whoever draws them, so sharing it is safe, and
// a pool per server would make each start pay for a refill of its own.
const spanIds = new SpanIds();

/** The trace a request arrived in: its HTTP `traceparent` header, with its `tracestate`. */
export function requestTrace(headers: IncomingHttpHeaders): Trace | undefined {
  return headers.traceparent === undefined ? undefined : traceOf(headers.traceparent, headers.tracestate);
}

/**
 * An event's trace: its `traceparent` attribute (the distributed tracing extension), as the
 * binding decoded it from `ce-traceparent` or read it from a structured event.
 */
export function eventTrace(event: object): Trace | undefined {
  const { traceparent, tracestate } = event as { traceparent?: unknown; tracestate?: unknown };
  return traceparent === undefined ? undefined : traceOf(traceparent, tracestate);
}

/** Another invocation in the same trace, under the same parent: a batch's events, each its own span. */
export function sibling(trace: Trace): Trace {
  return newSpan(trace.traceId, trace.parentSpanId, trace.flags, trace.traceState);
}
