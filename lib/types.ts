// The types function authors use, with faas-js-runtime's names so TypeScript functions move
// over unchanged.
import type { IncomingMessage } from 'node:http';
import type { CloudEvent, Message } from 'cloudevents';
import type { Context } from './context';
import type { Logger, LogLevel } from './log';
import type { CloudEventResponse } from './cloudevent';
import type { ErrorBody } from './errors';

export type { Context, Logger, LogLevel, CloudEventResponse, CloudEvent, ErrorBody };

/** A response spelled out: status, headers and body. With no body and no status, 204. */
export interface StructuredReturn {
  statusCode?: number;
  headers?: Record<string, string | string[] | number>;
  body?: ResponseBody | number | boolean;
}

export type ResponseBody = string | object | Buffer | Uint8Array;

/** The handler's second argument: parsed by media type (JSON value, XML Document, string, Buffer). */
export type IncomingBody = unknown;

export type HTTPFunctionReturn = StructuredReturn | ResponseBody | CloudEvent | CloudEventResponse | Message | number | boolean | null | void;

/** A function called for plain HTTP requests: `(context, body)`. */
export interface HTTPFunction {
  (context: Context, body?: any): HTTPFunctionReturn | Promise<HTTPFunctionReturn>;
}

/**
 * A function called for CloudEvents: `(context, data)`, the event itself is `context.cloudevent`
 * (with FUNC_COMPAT=faas-js-runtime, `(context, event)`). The type parameters are faas-js-runtime's:
 * the event's data type and the returned event's.
 */
export interface CloudEventFunction<I = any, R = unknown> {
  // `any`: by default the data (of type I), with the compatibility switch the event (CloudEvent<I>).
  (context: Context, data?: any): HTTPFunctionReturn | CloudEvent<R> | Promise<HTTPFunctionReturn | CloudEvent<R>>;
}

/** What the server invokes per request. */
export type Invokable = HTTPFunction | CloudEventFunction;

/** faas-js-runtime's names for what handlers return. */
export type CloudEventFunctionReturn<T = unknown> = CloudEvent<T> | HTTPFunctionReturn | Promise<CloudEvent<T> | HTTPFunctionReturn>;
export type FunctionReturn = CloudEventFunctionReturn | HTTPFunctionReturn | Promise<HTTPFunctionReturn>;

/** faas-js-runtime's `Config`: the settings its start() resolved. */
export interface Config {
  logLevel: LogLevel;
  port: number;
  includeRaw: boolean;
}

/**
 * A named function (the seed's Java contract): `(input, context) => output`. `inputSchema` types
 * its input (JSON Schema); `cloudEvent: true` makes it take CloudEvents only, receiving the whole
 * event; `trigger` is the `ce-type` it answers when that is not its name.
 */
export interface NamedFunction {
  (input: any, context: Context): unknown;
  inputSchema?: object;
  cloudEvent?: boolean;
  trigger?: string;
}

/** What `authorize` sees of a request: everything but its body, which has not been read. */
export interface RequestInfo {
  method: string;
  /** The path, without the query string. */
  path: string;
  headers: IncomingMessage['headers'];
  query: Record<string, string | string[]>;
}

/** A liveness or readiness check: false or a throw means not healthy (503). `path` moves the probe. */
export interface HealthCheck {
  (): unknown;
  path?: string;
}

/** A CORS origin: an exact origin such as `https://example.com`, `*` for any, or a pattern. */
export type CorsOrigin = string | RegExp;

/** The exported module of a function project. */
export interface Function {
  /** Takes every request no route matches. */
  handle?: Invokable;
  /** `'METHOD /path/:param'` to a handler with the same contract as `handle`. */
  routes?: Record<string, Invokable>;
  /** Named functions, served as `POST /<name>`, `GET /<name>?...` and CloudEvents by type. */
  functions?: Record<string, NamedFunction>;
  /** Runs before the server listens, with the runtime's logger; may be async. A throw stops the start. */
  init?: (context: { log: Logger }) => unknown;
  /** Runs after the server has stopped; may be async. */
  shutdown?: () => unknown;
  liveness?: HealthCheck;
  readiness?: HealthCheck;
  logLevel?: LogLevel;
  /** The origins allowed to call the function from a browser. Called once at start. */
  cors?: () => CorsOrigin[];
  /**
   * Runs for every request but the probes, before its body is read (and before a 404 or 405):
   * throw (an error with a `statusCode` such as 401) to refuse it. `/metrics` is covered too.
   */
  authorize?: (request: RequestInfo) => unknown;
  /**
   * Shapes the JSON body of every error response of this function (a thrown error, 404, 405,
   * 413, malformed data): gets funcrun's body, `{ statusCode, error, message, ... }` (generic at
   * 5xx), and the thrown value; returns the body to send.
   */
  errorBody?: (body: ErrorBody, thrown: unknown) => unknown;
}

export type { IncomingMessage };
