// start()'s work once func.yaml is read: the options resolved by the settings table, the logger,
// the idempotency store, the server, init(), listen. start() reads func.yaml when it is given a
// folder; serve reads it before loading the function (whose top level may read its run.envs) and
// hands it here, so that it is read once either way.
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import type { Server } from 'node:http';
import { dirname } from 'node:path';
import { randomUUID } from '../util/random';
import { applyEnvs, ConfigError, type FuncYaml } from './func-yaml';
import { createLogger, type RootLogger } from '../log/log';
import { createServer } from '../http-server';
import { setProcessLogger } from '../log/scope';
import { useApplicationSdk } from '../cloudevents/cloudevent';
import { loadTracing } from '../telemetry/otel';
import type * as IdempotencyModule from '../events/idempotency/idempotency';
import { behaviourOf, enteredAsFaasJsRuntime } from './compat';
import { checkDistinct, probePaths } from './probe-paths';
import { fromEnvironment, listenPlace, resolve, type StartOptionName, type Values } from './settings';
import type { MetricLabels } from '../telemetry/metrics';
import type { Function as FunctionModule } from '../types';
import type { Options } from '../index';

/**
 * Serves `module` (as toFunction() made it and checkFunction() checked it) with `options` and
 * `funcYaml`, the func.yaml of `options.config` as read (undefined when there is none): runs its
 * `init()`, then listens. Resolves with the listening server.
 */
export async function launch(module: FunctionModule, options: Options, funcYaml: FuncYaml | undefined): Promise<Server> {
  // The application's own packages (its CloudEvents SDK, its OpenTelemetry API) are found from its folder.
  const folder = options.config ?? (funcYaml === undefined ? process.cwd() : dirname(funcYaml.file));
  useApplicationSdk(folder);
  // serve has applied them already, before loading the function: a variable set is kept, so this
  // sets nothing new then, and says what it left.
  const skipped = funcYaml === undefined ? undefined : applyEnvs(funcYaml, process.env);
  const env = fromEnvironment(process.env);
  // `options[name]` compiles only while Options has every option of the table, each of a type the
  // table's parser takes (OptionTypes): no cast between them.
  const value = <K extends StartOptionName>(name: K, fallback?: Values[K]) => resolve(name, options[name], env, fallback);

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
    ? // Loaded only by a function that turns idempotency on (scripts/bundle.js ON_DEMAND).
      await (require('../events/idempotency/idempotency') as typeof IdempotencyModule).openIdempotency(
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
      // A fetch handler's `env` (FetchEnv).
      env: process.env,
      lightWebGlobals: module.fetch !== undefined && value('lightWebGlobals'),
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
  const { portFrom, hostFrom, ...place } = listenPlace(options, env, process.env);
  await module.init?.({ log });
  await new Promise<void>((resolve, reject) => {
    // The error names where what failed was set: the port for a port in use or refused (the start
    // failure's hint moves it there), else the host (one that does not resolve, say).
    const failed = (err: NodeJS.ErrnoException) => {
      const setBy = err.code === 'EADDRINUSE' || err.code === 'EACCES' ? portFrom : hostFrom;
      reject(setBy === undefined ? err : Object.assign(err, { setBy }));
    };
    server.once('error', failed);
    // No host (`::` among them) is node's every address, both families where the machine has them.
    server.listen(place.host === undefined ? { port: place.port } : place, () => {
      server.off('error', failed);
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
