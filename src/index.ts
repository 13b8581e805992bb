// funcrun's public entry: `start(func, options)` as in faas-js-runtime, `stop(server)`, the
// defaults, and the types function authors use.
import { randomUUID } from './util/random';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import type { Server } from 'node:http';
import { applyEnvs, ConfigError, readFuncYaml } from './start/func-yaml';
import { checkFunction, LoadError, toFunction } from './start/loader';
import { createLogger, type LogDestination, type LogLevel, type RootLogger } from './log/log';
import { createServer } from './http-server';
import { stop } from './lifecycle/lifecycle';
import { setProcessLogger } from './log/scope';
import { useApplicationSdk } from './cloudevents/cloudevent';
import { loadTracing } from './telemetry/otel';
import { openIdempotency } from './events/idempotency/idempotency';
import { dirname } from 'node:path';
import { behaviourOf, enteredAsFaasJsRuntime, type Compat } from './start/compat';
import { checkDistinct, fromEnvironment, probePaths, resolve, SETTINGS, type SettingName, type Values } from './start/settings';
import type { MetricLabels } from './telemetry/metrics';
import type { CorsOrigin, Function as FunctionModule, Invokable } from './types';

export interface Options {
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Address to listen on. Default: every address (`::`, and IPv4 through it). */
  host?: string;
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
  livenessPath: '/health/liveness',
  readinessPath: '/health/readiness',
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

/** What the environment says of the instance, for the metric labels (Knative's and faas-js-runtime's names). */
interface Identity {
  service?: string;
  revision?: string;
  instance?: string;
  faas: Partial<MetricLabels>;
}

function identityOf(env: NodeJS.ProcessEnv): Identity {
  const faas: Partial<MetricLabels> = {};
  for (const key of ['faas_name', 'faas_id', 'faas_instance', 'faas_version', 'faas_runtime'] as const) {
    const value = env[key.toUpperCase()];
    if (value) faas[key] = value;
  }
  return { service: env.K_SERVICE || undefined, revision: env.K_REVISION || undefined, instance: env.POD_NAME || undefined, faas };
}

/**
 * Serves a function: runs its `init()`, then listens. Resolves with the listening server.
 * `func` is a handler or a function module ({ handle, routes, init, shutdown, liveness, readiness, logLevel, cors }).
 * Options passed here win over the environment, which wins over func.yaml and the module's own `logLevel`.
 */
export async function start(func: Invokable | FunctionModule, options: Options = {}): Promise<Server> {
  const module = toFunction(func);
  if (module === undefined) throw new TypeError('start() needs a handler: a function, or an object with handle(), routes or functions');
  checkFunction(module, '<start()>');
  const funcYaml = options.config === undefined ? undefined : readFuncYaml(options.config);
  // The application's own packages (its CloudEvents SDK, its OpenTelemetry API) are found from its folder.
  const folder = options.config ?? (funcYaml === undefined ? process.cwd() : dirname(funcYaml.file));
  useApplicationSdk(folder);
  const skipped = funcYaml === undefined ? undefined : applyEnvs(funcYaml, process.env);
  const env = fromEnvironment(process.env);
  const value = <K extends SettingName>(name: K, fallback?: Values[K]) => resolve(name, options[name as keyof Options], env, fallback);

  const chosen = value('compat');
  const byName = chosen === undefined && enteredAsFaasJsRuntime(options.command);
  const behaviour = behaviourOf(chosen ?? (byName ? 'faas-js-runtime' : 'none'));
  const log = createLogger(value('logLevel', funcYaml?.logLevel ?? module.logLevel ?? behaviour.defaultLogLevel), options.logDestination);
  if (behaviour.eventAsArgument) announceCompatibility(log, byName);
  // Debug, not info: a deployed function's secret and config map references are normal, and set by the platform.
  if (skipped?.platform.length) log.debug({ skipped: skipped.platform }, 'run.envs entries left to the platform');
  if (skipped?.unresolved.length) log.debug({ skipped: skipped.unresolved }, 'run.envs entries not set: the variable they copy is not set');
  const name = options.name ?? funcYaml?.name ?? 'function';
  const cors = options.cors ?? module.cors;
  const requestTimeout = value('requestTimeout');
  // node refuses a headers timeout past the request timeout: the headers are due by then anyway.
  const headersTimeout = requestTimeout > 0 ? Math.min(value('headersTimeout'), requestTimeout) : value('headersTimeout');
  const events = module.events;
  const idempotent = value('idempotency', events?.idempotency === undefined ? undefined : events.idempotency !== false);
  const timeout = value('timeout');
  const store = idempotent ? value('idempotencyStore') : 'memory';
  // A shared store keeps each function's keys apart by its name: two functions without one would
  // answer each other's events with each other's answers.
  const storeName = options.name ?? funcYaml?.name ?? (process.env.K_SERVICE || undefined);
  if (store !== 'memory' && storeName === undefined) {
    throw new ConfigError(
      "a shared idempotency store keeps each function's events apart by the function's name, and this one has none: set name in func.yaml (Knative sets K_SERVICE, which serves too)",
    );
  }
  const idempotency = idempotent
    ? await openIdempotency(
        {
          store,
          window: value('idempotencyWindow'),
          claim: value('idempotencyClaim'),
          timeout,
          entries: value('idempotencyEntries'),
          bytes: value('idempotencyBytes'),
          keyLimit: value('idempotencyKeyLimit'),
          answerLimit: value('idempotencyAnswerLimit'),
          name: storeName ?? name,
          key: typeof events?.idempotency === 'object' ? events.idempotency.key : undefined,
          folder,
        },
        log,
      )
    : undefined;
  const probes = probePaths({ env: process.env, module: { liveness: module.liveness?.path, readiness: module.readiness?.path }, funcYaml: funcYaml ?? {} });
  checkDistinct({ 'liveness probe': probes.liveness, 'readiness probe': probes.readiness, metrics: value('metrics') ? value('metricsPath') : undefined });
  const server = createServer(
    cors === module.cors ? module : { ...module, cors },
    {
      bodyLimit: value('bodyLimit'),
      uploads: {
        limits: {
          body: value('uploadLimit'),
          fileSize: value('fileSizeLimit') ?? value('uploadLimit'),
          files: value('filesLimit'),
          fields: value('fieldsLimit'),
          fieldSize: value('fieldSizeLimit'),
          // Fields (their names too) and files' names are held in memory, as a parsed body is: together, to the larger of the two.
          fieldsTogether: Math.max(value('bodyLimit'), value('fieldSizeLimit')),
          partHeader: value('partHeaderLimit'),
        },
        memory: value('fileMemoryLimit'),
        tempDir: options.tempDir ?? tmpdir(),
        diskLimit: value('uploadDiskLimit'),
        minRate: value('minBodyRate'),
      },
      includeRaw: value('includeRaw'),
      livenessPath: probes.liveness,
      readinessPath: probes.readiness,
      name,
      timeout,
      idempotency,
      maxEventLoopDelay: value('maxEventLoopDelay'),
      metrics: value('metrics')
        ? { path: value('metricsPath'), labels: metricLabels(options.name ?? funcYaml?.name, identityOf(process.env), behaviour.faasMetricLabels) }
        : undefined,
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: value('keepAliveTimeout'),
      probeTimeout: value('probeTimeout'),
      maxConnections: value('maxConnections'),
      behaviour,
      accessLog: value('accessLog') ?? behaviour.accessLog,
      tracing: loadTracing(folder),
    },
    log,
  );

  // Outside an invocation, `log` writes with this server's logger (init() and shutdown() included).
  setProcessLogger(log);
  await module.init?.({ log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: value('port'), host: value('host') }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port: bound } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  log.info({ port: bound, address }, `listening on http://${host}:${bound}`);
  return server;
}

/**
 * Says once at start that faas-js-runtime's behaviour is on, and how to leave it. Chosen by the
 * name funcrun was entered under, the line is a warning, so that faas-js-runtime's default level
 * (warn) shows it; chosen with FUNC_COMPAT or the option, it is information.
 */
// Said once per process, not per start: a test file that starts a server per test says it once.
const compatibilityNotice = { said: false };

function announceCompatibility(log: RootLogger, byName: boolean): void {
  if (compatibilityNotice.said) return;
  compatibilityNotice.said = true;
  const message =
    "faas-js-runtime compatibility: a CloudEvent function gets the whole event as its second argument, and answers, errors, routes, CORS and the log level are faas-js-runtime's " +
    "(docs/migrating.md); FUNC_COMPAT=none for funcrun's own behaviour";
  if (byName) log.warn({ compat: 'faas-js-runtime', because: 'funcrun runs under the name faas-js-runtime' }, message);
  else log.info({ compat: 'faas-js-runtime', because: 'FUNC_COMPAT' }, message);
}

/**
 * The labels of every metric, found as faas-js-runtime finds them: the function's name, then
 * FAAS_NAME, then K_SERVICE. Where it has no value it prints `undefined`; funcrun's own behaviour
 * names the instance by the host name (a pod's name) and leaves an unknown version empty.
 */
function metricLabels(name: string | undefined, env: Identity, asFaas: boolean): MetricLabels {
  const { faas } = env;
  const instance = faas.faas_instance ?? env.instance ?? (asFaas ? 'undefined' : hostname());
  let id = faas.faas_id;
  return {
    faas_name: name ?? faas.faas_name ?? env.service ?? 'anonymous',
    // Made when first read (the first scrape): node:crypto is not loaded at start for it.
    get faas_id() {
      return (id ??= `${asFaas ? String(env.instance) : instance}-${randomUUID()}`);
    },
    faas_instance: instance,
    faas_version: faas.faas_version ?? env.revision ?? (asFaas ? 'undefined' : ''),
    faas_runtime: faas.faas_runtime ?? 'Node.js',
  };
}

export { stop, ConfigError, LoadError };
/** The request-scoped logger: in an invocation, wherever it is called, its lines carry that invocation's reqId and trace. */
export { log } from './log/scope';
// The parsers funcrun reads its own settings with, for services built on it (sizes, durations).
export { parseBytes, parseCount, parseDuration, parseSwitch } from './start/func-yaml';
export { Context } from './context';
export { CloudEventResponse } from './cloudevents/cloudevent';
export { HttpError } from './errors';
export { retry, drop, Outcome, type RetryOptions } from './events/outcomes';
export { defineEvents } from './events/events';
export { streamed } from './body/body-stream';
export type { DataFor, EventContext, EventDeclaration, EventHandler, EventOf, EventSchema, EventsOf, FromSchema, StandardSchemaV1 } from './events/events';
export type { LogDestination } from './log/log';
export type {
  CloudEvent,
  CloudEventFunction,
  CloudEventFunctionReturn,
  Config,
  CorsOrigin,
  ErrorBody,
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
  StreamingFunction,
  BodyStream,
  UploadedFile,
} from './types';
