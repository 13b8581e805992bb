// The HTTP server: routing, body, CloudEvents, context, invocation, response. Everything that
// can be decided once (routes, probe paths, CORS origins, log prefixes) is decided in
// `createServer`; the per-request path only does per-request work.
import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { CloudEvent } from 'cloudevents';
import { hasBody, parseBody, readBody, searchParamsToObject } from './body';
import { asCloudEvent, detectMode, readEvent, responseDefaults } from './cloudevent';
import { Context } from './context';
import { namedRoutes } from './functions';
import { allowOrigin, isPreflight, originCheck, type OriginCheck } from './cors';
import { errorBody, HttpError, statusOf, type ErrorBody } from './errors';
import { parseRouteKey } from './loader';
import type { Logger, RootLogger } from './log';
import { parseMediaType } from './media-type';
import { JSON_TYPE, respond, send, TEXT } from './respond';
import { Router } from './router';
import { Metrics, METRICS_TYPE, type MetricLabels } from './metrics';
import { monitorLoop } from './overload';
import type { Function as FunctionModule, HealthCheck, Invokable } from './types';

/** Settings resolved once at start (see `start` in index.ts for where each comes from). */
export interface Settings {
  bodyLimit: number;
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
}

type Target =
  | { kind: 'function'; fn: Invokable }
  | { kind: 'probe'; check?: HealthCheck; readiness: boolean }
  | { kind: 'metrics' };

interface Runtime {
  readonly module: FunctionModule;
  readonly log: RootLogger;
  draining: boolean;
  shutdown?: Promise<void>;
  metrics?: Metrics;
}

const runtimes = new WeakMap<Server, Runtime>();

export function createServer(module: FunctionModule, settings: Settings, log: RootLogger): Server {
  const router = new Router<Target>();
  for (const [path, check, readiness] of [
    [settings.livenessPath, module.liveness, false],
    [settings.readinessPath, module.readiness, true],
  ] as const) {
    router.add('GET', path, { kind: 'probe', check, readiness });
  }
  const metrics = settings.metrics === undefined ? undefined : new Metrics(settings.metrics.labels);
  if (settings.metrics !== undefined) router.add('GET', settings.metrics.path, { kind: 'metrics' });
  const loop = settings.maxEventLoopDelay > 0 || metrics !== undefined ? monitorLoop() : undefined;
  if (loop !== undefined) metrics?.lagFrom(loop.delay);
  const claimed = new Set<string>();
  for (const [key, fn] of Object.entries(module.routes ?? {})) {
    const { method, path } = parseRouteKey(key, (message) => {
      throw new Error(`routes['${key}']: ${message}`);
    });
    router.add(method, path, { kind: 'function', fn });
    claimed.add(path);
  }
  for (const { method, path, handler } of namedRoutes(module)) {
    if (claimed.has(path)) throw new Error(`routes and functions both claim ${path}`);
    router.add(method, path, { kind: 'function', fn: handler });
  }
  const fallback: Target | undefined = module.handle ? { kind: 'function', fn: module.handle } : undefined;
  const cors: OriginCheck | undefined = module.cors ? originCheck(module.cors()) : undefined;
  const defaults = responseDefaults(settings.name);
  const debug = log.isEnabled('debug');
  const runtime: Runtime = { module, log, draining: false, metrics };
  let requests = 0;

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reqId = ++requests;
    const reqLog = log.child(reqId);
    if (runtime.draining) res.setHeader('connection', 'close');
    if (debug) access(req, res, reqLog);
    // Set when the request reaches the function: it then counts as an invocation in the metrics.
    let began = -1;
    try {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      const method = req.method ?? 'GET';
      if (cors !== undefined && req.headers.origin !== undefined) {
        const allowed = allowOrigin(req, res, cors);
        if (isPreflight(req)) {
          if (!allowed) throw new HttpError(403, `origin '${req.headers.origin}' is not allowed`);
          return send(req, res, 204, undefined, undefined);
        }
      }
      const match = router.find(method, path);
      let target: Target;
      let params = {};
      if (match.kind === 'found') {
        target = match.handler;
        params = match.params;
      } else if (match.kind === 'method') {
        throw new HttpError(405, `method ${method} is not allowed on ${path}`, { headers: { allow: match.allow.join(', ') } });
      } else if (fallback !== undefined) {
        target = fallback;
      } else {
        throw new HttpError(404, `no route for ${method} ${path}`);
      }
      if (target.kind === 'probe') return await probe(req, res, target, reqLog);
      if (target.kind === 'metrics') return send(req, res, 200, { 'content-type': METRICS_TYPE }, metrics!.render());
      if (metrics !== undefined) began = performance.now();

      const media = parseMediaType(req.headers['content-type']);
      const bytes = hasBody(req) ? await readBody(req, settings.bodyLimit) : undefined;
      const mode = detectMode(req.headers, media);
      const query = q === -1 ? Object.create(null) : searchParamsToObject(new URLSearchParams(url.slice(q + 1)));
      const context = (event?: CloudEvent<unknown>) => {
        const ctx = new Context(req, reqLog, path, query, params, media?.type, defaults, res);
        if (settings.includeRaw) ctx.rawBody = bytes;
        if (event !== undefined) {
          ctx.cloudevent = event;
          ctx.body = event.data;
        }
        return ctx;
      };

      let value: unknown;
      if (mode === undefined) {
        const data = bytes === undefined ? undefined : parseBody(bytes, media);
        const ctx = context();
        ctx.body = data;
        value = await invoke(target.fn, ctx, data);
      } else {
        const event = readEvent(mode, req.headers, bytes, media);
        value = Array.isArray(event) ? await batch(event, target.fn, context, invoke) : await invoke(target.fn, context(event), event.data);
      }
      if (runtime.draining) res.setHeader('connection', 'close');
      respond(req, res, value, mode);
      if (began >= 0) metrics!.record((performance.now() - began) / 1000, false);
    } catch (err) {
      if (runtime.draining && !res.headersSent) res.setHeader('connection', 'close');
      sendError(req, res, err, reqLog, module.errorBody);
      if (began >= 0) metrics!.record((performance.now() - began) / 1000, true);
    }
  }

  // Calls the function; with a timeout, a handler still running when it passes is answered 504
  // and its context's signal aborted (the handler decides whether to stop; its late result is dropped).
  const timeout = settings.timeout;
  function invoke(fn: Invokable, ctx: Context, data: unknown): unknown {
    const result = fn(ctx, data);
    if (timeout <= 0 || !isThenable(result)) return result;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new HttpError(504, `the function did not answer within ${timeout} ms`);
        ctx.abort(error);
        reject(error);
      }, timeout);
    });
    return Promise.race([result, expired]).finally(() => clearTimeout(timer));
  }

  const server = createHttpServer(
    {
      headersTimeout: settings.headersTimeout,
      requestTimeout: settings.requestTimeout,
      // How often node checks those limits: often enough that they hold to within a quarter.
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.min(settings.headersTimeout, settings.requestTimeout || Infinity) / 4)),
    },
    (req, res) => void onRequest(req, res),
  );
  server.keepAliveTimeout = settings.keepAliveTimeout;
  server.once('listening', () => metrics?.ready(process.uptime()));
  server.once('close', () => loop?.stop());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => clientError(err, socket));
  server.once('close', () => runShutdown(runtime).catch((err) => log.error(err, 'shutdown() failed')));
  runtimes.set(server, runtime);
  return server;

  async function probe(req: IncomingMessage, res: ServerResponse, target: Target & { kind: 'probe' }, reqLog: Logger): Promise<void> {
    let healthy = true;
    if (target.check !== undefined) {
      try {
        healthy = (await target.check()) !== false;
      } catch (err) {
        reqLog.warn(err, `${target.readiness ? 'readiness' : 'liveness'} check failed`);
        healthy = false;
      }
    }
    // Checked after the module's own check, which may have been in flight when draining began.
    if (target.readiness && runtime.draining) {
      healthy = false;
      res.setHeader('connection', 'close');
    }
    // An event loop running late is a saturated instance: the platform should route elsewhere.
    if (target.readiness && healthy && settings.maxEventLoopDelay > 0) {
      const delay = loop!.delay();
      if (delay > settings.maxEventLoopDelay) {
        healthy = false;
        reqLog.warn({ eventLoopDelay: Math.round(delay) }, 'not ready: the event loop is running late');
      }
    }
    if (healthy) send(req, res, 200, { 'content-type': TEXT }, 'OK');
    else send(req, res, 503, { 'content-type': JSON_TYPE }, errorJson(503, undefined, reqLog, module.errorBody));
  }
}

/**
 * A batch (`application/cloudevents-batch+json`): the handler runs once per event, in order.
 * The CloudEvents it returns are answered as a batch; values that are not events are not sent.
 */
async function batch(
  events: CloudEvent<unknown>[],
  fn: Invokable,
  context: (event: CloudEvent<unknown>) => Context,
  invoke: (fn: Invokable, ctx: Context, data: unknown) => unknown,
): Promise<CloudEvent<unknown>[] | undefined> {
  const replies: CloudEvent<unknown>[] = [];
  for (const event of events) {
    const value = await invoke(fn, context(event), event.data);
    const reply = value !== null && typeof value === 'object' ? asCloudEvent(value) : undefined;
    if (reply !== undefined) replies.push(reply);
  }
  return replies.length === 0 ? undefined : replies;
}

/**
 * The one place a thrown value becomes a response. 5xx details go to the log, never to the
 * client. `format` is the module's `errorBody`, when it shapes its own error bodies.
 */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  thrown: unknown,
  log: Logger,
  format?: (body: ErrorBody, thrown: unknown) => unknown,
): void {
  const status = statusOf(thrown);
  if (status >= 500) log.error(thrown instanceof Error ? thrown : { thrown: describe(thrown) }, 'request failed');
  else log.debug({ statusCode: status, message: (thrown as { message?: unknown } | undefined)?.message }, 'request rejected');
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  for (const name of res.getHeaderNames()) {
    if (!name.startsWith('access-control-') && name !== 'vary' && name !== 'connection') res.removeHeader(name);
  }
  const headers: Record<string, string> = { 'content-type': JSON_TYPE, ...errorHeaders(thrown, status) };
  // A body we stopped reading leaves the connection unusable.
  if (status === 413) headers.connection = 'close';
  send(req, res, status, headers, errorJson(status, thrown, log, format));
}

function errorJson(status: number, thrown: unknown, log: Logger, format?: (body: ErrorBody, thrown: unknown) => unknown): string {
  const body = errorBody(status, thrown);
  if (format === undefined) return JSON.stringify(body);
  try {
    return JSON.stringify(format(body, thrown)) ?? JSON.stringify(body);
  } catch (err) {
    log.error(err, 'errorBody() failed');
    return JSON.stringify(body);
  }
}

// Headers a thrown error asks for (`Allow` on a 405, `WWW-Authenticate` on a 401): only from an
// error that chose its own 4xx status, so a library error that happens to carry `headers` adds none.
function errorHeaders(thrown: unknown, status: number): Record<string, string> | undefined {
  if (thrown instanceof HttpError) return thrown.headers;
  if (status >= 500 || thrown === null || typeof thrown !== 'object') return undefined;
  const { headers } = thrown as { headers?: unknown };
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (typeof value === 'string') out[name.toLowerCase()] = value;
  return out;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';
}

function describe(value: unknown): string {
  try {
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    return String(value);
  }
}

function access(req: IncomingMessage, res: ServerResponse, log: Logger): void {
  const started = process.hrtime.bigint();
  res.once('finish', () => {
    const responseTime = Number(process.hrtime.bigint() - started) / 1e6;
    log.debug({ method: req.method, url: req.url, statusCode: res.statusCode, responseTime }, 'request completed');
  });
}

/** Malformed HTTP never reaches a handler: answer it with a JSON error and close. */
function clientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify(errorBody(status, new HttpError(status, status === 400 ? 'malformed HTTP request' : '')));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: ${JSON_TYPE}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** The logger a server made by start() writes with. */
export function loggerOf(server: Server): RootLogger {
  const runtime = runtimes.get(server);
  if (runtime === undefined) throw new TypeError('loggerOf() takes a server made by start()');
  return runtime.log;
}

// The module's shutdown() runs once, when the server has closed, however it was closed.
function runShutdown(runtime: Runtime): Promise<void> {
  return (runtime.shutdown ??= (async () => {
    await runtime.module.shutdown?.();
  })());
}

/**
 * Stops gracefully: readiness turns 503, no new connections are accepted, requests in flight
 * finish (keep-alive connections close after their current response), and after the last one
 * the module's `shutdown()` runs. Past `gracePeriod` ms the remaining connections are cut.
 * Resolves when `shutdown()` has finished; rejects with its error.
 */
export function stop(server: Server, gracePeriod = 10_000): Promise<void> {
  const runtime = runtimes.get(server);
  if (runtime === undefined) throw new TypeError('stop() takes a server made by start()');
  runtime.draining = true;
  if (!server.listening) return runShutdown(runtime);
  const timer = setTimeout(() => server.closeAllConnections(), gracePeriod);
  timer.unref();
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  }).then(() => {
    clearTimeout(timer);
    return runShutdown(runtime);
  });
}
