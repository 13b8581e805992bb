// `funcrun/testing`: what a function's own tests use. `startFunction` serves a module on a free
// port for integration tests, and `serve` does so for one test, closing it after; `createContext`
// builds the handler's first argument for unit tests that call `handle` directly, and
// `createEventContext` an event handler's, typed by its contracts, and `createFetchContext` a fetch
// handler's third; `createLogSink` collects the log lines any of them writes.
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { CloudEvent as Event } from 'cloudevents';
import { Context, contentTypeOf } from '../context';
import { responseDefaults } from '../cloudevents/cloudevent';
import { createLogger, type LogDestination, type LogLevel } from '../log/log';
import { loadFunction } from '../start/loader';
import { loggerOf, probesOf } from '../lifecycle/lifecycle';
import { queryOf, readTarget } from '../http/target';
import { start, stop, type Options } from '../index';
import type { FetchContext, Function as FunctionModule, Invokable } from '../types';
import type { DataFor, EventContext, EventDeclaration, EventOf, EventType } from '../event-types';

/** The SDK's CloudEvent, for building events in tests without depending on the SDK directly. */
export { Event as CloudEvent };

export interface RunningFunction {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  server: import('node:http').Server;
  /** Where the probes answer: func.yaml's `deploy.healthEndpoints` (with `config`), the module's, a variable's, or the defaults. */
  probes: { readonly liveness: string; readonly readiness: string };
  /**
   * Stops the server, running the module's shutdown() once: called again (serve's teardown after a
   * test that closed the server itself), it waits for the same shutdown().
   */
  close(): Promise<void>;
}

/**
 * Serves a function on 127.0.0.1 and a free port: a module object (a fetch handler such as a Hono
 * app among them), a handler, or a path to a project folder or module file. Logs are silent unless a `logDestination` (such as a
 * `createLogSink()`) is given, then at `trace` level, as `createContext` does; `logLevel` overrides.
 */
export async function startFunction(func: FunctionModule | Invokable | string, options: Options = {}): Promise<RunningFunction> {
  const loaded = typeof func === 'string' ? await loadFunction(func) : undefined;
  const server = await start(loaded?.module ?? (func as FunctionModule | Invokable), {
    port: 0,
    host: '127.0.0.1',
    logLevel: options.logDestination ? 'trace' : 'silent',
    ...options,
  });
  // start() says which handler of a module with fetch beside another is served; for a module it
  // loads from a path, the loader found that out, and it is said as `node lib/serve.js` says it.
  if (loaded?.shapeChosen !== undefined) loggerOf(server).warn({ file: loaded.file }, loaded.shapeChosen);
  const { port } = server.address() as import('node:net').AddressInfo;
  const probes = probesOf(server)!;
  return { url: `http://127.0.0.1:${port}`, port, server, probes, close: () => stop(server, 1000).then(() => undefined) };
}

/** What serve() needs of a test: a hook run after it, as node:test's `t.after`. */
export interface TestTeardown {
  after(teardown: () => Promise<void>): unknown;
}

/**
 * startFunction for one test: `await serve(t, handle)` in `it('...', async (t) => ...)`. The
 * server is closed by `t.after` once the test ends, passed or failed, so the test needs no
 * `finally`; it resolves to what startFunction does.
 */
export async function serve(t: TestTeardown, func: FunctionModule | Invokable | string, options: Options = {}): Promise<RunningFunction> {
  // Checked before anything listens: a server nothing would close keeps the test run alive.
  if (typeof t?.after !== 'function')
    throw new TypeError("serve(t, func, options) takes the test's context first (node:test's t), to close the server after the test");
  const running = await startFunction(func, options);
  t.after(() => running.close());
  return running;
}

export interface LogSink extends LogDestination {
  /** Every line written so far, each newline-terminated, in order. */
  lines: string[];
  /** All lines as one string, for searching the whole log (for a secret, say). */
  text(): string;
  /** Each line parsed as JSON; a line that is not JSON throws, failing the test. */
  entries(): Record<string, unknown>[];
}

/**
 * A log destination that keeps what it is given, for assertions on the log:
 * `startFunction(fn, { logLevel: 'trace', logDestination: sink })`, then `sink.entries()`.
 */
export function createLogSink(): LogSink {
  const lines: string[] = [];
  return {
    lines,
    write(line: string) {
      lines.push(line);
      return true;
    },
    text: () => lines.join(''),
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

export interface ContextOptions<Data = unknown> {
  method?: string;
  /** Path with an optional query string, such as `/orders?id=7`. */
  url?: string;
  headers?: Record<string, string>;
  /** The parsed body, as the handler's second argument would get it. */
  body?: unknown;
  /** The incoming event; its data type becomes the context's (`Context<Data>`), as a `CloudEventFunction<Data>` takes. */
  cloudevent?: Event<Data>;
  params?: Record<string, string>;
  /** Where `context.log` writes; default nowhere. */
  logDestination?: LogDestination;
  logLevel?: LogLevel;
}

/** A context like the one funcrun builds for a request, for calling a handler directly. */
export function createContext<Data = unknown>(options: ContextOptions<Data> = {}): Context<Data> {
  const req = new IncomingMessage(new Socket());
  req.method = String(options.method ?? 'GET').toUpperCase();
  req.url = String(options.url ?? '/');
  req.httpVersion = '1.1';
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    // Defined, not assigned: a `__proto__` key from parsed JSON stays a key, as node's parser keeps it.
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    Object.defineProperty(headers, name.toLowerCase(), { value: text, enumerable: true, writable: true, configurable: true });
  }
  req.headers = headers;
  // Read as the server reads it (an absolute-form URL by its path).
  const { path, search } = readTarget(req.url);
  const query = queryOf(search);
  const silent = options.logDestination === undefined;
  const log = createLogger(silent ? 'silent' : (options.logLevel ?? 'trace'), options.logDestination ?? { write: () => true });
  const contentType = contentTypeOf(headers['content-type'], false);
  const event = options.cloudevent;
  return new Context<Data>({
    req,
    log: log.forRequest(1),
    path,
    query,
    params: options.params ?? {},
    contentType,
    defaults: responseDefaults('function'),
    body: event?.data ?? options.body,
    event,
  });
}

/** The event types createEventContext takes for D: those declared, and with `passthrough: true` any other. */
export type TestedEventType<D extends EventDeclaration> = EventType<D> | (D extends { readonly passthrough: true } ? string : never);

/** The data of an event of type T, as the handler gets it (a Standard Schema's output); `unknown` for one passed through. */
export type TestedData<D extends EventDeclaration, T extends string> = T extends EventType<D> ? DataFor<D, T> : unknown;

/** The context createEventContext makes: an EventHandler<D>'s, its `cloudevent` the one event of type T. */
export type TestEventContext<D extends EventDeclaration, T extends string> = EventContext<D> & {
  cloudevent: T extends EventType<D> ? EventOf<D, T> : Event<unknown>;
};

export interface EventContextOptions extends Omit<ContextOptions, 'cloudevent' | 'body'> {
  /**
   * The event's other attributes (`source`, `id`, `subject`, `time`, extensions); by default
   * `source` is `/test` and `id` a random UUID.
   */
  attributes?: Record<string, string | number | boolean>;
}

/**
 * A context for calling an event handler directly: `createEventContext(events, type, data)` makes
 * the CloudEvent of that declared type with that data, and the context an `EventHandler<typeof
 * events>` takes, as funcrun would after the contract's check (a POST in binary mode). A type
 * that is not declared, or data of another shape, fails `tsc`; an undeclared type also throws,
 * unless the declaration has `passthrough: true`.
 */
export function createEventContext<const D extends EventDeclaration, const T extends TestedEventType<D>>(
  events: D,
  type: T,
  data: TestedData<D, T>,
  options: EventContextOptions = {},
): TestEventContext<D, T> {
  const declared = events?.types !== undefined && Object.prototype.hasOwnProperty.call(events.types, type);
  if (!declared && events?.passthrough !== true) {
    const types = Object.keys(events?.types ?? {});
    throw new TypeError(
      `createEventContext: '${String(type)}' is not a declared event type (${types.length > 0 ? types.map((t) => `'${t}'`).join(', ') : 'none declared'})`,
    );
  }
  const cloudevent = new Event({ source: '/test', id: randomUUID(), ...options.attributes, type, data });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const [name, value] of Object.entries(cloudevent.toJSON())) {
    if (name !== 'data' && name !== 'data_base64' && name !== 'datacontenttype' && value !== undefined) headers[`ce-${name}`] = String(value);
  }
  const context = createContext({ method: 'POST', ...options, headers: { ...headers, ...options.headers }, cloudevent });
  return context as unknown as TestEventContext<D, T>;
}

export interface FetchContextOptions {
  /** The request's id, which the log's lines carry; default 1. */
  reqId?: number;
  /** Where `ctx.log` writes; default nowhere. */
  logDestination?: LogDestination;
  logLevel?: LogLevel;
}

/** A fetch handler's `ctx` for a unit test, which also keeps what was handed to `waitUntil`. */
export interface TestFetchContext extends FetchContext {
  /** Every promise handed to `waitUntil`, in order. */
  readonly waitedFor: PromiseLike<unknown>[];
  /** Resolves once every promise handed to `waitUntil` so far has settled (as the drain waits), with their outcomes. */
  settled(): Promise<PromiseSettledResult<unknown>[]>;
}

/**
 * The third argument funcrun gives a fetch handler, for calling it directly:
 * `await handler.fetch(new Request('http://localhost/items/7'), {}, createFetchContext())`.
 * `waitUntil` keeps its promises (`ctx.waitedFor`, `await ctx.settled()`), `passThroughOnException`
 * does nothing (as on funcrun), `log` is silent unless a `logDestination` is given.
 */
export function createFetchContext(options: FetchContextOptions = {}): TestFetchContext {
  const reqId = options.reqId ?? 1;
  const silent = options.logDestination === undefined;
  const log = createLogger(silent ? 'silent' : (options.logLevel ?? 'trace'), options.logDestination ?? { write: () => true }).forRequest(reqId);
  const waitedFor: PromiseLike<unknown>[] = [];
  return {
    reqId,
    log,
    waitedFor,
    waitUntil(promise: PromiseLike<unknown>) {
      waitedFor.push(promise);
    },
    passThroughOnException() {},
    props: Object.freeze({}),
    settled: () => Promise.allSettled(waitedFor),
  };
}
