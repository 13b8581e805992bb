// funcrun's public entry: `start(func, options)` as in faas-js-runtime, `stop(server)`, the
// defaults, and the types function authors use.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import type { Server } from 'node:http';
import { applyEnvs, checkLogLevel, ConfigError, parseBytes, parseCount, parseDuration, parsePort, parseSwitch, readFuncYaml, type FuncYaml } from './config';
import { checkFunction, LoadError, toFunction } from './loader';
import { createLogger, type LogDestination, type LogLevel } from './log';
import { createServer, stop } from './server';
import { useApplicationSdk } from './cloudevent';
import { dirname } from 'node:path';
import { behaviourOf, parseCompat, type Compat } from './compat';
import type { MetricLabels } from './metrics';
import type { CorsOrigin, Function as FunctionModule, Invokable } from './types';

export interface Options {
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Address to listen on. Default: every address (`::`, and IPv4 through it). */
  host?: string;
  logLevel?: LogLevel;
  /** Largest accepted request body, in bytes or with a unit (`2mb`). Default 1 MiB. */
  bodyLimit?: number | string;
  /** Put the body's bytes on `context.rawBody`. Default false. */
  includeRaw?: boolean;
  /** Folder holding func.yaml. */
  config?: string;
  /** func.yaml already read (the CLI reads it before loading the module). */
  funcYaml?: FuncYaml;
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
   * `'faas-js-runtime'`: where the seed and faas-js-runtime disagree, behave as faas-js-runtime
   * (the whole event as the second argument, blanket CORS, text error answers, ...). Default: the seed.
   */
  compat?: Compat | 'none';
  /** The origins allowed to call the function from a browser, as a module's `cors()` gives them (faas-js-runtime's option). */
  cors?: () => CorsOrigin[];
}

/** faas-js-runtime's name for the options of start(). */
export type InvokerOptions = Options;

type Environment = Options & {
  livenessUrl?: string;
  readinessUrl?: string;
  service?: string;
  revision?: string;
  instance?: string;
  /** faas-js-runtime's metric label variables (FAAS_NAME, FAAS_ID, ...). */
  faas?: Partial<MetricLabels>;
};

export const defaults = Object.freeze({
  port: 8080,
  logLevel: 'info' as LogLevel,
  bodyLimit: 1_048_576,
  includeRaw: false,
  livenessPath: '/health/liveness',
  readinessPath: '/health/readiness',
  gracePeriod: 10_000,
  timeout: 0,
  maxEventLoopDelay: 1000,
  metrics: true,
  metricsPath: '/metrics',
  headersTimeout: 20_000,
  requestTimeout: 60_000,
  keepAliveTimeout: 95_000,
  maxConnections: 1024,
  probeTimeout: 5_000,
  // faas-js-runtime's names for the same defaults (its `defaults` export).
  LOG_LEVEL: 'info' as LogLevel,
  PORT: 8080,
  INCLUDE_RAW: false,
  BODY_LIMIT: 1_048_576,
});

/** The options the environment gives, by faas-js-runtime's and Knative's variable names. */
function fromEnvironment(env: NodeJS.ProcessEnv): Environment {
  const out: Environment = {};
  const port = env.PORT || env.FUNC_PORT;
  if (port) out.port = parsePort(port, env.PORT ? 'PORT' : 'FUNC_PORT');
  if (env.FUNC_HOST) out.host = env.FUNC_HOST;
  if (env.FUNC_LOG_LEVEL) out.logLevel = checkLogLevel(env.FUNC_LOG_LEVEL, 'FUNC_LOG_LEVEL');
  if (env.FUNC_BODY_LIMIT) out.bodyLimit = parseBytes(env.FUNC_BODY_LIMIT, 'FUNC_BODY_LIMIT');
  if (env.FUNC_INCLUDE_RAW) out.includeRaw = parseSwitch(env.FUNC_INCLUDE_RAW, 'FUNC_INCLUDE_RAW');
  for (const [name, key] of [
    ['FUNC_TIMEOUT', 'timeout'],
    ['FUNC_MAX_EVENT_LOOP_DELAY', 'maxEventLoopDelay'],
    ['FUNC_HEADERS_TIMEOUT', 'headersTimeout'],
    ['FUNC_REQUEST_TIMEOUT', 'requestTimeout'],
    ['FUNC_KEEP_ALIVE_TIMEOUT', 'keepAliveTimeout'],
    ['FUNC_PROBE_TIMEOUT', 'probeTimeout'],
  ] as const) {
    const value = env[name];
    if (value) out[key] = parseDuration(value, name);
  }
  if (env.FUNC_MAX_CONNECTIONS) out.maxConnections = parseCount(env.FUNC_MAX_CONNECTIONS, 'FUNC_MAX_CONNECTIONS');
  if (env.FUNC_METRICS) out.metrics = parseSwitch(env.FUNC_METRICS, 'FUNC_METRICS');
  if (env.FUNC_METRICS_PATH) out.metricsPath = probePath(env.FUNC_METRICS_PATH, 'FUNC_METRICS_PATH');
  // Knative's container contract names the service and revision; the pod names the instance.
  if (env.K_SERVICE) out.service = env.K_SERVICE;
  if (env.K_REVISION) out.revision = env.K_REVISION;
  if (env.POD_NAME) out.instance = env.POD_NAME;
  if (env.FUNC_COMPAT !== undefined) out.compat = parseCompat(env.FUNC_COMPAT, 'FUNC_COMPAT') ?? 'none';
  const faas: Partial<MetricLabels> = {};
  for (const key of ['faas_name', 'faas_id', 'faas_instance', 'faas_version', 'faas_runtime'] as const) {
    const value = env[key.toUpperCase()];
    if (value) faas[key] = value;
  }
  if (Object.keys(faas).length > 0) out.faas = faas;
  // Full paths win; else the Java variant's root and relative paths (`fw.health.*`) apply.
  const root = env.FUNC_HEALTH_ROOT_PATH;
  const liveness = env.LIVENESS_URL ? probePath(env.LIVENESS_URL, 'LIVENESS_URL') : healthPath(root, env.FUNC_HEALTH_LIVENESS_PATH, 'liveness');
  const readiness = env.READINESS_URL ? probePath(env.READINESS_URL, 'READINESS_URL') : healthPath(root, env.FUNC_HEALTH_READINESS_PATH, 'readiness');
  if (liveness) out.livenessUrl = liveness;
  if (readiness) out.readinessUrl = readiness;
  return out;
}

/**
 * `FUNC_HEALTH_ROOT_PATH` (default `/health`) joined with a relative probe path (default the
 * probe's name), as Quarkus does with `fw.health.root-path`; undefined when neither is set. A
 * relative path given with a leading `/` is taken as a full path.
 */
function healthPath(root: string | undefined, relative: string | undefined, probe: 'liveness' | 'readiness'): string | undefined {
  if (!root && !relative) return undefined;
  const what = `FUNC_HEALTH_${probe.toUpperCase()}_PATH`;
  if (relative?.startsWith('/')) return probePath(relative, what);
  if (relative !== undefined && !/^[\w.~!$&'()*+,;=:@%-]+(\/[\w.~!$&'()*+,;=:@%-]+)*$/.test(relative)) {
    throw new ConfigError(`invalid ${what} '${relative}': expected a relative path such as ${probe}`);
  }
  const base = `/${(root ?? '/health').replace(/^\/+|\/+$/g, '')}`;
  return `${base === '/' ? '' : base}/${relative || probe}`;
}

function probePath(value: string, what: string): string {
  if (!value.startsWith('/')) throw new ConfigError(`invalid ${what} '${value}': expected a path starting with '/'`);
  return value;
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
  const funcYaml = options.funcYaml ?? (options.config === undefined ? undefined : readFuncYaml(options.config));
  useApplicationSdk(options.config ?? (funcYaml === undefined ? process.cwd() : dirname(funcYaml.file)));
  if (funcYaml !== undefined) applyEnvs(funcYaml, process.env);
  const env = fromEnvironment(process.env);

  const logLevel = options.logLevel ?? env.logLevel ?? module.logLevel ?? defaults.logLevel;
  const log = createLogger(checkLogLevel(logLevel, 'log level'), options.logDestination);
  const port = options.port ?? env.port ?? defaults.port;
  const ms = (key: 'timeout' | 'maxEventLoopDelay' | 'headersTimeout' | 'requestTimeout' | 'keepAliveTimeout' | 'probeTimeout') =>
    parseDuration(options[key] ?? env[key] ?? defaults[key], key);
  const name = options.name ?? funcYaml?.name ?? 'function';
  const metricsOn = options.metrics ?? env.metrics ?? defaults.metrics;
  const compat = options.compat === undefined ? env.compat : options.compat === 'none' ? undefined : parseCompat(options.compat, 'compat');
  const behaviour = behaviourOf(compat === 'none' ? undefined : compat);
  const cors = options.cors ?? module.cors;
  const server = createServer(
    cors === module.cors ? module : { ...module, cors },
    {
      bodyLimit: parseBytes(options.bodyLimit ?? env.bodyLimit ?? defaults.bodyLimit),
      includeRaw: options.includeRaw ?? env.includeRaw ?? defaults.includeRaw,
      livenessPath: env.livenessUrl ?? module.liveness?.path ?? funcYaml?.liveness ?? defaults.livenessPath,
      readinessPath: env.readinessUrl ?? module.readiness?.path ?? funcYaml?.readiness ?? defaults.readinessPath,
      name,
      timeout: ms('timeout'),
      maxEventLoopDelay: ms('maxEventLoopDelay'),
      metrics: metricsOn
        ? { path: options.metricsPath ?? env.metricsPath ?? defaults.metricsPath, labels: metricLabels(options.name ?? funcYaml?.name, env, behaviour.faasMetricLabels) }
        : undefined,
      headersTimeout: ms('headersTimeout'),
      requestTimeout: ms('requestTimeout'),
      keepAliveTimeout: ms('keepAliveTimeout'),
      probeTimeout: ms('probeTimeout'),
      maxConnections: parseCount(options.maxConnections ?? env.maxConnections ?? defaults.maxConnections, 'maxConnections'),
      behaviour,
    },
    log,
  );

  await module.init?.({ log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: parsePort(port, 'port'), host: options.host ?? env.host }, () => {
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
 * The labels of every metric, found as faas-js-runtime finds them: the function's name, then
 * FAAS_NAME, then K_SERVICE. Where it has no value it prints `undefined`; funcrun's own behaviour
 * names the instance by the host name (a pod's name) and leaves an unknown version empty.
 */
function metricLabels(name: string | undefined, env: Environment, asFaas: boolean): MetricLabels {
  const { faas = {} } = env;
  const instance = faas.faas_instance ?? env.instance ?? (asFaas ? 'undefined' : hostname());
  return {
    faas_name: name ?? faas.faas_name ?? env.service ?? 'anonymous',
    faas_id: faas.faas_id ?? `${asFaas ? String(env.instance) : instance}-${randomUUID()}`,
    faas_instance: instance,
    faas_version: faas.faas_version ?? env.revision ?? (asFaas ? 'undefined' : ''),
    faas_runtime: faas.faas_runtime ?? 'Node.js',
  };
}

export { stop, ConfigError, LoadError };
// The parsers funcrun reads its own settings with, for services built on it (sizes, durations).
export { parseBytes, parseCount, parseDuration, parseSwitch } from './config';
export { Context } from './context';
export { CloudEventResponse } from './cloudevent';
export { HttpError } from './errors';
export type { LogDestination, RootLogger } from './log';
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
  IncomingBody,
  Invokable,
  Logger,
  NamedFunction,
  LogLevel,
  ResponseBody,
  StructuredReturn,
} from './types';
