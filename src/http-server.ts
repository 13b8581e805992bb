// The HTTP server: node's server made once at start, its events wired, and every request handed
// to `onRequest` (request.ts), the request path as its numbered steps. Everything that can be
// decided once (routes, probe paths, CORS origins, log prefixes) is decided here. The parts beside
// it: routes.ts (the route table), connections.ts (pipelining, malformed HTTP), probes.ts,
// invocation.ts (timeout, batches), respond.ts (return rules), errors.ts (sendError, the one place
// errors become responses), lifecycle.ts (stop).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AsyncResource } from 'node:async_hooks';
import type { Behaviour } from './start/compat';
import { ConfigError } from './start/func-yaml';
import { responseDefaults } from './cloudevents/cloudevent';
import { originCheck } from './http/cors';
import { runtimeError, lastResort, sendError } from './errors';
import type { RootLogger } from './log/log';
import type { Tracing } from './telemetry/otel';
import { Metrics, type MetricLabels } from './telemetry/metrics';
import { monitorLoop } from './lifecycle/overload';
import { backgroundSettled, register, runShutdown, type Runtime } from './lifecycle/lifecycle';
import { InFlight } from './lifecycle/in-flight';
import { timedInvoker } from './invocation';
import { clientError, manageConnections, rawError } from './http/connections';
import { KeepAliveSweep } from './http/keep-alive';
import { buildRoutes } from './routing/routes';
import type * as ContractsModule from './events/contracts';
import type * as IdempotencyModule from './events/idempotency/idempotency';
import type { IdempotencySettings } from './events/idempotency/idempotency';
import { awaitContinue, onRequest } from './request';
import type { Pipeline } from './exchange';
import type { FetchEnv, Function as FunctionModule, Invokable } from './types';
import type { MultipartLimits } from './uploads/multipart';
import type * as UploadFolderModule from './uploads/upload-folder';
import type * as WebGlobals from './fetch/web-globals';
import type * as ServeFetchModule from './fetch/serve';
import type { UploadFolder } from './uploads/upload-folder';

/** Settings resolved once at start (see `start` in index.ts for where each comes from). */
export interface Settings {
  bodyLimit: number;
  /**
   * Multipart bodies and bodies streamed to a function: their limits, where files past `memory`
   * bytes go and how many bytes of them the server holds at once (`diskLimit`), and the least a
   * client streaming a body sends per second past the request timeout (`minRate`).
   */
  uploads: { limits: MultipartLimits; memory: number; tempDir: string; diskLimit: number; minRate: number };
  includeRaw: boolean;
  livenessPath: string;
  readinessPath: string;
  /** The function's name: the default `source` of events it answers with. */
  name: string;
  /** A handler still running after this many ms is answered 504 and its signal aborted; 0 is off. */
  timeout: number;
  /** Readiness answers 503 while the event loop runs later than this many ms; 0 is off. */
  maxEventLoopDelay: number;
  /** Where Prometheus metrics are served, or undefined when they are off. */
  metrics?: { path: string; labels: MetricLabels };
  /** node:http's limits against slow and idle clients, in ms. */
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  /** Open connections at most; past it node refuses new ones. */
  maxConnections: number;
  /** A liveness or readiness check that has not answered after this many ms counts as failed. */
  probeTimeout: number;
  /** Where the function contract and faas-js-runtime differ, which one to follow (compat.ts). */
  behaviour: Behaviour;
  /** An info line per answered request (else a debug one). */
  accessLog: boolean;
  /** The application's OpenTelemetry, active once it registers a tracer provider (otel.ts). */
  tracing?: Tracing;
  /** With idempotency on: its store and limits (idempotency.ts). */
  idempotency?: IdempotencySettings;
  /** A fetch handler's `env`: the process environment, read by the entry point (launch.ts). */
  env?: FetchEnv;
  /** A fetch handler's Request is a look-alike made lazily, and the globals are light (fetch/web-globals.ts). */
  lightWebGlobals?: boolean;
}

/**
 * A handler that streams its body (`streamed()`) gets bytes as they come, never read as a
 * CloudEvent: with `needs` on (contracts, idempotency), its events would run unchecked, and every
 * duplicate again. Refused at start, as a named function that streams and takes events is.
 */
function refuseStreamedEvents(module: FunctionModule, needs: string): void {
  const streaming = [
    ...((module.handle as Invokable | undefined)?.streamBody === true ? ['handle'] : []),
    ...Object.entries(module.routes ?? {}).flatMap(([key, fn]) => (fn.streamBody === true ? [`routes['${key}']`] : [])),
  ];
  if (streaming.length === 0) return;
  throw new ConfigError(
    `${streaming.join(', ')} ${streaming.length === 1 ? 'streams its' : 'stream their'} body, so no request to it is read as a CloudEvent: ${needs} cannot hold for it. Read the body whole (drop streamed()), or turn ${needs} off`,
  );
}

export function createServer(module: FunctionModule, settings: Settings, log: RootLogger): Server {
  const metrics = settings.metrics === undefined ? undefined : new Metrics(settings.metrics.labels);
  const loop = settings.maxEventLoopDelay > 0 || metrics !== undefined ? monitorLoop() : undefined;
  if (loop !== undefined) metrics?.lagFrom(loop.delay);
  const behaviour = settings.behaviour;
  const cors = module.cors ? originCheck(module.cors()) : undefined;
  // Event contracts and idempotency load only for a module that uses them (scripts/bundle.js ON_DEMAND).
  const types = module.events?.types;
  if (types !== undefined || settings.idempotency !== undefined) refuseStreamedEvents(module, types !== undefined ? 'event contracts' : 'idempotency');
  // Made by the first multipart body: the uploads part loads then (scripts/bundle.js ON_DEMAND).
  let uploadFolder: UploadFolder | undefined;
  const contracts =
    types === undefined ? undefined : (require('./events/contracts') as typeof ContractsModule).compileContracts(types, module.events?.passthrough === true);
  const idempotency =
    settings.idempotency === undefined
      ? undefined
      : new (require('./events/idempotency/idempotency') as typeof IdempotencyModule).Idempotency(settings.idempotency, metrics);
  if (contracts !== undefined || idempotency !== undefined) metrics?.countEvents();
  const routes = buildRoutes(
    module,
    { livenessPath: settings.livenessPath, readinessPath: settings.readinessPath, metricsPath: settings.metrics?.path },
    settings.env,
  );
  // A fetch handler's part loads with its server (scripts/bundle.js ON_DEMAND); with lightWebGlobals,
  // the globals are replaced before its first request (fetch/web-globals.ts).
  const fetchPart = routes.fallback?.kind === 'fetch' ? (require('./fetch/serve') as typeof ServeFetchModule) : undefined;
  if (fetchPart !== undefined && settings.lightWebGlobals === true) (require('./fetch/web-globals') as typeof WebGlobals).installWebGlobals();
  const runtime: Runtime = {
    module,
    log,
    withoutCodes: behaviour.withoutErrorCodes,
    draining: false,
    metrics,
    background: new Set(),
    claims: idempotency,
    inFlight: new InFlight(),
    outside: AsyncResource.bind((run) => run()),
    probes: { liveness: settings.livenessPath, readiness: settings.readinessPath },
  };
  // One line per answered request: at info when asked for (FUNC_ACCESS_LOG), else at debug.
  const accessLevel = settings.accessLog ? 'info' : 'debug';
  const pipeline: Pipeline = {
    settings,
    behaviour,
    module,
    routes,
    log,
    runtime,
    metrics,
    cors,
    corsForEveryOrigin: behaviour.corsForEveryOrigin && cors === undefined,
    eventData: { asFaasJsRuntime: behaviour.eventDataAsFaasJsRuntime },
    defaults: responseDefaults(settings.name, behaviour.eventsWrittenAsSdk, behaviour.eventsAnsweredBinary),
    tracing: settings.tracing,
    invoke: timedInvoker(settings.timeout),
    contracts,
    idempotency,
    probeOptions: {
      probeTimeout: settings.probeTimeout,
      maxEventLoopDelay: settings.maxEventLoopDelay,
      loopDelay: loop?.delay,
      notReady: idempotency && (() => idempotency.problem()),
    },
    accessLevel: log.isEnabled(accessLevel) ? accessLevel : undefined,
    uploadFolder: () =>
      (uploadFolder ??= new (require('./uploads/upload-folder') as typeof UploadFolderModule).UploadFolder(
        settings.uploads.tempDir,
        settings.uploads.diskLimit,
      )),
    serveFetch: fetchPart?.serveFetch,
    fetchAtOnce: fetchPart !== undefined && module.authorize === undefined,
    requests: 0,
  };
  const errorStyle = { format: module.errorBody, withoutCodes: behaviour.withoutErrorCodes };
  // A request refused before onRequest still gets a reqId of its own.
  const newRequestLog = () => log.forRequest(++pipeline.requests);

  // The last line of defence: whatever escapes onRequest still gets an answer, never a crash.
  function handle(req: IncomingMessage, res: ServerResponse): void {
    keepAlive?.advertise(res);
    try {
      onRequest(pipeline, req, res)?.catch((err: unknown) => lastResort(res, log, err));
    } catch (err) {
      lastResort(res, log, err);
    }
  }

  const options: ServerOptions & { optimizeEmptyRequests?: boolean } = {
    // Checked in onRequest, so that the answer is JSON like every other error.
    requireHostHeader: false,
    // A request without Content-Length or Transfer-Encoding has no body (RFC 9112 section 6.3):
    // node 24 then skips its stream's life (its end and close events, each a tick: some 2,400
    // instructions a request), which nothing of funcrun's waits for (hasBody() is false). Only for
    // a fetch handler, which never sees node's request: a handle function's context.req is it, and
    // code that waits for its 'end' would wait forever. Node 22 does not know the option.
    optimizeEmptyRequests: fetchPart !== undefined,
  };
  const server = createHttpServer(
    {
      ...options,
      headersTimeout: settings.headersTimeout,
      requestTimeout: settings.requestTimeout,
      // How often node checks those limits: often enough that they hold to within a quarter.
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.min(settings.headersTimeout, settings.requestTimeout || Infinity) / 4)),
    },
    handle,
  );
  // Idle connections closed by a sweep rather than a timer per request (keep-alive.ts).
  const keepAlive = KeepAliveSweep.take(server, settings.keepAliveTimeout);
  manageConnections(server);
  server.maxConnections = settings.maxConnections;
  // With `Expect: 100-continue`, a body over the limit is refused before the client sends it.
  // With `Expect: 100-continue`, a body over its limit is refused before the client sends it (input.ts).
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitContinue(req);
    handle(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    sendError(req, res, runtimeError('FUNCRUN_EXPECTATION_FAILED', 'only the expectation 100-continue is supported'), newRequestLog(), errorStyle);
  });
  server.once('listening', () => metrics?.ready(process.uptime()));
  if (metrics !== undefined) server.on('connection', (socket: Socket) => metrics.connection(socket));
  server.once('close', () => loop?.stop());
  // Files of requests the grace period cut short go with the folder.
  server.once('close', () => uploadFolder?.remove());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => clientError(err, socket));
  // A function is not a proxy: CONNECT gets a JSON 405 (node would close the socket silently).
  server.on('connect', (_req: IncomingMessage, socket: Socket) => rawError(socket, 'FUNCRUN_CONNECT_REFUSED', 'CONNECT is not supported'));
  // Closed without stop(): shutdown() runs once the work handed to waitUntil has settled and the
  // idempotency store has taken the outcomes still being written. stop() does the same itself,
  // within its grace period.
  server.once('close', () => {
    if (runtime.draining) return;
    backgroundSettled(runtime)
      .then(() => idempotency?.close())
      .then(() => runShutdown(runtime))
      // Logged by runShutdown.
      .catch(() => undefined);
  });
  register(server, runtime);
  return server;
}
