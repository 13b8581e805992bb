// funcrun's public entry: `start(func, options)` as in faas-js-runtime, `stop(server)`, the
// defaults, and the types function authors use.
import type { Server } from 'node:http';
import { ConfigError, readFuncYaml } from './start/func-yaml';
import { checkFunction, LoadError, shapeChosen, toFunction } from './start/loader';
import type { LogDestination, LogLevel } from './log/log';
import { loggerOf, stop } from './lifecycle/lifecycle';
import type { Compat } from './start/compat';
import { launch } from './start/launch';
import { PROBE_DEFAULTS } from './start/probe-paths';
import { SETTINGS } from './start/settings';
import type { CorsOrigin, Function as FunctionModule, Invokable } from './types';

// Written out, not derived from the settings table (src/start/settings.ts): users read this type
// in their editor's hover and in lib/index.d.ts, where a mapped type over the table would show
// neither the names nor the defaults (the table's declaration, in lib/start/settings.d.ts, is 300
// lines of parsers and help text, with `default: number` where the source says 8080). The table
// holds it to itself: start() hands each member to the table's parser, which compiles only while
// every setting has a member of a type its parser takes, and spec/options-type.spec.js checks the
// rest (no member the table lacks, the same types both ways, each doc comment stating the
// table's default).
export interface Options {
  /** TCP port; 0 picks a free one. It comes before LISTEN_ADDRESS, PORT and FUNC_PORT. Default 8080. */
  port?: number;
  /** Address to listen on; `::` is every address. It comes before LISTEN_ADDRESS and FUNC_HOST. Default: every address (`::`, and IPv4 through it). */
  host?: string;
  /** fatal, error, warn, info, debug, trace or silent. Default info (warn in faas-js-runtime compatibility); else the module's `logLevel`. */
  logLevel?: LogLevel;
  /** Largest accepted request body, in bytes or with a unit (`2mb`). Default 1 MiB. */
  bodyLimit?: number | string;
  /** Largest multipart/form-data body, or body streamed to a function. Default 100 MiB. */
  uploadLimit?: number | string;
  /** Largest uploaded file. Default: `uploadLimit`. */
  fileSizeLimit?: number | string;
  /** Files in one multipart body at most. Default 20. */
  filesLimit?: number | string;
  /** Fields in one multipart body at most. Default 1000. */
  fieldsLimit?: number | string;
  /** Largest multipart field value; a body's fields (names and values) and files' names together are held to it or `bodyLimit`, the larger. Default 1 MiB. */
  fieldSizeLimit?: number | string;
  /** Largest header of one multipart part. Default 16 KiB. */
  partHeaderLimit?: number | string;
  /** An uploaded file larger than this is written to a temporary file. Default 64 KiB. */
  fileMemoryLimit?: number | string;
  /** Where the folder of temporary files is made. Default the system's (os.tmpdir()). */
  tempDir?: string;
  /** Bytes of temporary upload files held at once, across requests; past it, 503 with Retry-After. Default 1 GiB. */
  uploadDiskLimit?: number | string;
  /** Bytes per second a client streaming a body sends at least, past the request timeout, while the function waits. Default 8 KiB. */
  minBodyRate?: number | string;
  /** Put the body's bytes on `context.rawBody`. Default false. */
  includeRaw?: boolean;
  /** Folder holding func.yaml. */
  config?: string;
  /** The function's name, the default `source` of the events it answers with. Default: func.yaml's name. */
  name?: string;
  /** Where log lines go. Default process.stdout. */
  logDestination?: LogDestination;
  /** A handler still running after this long is answered 504 and `context.signal` aborted. Default off. */
  timeout?: number | string;
  /** Readiness answers 503 while the event loop runs later than this. Default 1s; 0 turns it off. */
  maxEventLoopDelay?: number | string;
  /** Serve Prometheus metrics. Default true. */
  metrics?: boolean;
  /** Where metrics are served. Default /metrics. */
  metricsPath?: string;
  /**
   * For a fetch handler: replace the global Request, Response and fetch, for the process, by light
   * ones, as Hono's Node adapter does (docs/fetch.md#light-web-globals). Default false.
   */
  lightWebGlobals?: boolean;
  /** Time a client has to send its headers (slowloris). Default 20s. */
  headersTimeout?: number | string;
  /** Time a client has to send its whole request. Default 60s. */
  requestTimeout?: number | string;
  /** How long an idle keep-alive connection stays open: longer than a Knative queue-proxy keeps one. Default 95s. */
  keepAliveTimeout?: number | string;
  /** Open connections at most (idle keep-alive ones included); past it new ones are refused. Default 1024. */
  maxConnections?: number | string;
  /** A liveness or readiness check that has not answered after this long counts as failed (503). Default 5s. */
  probeTimeout?: number | string;
  /**
   * `'faas-js-runtime'`: where the function contract and faas-js-runtime differ, behave as
   * faas-js-runtime (the whole event as the second argument, blanket CORS, text error answers,
   * ...); `'none'`: funcrun's own behaviour. Default: `'faas-js-runtime'` when funcrun is
   * installed under that name (or started by its `faas-js-runtime` command), else `'none'`.
   */
  compat?: Compat;
  /** An info line for every answered request. Default: on in faas-js-runtime compatibility, else off. */
  accessLog?: boolean;
  /** The command that started the process (`serve` passes it): `faas-js-runtime` means compatibility, unless `compat` says otherwise. */
  command?: string;
  /** The origins allowed to call the function from a browser, as a module's `cors()` gives them (faas-js-runtime's option). */
  cors?: () => CorsOrigin[];
  /** Run each CloudEvent once: a duplicate gets the first delivery's answer. Default: the module's `events.idempotency`. */
  idempotency?: boolean;
  /** Where idempotency keeps claims and answers: `memory`, or a `redis://` or `rediss://` URL shared by replicas. Default memory. */
  idempotencyStore?: string;
  /** How long a duplicate gets the first delivery's answer. Default 1h. */
  idempotencyWindow?: number | string;
  /** How long a running delivery's claim holds if its replica dies. Default: the timeout and a second, else 5 minutes. */
  idempotencyClaim?: number | string;
  /** Events the memory store keeps at most. Default 10000. */
  idempotencyEntries?: number | string;
  /** Bytes of answers the memory store keeps at most. Default 64 MiB. */
  idempotencyBytes?: number | string;
  /** Largest answer kept for duplicates. Default 256 KiB. */
  idempotencyAnswerLimit?: number | string;
  /** Longest event key, in characters. Default 1024. */
  idempotencyKeyLimit?: number | string;
}

/** faas-js-runtime's name for the options of start(). */
export type InvokerOptions = Options;

/** The defaults, from the settings table. */
export const defaults = Object.freeze({
  port: SETTINGS.port.default,
  logLevel: SETTINGS.logLevel.default,
  bodyLimit: SETTINGS.bodyLimit.default,
  includeRaw: SETTINGS.includeRaw.default,
  livenessPath: PROBE_DEFAULTS.liveness,
  readinessPath: PROBE_DEFAULTS.readiness,
  gracePeriod: SETTINGS.gracePeriod.default,
  timeout: SETTINGS.timeout.default,
  maxEventLoopDelay: SETTINGS.maxEventLoopDelay.default,
  metrics: SETTINGS.metrics.default,
  metricsPath: SETTINGS.metricsPath.default,
  headersTimeout: SETTINGS.headersTimeout.default,
  requestTimeout: SETTINGS.requestTimeout.default,
  keepAliveTimeout: SETTINGS.keepAliveTimeout.default,
  maxConnections: SETTINGS.maxConnections.default,
  probeTimeout: SETTINGS.probeTimeout.default,
  // faas-js-runtime's names for the same defaults (its `defaults` export).
  LOG_LEVEL: SETTINGS.logLevel.default,
  PORT: SETTINGS.port.default,
  INCLUDE_RAW: SETTINGS.includeRaw.default,
  BODY_LIMIT: SETTINGS.bodyLimit.default,
});

/**
 * Serves a function: runs its `init()`, then listens. Resolves with the listening server.
 * `func` is a handler or a function module ({ handle, routes, init, shutdown, liveness, readiness, logLevel, cors }).
 * Options passed here win over the environment, which wins over func.yaml and the module's own `logLevel`.
 */
export async function start(func: Invokable | FunctionModule, options: Options = {}): Promise<Server> {
  const module = toFunction(func);
  if (module === undefined) throw new TypeError('start() needs a handler: a function, or an object with handle(), routes or functions');
  checkFunction(module, '<start()>');
  const server = await launch(module, options, options.config === undefined ? undefined : readFuncYaml(options.config));
  // A module with a fetch beside handle: which one is served, said once (serve says it for the module it loads).
  const chosen = shapeChosen(func, module);
  if (chosen !== undefined) loggerOf(server).warn(chosen);
  return server;
}

export { stop, ConfigError, LoadError };
/** The request-scoped logger: in an invocation, wherever it is called, its lines carry that invocation's reqId and trace. */
export { log } from './log/scope';
// The parsers funcrun reads its own settings with, for services built on it (sizes, durations).
export { parseBytes, parseCount, parseDuration, parseSwitch } from './start/func-yaml';
export { Context } from './context';
export { CloudEventResponse } from './cloudevents/cloudevent';
export { readEvent, readEvents, eventResponse, type EventAttributes, type EventResponseInit } from './cloudevents/web';
export { HttpError } from './errors';
export { retry, drop, Outcome, type RetryOptions } from './cloudevents/outcomes';
export { defineEvents } from './event-types';
export { streamed } from './body/body-stream';
export type {
  DataFor,
  EventContext,
  EventDeclaration,
  EventHandler,
  EventOf,
  EventSchema,
  EventsOf,
  EventType,
  FromSchema,
  StandardSchemaV1,
} from './event-types';
export type { LogDestination } from './log/log';
export type {
  CloudEvent,
  CloudEventFunction,
  CloudEventFunctionReturn,
  Config,
  CorsOrigin,
  ErrorBody,
  FetchContext,
  FetchEnv,
  FetchHandler,
  Function,
  FunctionReturn,
  HealthCheck,
  HTTPFunction,
  HTTPFunctionReturn,
  RequestInfo,
  Invokable,
  Logger,
  NamedFunction,
  LogLevel,
  ResponseBody,
  ResponseHeaders,
  ReturnedEvent,
  ReturnedObject,
  StructuredReturn,
  ExactStructuredReturn,
  StreamingFunction,
  BodyStream,
  UploadedFile,
} from './types';
