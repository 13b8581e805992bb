// OpenTelemetry, when the application wants it. `@opentelemetry/api` is an optional peer
// dependency: nothing of it is loaded until the application registers a tracer provider (the API
// keeps its registrations on a global, which each request reads: one property lookup), and then
// it is found from the function's folder. From then on each invocation is a SERVER span: its
// parent from the incoming context through the registered propagator, its name and attributes by
// the HTTP semantic conventions, and the function runs in its context (so its own spans nest
// under it). The invocation's Trace (log
// fields, context.traceparent, answered events) is then that span's.
//
// The API's types are written out here, as much of them as is used: funcrun's declarations must
// not need the package.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import { fromSpan, type Trace } from './trace';

interface SpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  traceState?: { serialize(): string };
}
interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: string | number): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}
type OtelContext = object;
interface Api {
  ROOT_CONTEXT: OtelContext;
  SpanKind: { SERVER: number };
  SpanStatusCode: { ERROR: number };
  ProxyTracerProvider: new () => { getDelegate(): unknown };
  trace: {
    getTracerProvider(): { getDelegate?(): unknown };
    getTracer(name: string, version?: string): { startSpan(name: string, options: object, context: OtelContext): Span };
    setSpan(context: OtelContext, span: Span): OtelContext;
    getSpanContext(context: OtelContext): SpanContext | undefined;
    isSpanContextValid(spanContext: SpanContext): boolean;
  };
  propagation: { extract(context: OtelContext, carrier: object): OtelContext };
  context: { with<A extends unknown[], R>(context: OtelContext, fn: (...args: A) => R, thisArg?: unknown, ...args: A): R };
}

export interface Tracing {
  /** Whether a tracer provider is registered now (the application may register one in init(), or later). */
  active(): boolean;
  /**
   * Starts an invocation's SERVER span: the parent from `headers` through the registered
   * propagator, or from the event's trace attributes when the request brought no traceparent.
   * Undefined when the tracer fails: the request is served with funcrun's own trace context.
   */
  begin(method: string, path: string, route: string | undefined, headers: IncomingHttpHeaders, event: CloudEvent<unknown> | undefined): Trace | undefined;
  /** Ends the spans of a request when its response is done, with its status. */
  endWith(res: ServerResponse, traces: Trace[]): void;
}

// The tracer's version (the instrumentation scope's): this copy's, read only when tracing.
function funcrunVersion(): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

// HTTP's methods by the semantic conventions; any other is recorded as `_OTHER`.
const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE', 'QUERY']);

// Where every copy of the API (major version 1) keeps what the application registered.
const REGISTRY = Symbol.for('opentelemetry.js.api.1');

type Registry = { trace?: unknown } | undefined;

/**
 * The API's registry, read without a lookup on the global object per request (a keyed load there
 * costs each request some 150 instructions, when no provider is ever registered too). Until the
 * API makes it, the global's property is an accessor that notes what the API writes, and reads
 * it back, as the data property it stands for would; once it exists, the object is kept (the API
 * keeps it too, registering providers into it). Made once per process, as the global is.
 */
class RegistryWatch {
  #registry: Registry;
  #watching = false;

  current(): Registry {
    if (this.#registry !== undefined) return this.#registry;
    if (!this.#watching) this.#watch();
    return this.#registry;
  }

  #watch(): void {
    this.#watching = true;
    const global = globalThis as Record<symbol, Registry>;
    const descriptor = Object.getOwnPropertyDescriptor(global, REGISTRY);
    if (descriptor !== undefined) {
      // Made already (by the API, or another copy of this watch): read as it is, each time.
      this.current = () => global[REGISTRY];
      return;
    }
    Object.defineProperty(global, REGISTRY, {
      configurable: true,
      get: () => this.#registry,
      set: (value: Registry) => {
        this.#registry = value;
      },
    });
  }
}

const registryWatch = new RegistryWatch();

/** Where the application's API would be loaded from: `folder` upwards, else the working folder. */
function apiFolders(folder: string): string[] {
  return [folder, process.cwd()];
}

/** The application's API, from `folder` upwards (else from the working folder), or undefined. */
function loadApi(folder: string): Api | undefined {
  for (const from of apiFolders(folder)) {
    try {
      const api = createRequire(join(resolve(from), 'package.json'))('@opentelemetry/api') as Api;
      if (typeof api.trace?.getTracer === 'function' && typeof api.ProxyTracerProvider === 'function') return api;
    } catch {
      // Not installed there.
    }
  }
  return undefined;
}

/**
 * OpenTelemetry for a function in `folder`: inactive, and nothing loaded, until the application
 * registers a provider; none at all (undefined) where the API is not installed, so that no
 * request asks whether a provider was registered.
 */
export function loadTracing(folder: string): Tracing | undefined {
  if (!apiFolders(folder).some(installedFrom)) return undefined;
  return tracingFrom(folder);
}

/** Whether `@opentelemetry/api` resolves from `from` (found, not loaded). */
function installedFrom(from: string): boolean {
  try {
    createRequire(join(resolve(from), 'package.json')).resolve('@opentelemetry/api');
    return true;
  } catch {
    return false;
  }
}

function tracingFrom(folder: string): Tracing {
  let api: Api | undefined;
  let noop: unknown;
  let tracer: ReturnType<Api['trace']['getTracer']>;
  let SERVER = 0;
  let ERROR = 0;
  let unavailable = false;

  function ready(): boolean {
    if (api !== undefined) return true;
    if (unavailable) return false;
    api = loadApi(folder);
    if (api === undefined) {
      // Registered by a copy funcrun cannot find: no spans (the request keeps funcrun's own trace).
      unavailable = true;
      return false;
    }
    // What an unregistered provider delegates to: a fresh proxy's delegate, the API's no-op.
    noop = new api.ProxyTracerProvider().getDelegate();
    tracer = api.trace.getTracer('funcrun', funcrunVersion());
    SERVER = api.SpanKind.SERVER;
    ERROR = api.SpanStatusCode.ERROR;
    return true;
  }

  function spanOf(trace: Trace): Span {
    return (trace.otel as { span: Span }).span;
  }

  return {
    active() {
      try {
        const registry = registryWatch.current();
        if (registry?.trace === undefined || !ready()) return false;
        return api!.trace.getTracerProvider().getDelegate?.() !== noop;
      } catch {
        return false;
      }
    },

    begin(method, path, route, headers, event) {
      const otel = api!;
      try {
        const carrier = event !== undefined && headers.traceparent === undefined ? { traceparent: event.traceparent, tracestate: event.tracestate } : headers;
        const parent = otel.propagation.extract(otel.ROOT_CONTEXT, carrier);
        const known = KNOWN_METHODS.has(method);
        const attributes: Record<string, string> = { 'http.request.method': known ? method : '_OTHER', 'url.path': path };
        if (!known) attributes['http.request.method_original'] = method;
        if (route !== undefined) attributes['http.route'] = route;
        if (event !== undefined) {
          attributes['cloudevents.event_id'] = event.id;
          attributes['cloudevents.event_type'] = event.type;
          attributes['cloudevents.event_source'] = event.source;
          attributes['cloudevents.event_spec_version'] = event.specversion;
          if (typeof event.subject === 'string') attributes['cloudevents.event_subject'] = event.subject;
        }
        const name = route === undefined ? (known ? method : 'HTTP') : `${known ? method : 'HTTP'} ${route}`;
        const span = tracer.startSpan(name, { kind: SERVER, attributes }, parent);
        const own = span.spanContext();
        if (!otel.trace.isSpanContextValid(own)) {
          span.end();
          return undefined;
        }
        const context = otel.trace.setSpan(parent, span);
        return fromSpan(own.traceId, own.spanId, otel.trace.getSpanContext(parent)?.spanId ?? '', own.traceFlags, own.traceState?.serialize() || undefined, {
          span,
          within: (fn, ...args) => otel.context.with(context, fn, undefined, ...args),
        });
      } catch {
        return undefined;
      }
    },

    endWith(res, traces) {
      res.once('close', () => {
        const status = res.statusCode;
        const whole = res.writableFinished;
        for (const trace of traces) {
          try {
            const span = spanOf(trace);
            span.setAttribute('http.response.status_code', status);
            if (status >= 500) {
              span.setAttribute('error.type', String(status));
              span.setStatus({ code: ERROR });
            } else if (!whole) span.setStatus({ code: ERROR, message: 'the connection closed before the answer was sent' });
            span.end();
          } catch {
            // The application's tracer failed: its span is lost, the request is not.
          }
        }
      });
    },
  };
}
