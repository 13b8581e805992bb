// The HTTP server: the request pipeline, `onRequest`, as its numbered steps. Everything that can
// be decided once (routes, probe paths, CORS origins, log prefixes) is decided in `createServer`;
// the per-request path only does per-request work. The steps' parts live beside it: connections.ts
// (pipelining, malformed HTTP), probes.ts, invocation.ts (timeout, batches), respond.ts (return
// rules), errors.ts (sendError, the one place errors become responses), lifecycle.ts (stop).
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { AsyncResource } from 'node:async_hooks';
import type { CloudEvent } from 'cloudevents';
import { fastifyParsing, hasBody, parseBody, rawBodyOf, readBody } from './body';
import { queryOf, readTarget } from './target';
import type { Behaviour } from './compat';
import { detectMode, replyMode, responseDefaults } from './cloudevent';
import { readEvent } from './cloudevent-read';
import { Context, contentTypeOf, invocationAnswered, sharingQuery, type ContextParts } from './context';
import { namedRoutes } from './functions';
import { allowAnyOrigin, allowOrigin, isPreflight, originCheck, type OriginCheck } from './cors';
import { HttpError, lastResort, sendError } from './errors';
import { parseRouteKey } from './loader';
import type { Logger, RootLogger } from './log';
import { parseMediaType } from './media-type';
import { discard, respond, type Reply } from './respond';
import { eventTrace, requestTrace, sibling, type Trace } from './trace';
import type { Tracing } from './otel';
import { JSON_TYPE, send } from './send';
import { Router } from './router';
import { Metrics, METRICS_TYPE, type MetricLabels } from './metrics';
import { monitorLoop } from './overload';
import { backgroundSettled, register, requestDone, runShutdown, type Runtime } from './lifecycle';
import { answerProbe } from './probes';
import { batch, beforeDeadline, inInvocation, invoker } from './invocation';
import { clientError, closeAfter, manageConnections, CLOSING, LATEST, PENDING, rawError, type CountedSocket } from './connections';
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
}


// Methods whose empty body is still a body: with a Content-Type it is parsed ('' for text, {} for a form).
const SENDS_BODY = new Set(['POST', 'PUT', 'PATCH']);
const EMPTY = Buffer.alloc(0);
// The methods faas-js-runtime routes to the function (fastify answers HEAD for a GET route).
const ROOT_METHODS = new Set(['GET', 'HEAD', 'POST']);

type Target =
  | { kind: 'function'; fn: Invokable; route?: string }
  | { kind: 'probe'; check?: HealthCheck; readiness: boolean }
  | { kind: 'metrics' };

// A request that sent `Expect: 100-continue` and waits for the go-ahead before its body.
const AWAITS_CONTINUE = Symbol('funcrun awaits 100-continue');
type ContinueRequest = IncomingMessage & { [AWAITS_CONTINUE]?: boolean };

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
    router.add(method, path, { kind: 'function', fn, route: path });
    claimed.add(path);
  }
  for (const { method, path, handler } of namedRoutes(module)) {
    if (claimed.has(path)) throw new Error(`routes and functions both claim ${path}`);
    router.add(method, path, { kind: 'function', fn: handler, route: path });
  }
  const fallback: Target | undefined = module.handle ? { kind: 'function', fn: module.handle } : undefined;
  const cors: OriginCheck | undefined = module.cors ? originCheck(module.cors()) : undefined;
  const behaviour = settings.behaviour;
  const corsForEveryOrigin = behaviour.corsForEveryOrigin && cors === undefined;
  const eventData = { asFaasJsRuntime: behaviour.eventDataAsFaasJsRuntime };
  const defaults = responseDefaults(settings.name, behaviour.eventsWrittenAsSdk);
  const authorize = module.authorize;
  // One line per answered request: at info when asked for (FUNC_ACCESS_LOG), else at debug.
  const accessLevel = settings.accessLog ? 'info' : 'debug';
  const logAccess = log.isEnabled(accessLevel);
  const tracing = settings.tracing;
  const runtime: Runtime = { module, log, draining: false, metrics, background: new Set(), inFlight: new Map(), outside: AsyncResource.bind((run) => run()) };
  let requests = 0;
  // Each request's logger carries its own reqId.
  const newRequestLog = () => log.forRequest(++requests);

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const reqId = ++requests;
    // The trace the request arrived in, if any: its lines carry it, and so does this invocation's span.
    const trace = requestTrace(req.headers);
    // Replaced by a single event's own trace once the event is read, for the runtime's lines after it.
    let reqLog = trace === undefined ? log.forRequest(reqId) : log.forRequest(reqId, trace.logFields);
    const socket = req.socket as CountedSocket;
    socket[PENDING] = (socket[PENDING] ?? 0) + 1;
    socket[LATEST] = req;
    runtime.inFlight.set(req, reqId);
    if (logAccess) access(req, res, () => reqLog, accessLevel);
    // Set when the request reaches the function: it then counts as an invocation in the metrics.
    let began = -1;
    // Set once the function has been called: from then on an error is the function's.
    let invoked = false;
    // What the request was parsed into: never read as response instructions (see provenance.ts).
    let input: unknown[] | undefined;
    // The contexts made for the function: their invocations end with this request's answer.
    let made: Context | Context[] | undefined;
    try {
      // 1. The request line and headers: what HTTP itself requires.
      // HTTP/1.1 requires Host (RFC 9112 section 3.2); node's own check would answer without a JSON body.
      if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
        throw new HttpError(400, 'the request has no Host header');
      }
      // funcrun upgrades nothing, and node has handed the rest of this connection's bytes to the
      // upgrade: answer this request, then close, rather than leave requests behind it unanswered.
      if (req.headers.upgrade !== undefined) res.setHeader('connection', 'close');
      const { path, search } = readTarget(req.url ?? '/');
      const method = req.method ?? 'GET';
      // 2. CORS: a preflight is answered here.
      if (cors !== undefined && req.headers.origin !== undefined) {
        const allowed = allowOrigin(req, res, cors);
        if (isPreflight(req)) {
          if (!allowed) throw new HttpError(403, `origin '${req.headers.origin}' is not allowed`);
          return send(req, res, 204, undefined, undefined);
        }
      } else if (corsForEveryOrigin && method === 'OPTIONS' && (path === '/' || !behaviour.rootOnly)) {
        // faas-js-runtime answers OPTIONS itself, whoever asks, without calling the function.
        allowAnyOrigin(res);
        return send(req, res, 204, { 'content-type': JSON_TYPE, 'access-control-allow-headers': '*' }, undefined);
      }
      // 3. The route, and 4. the module's access check.
      const match = router.find(method, path);
      // The request's timeout counts from here: the access check, the body and the function.
      const started = performance.now();
      // The module's own access check runs before anything else is done for the request: before
      // its body is read or parsed, and before a 404 or 405 says which routes exist. Probes are
      // exempt: the platform asks them without credentials.
      if (authorize !== undefined && !(match.kind === 'found' && match.handler.kind === 'probe')) {
        // `false` refuses as a throw does: the types, and the probes' own rule, say a boolean answers.
        const info = { method, path, headers: req.headers, query: queryOf(search) };
        // What it throws is read by the same rule as a handler's: headers that are the request's own are not sent back.
        input = [info, info.headers, info.query];
        // Within the request's timeout, as the function is: a hung auth backend is a 504, not a pile-up.
        const verdict = await beforeDeadline(authorize(info), settings.timeout, started + settings.timeout, 'authorize()');
        if (verdict === false) throw new HttpError(403, 'not allowed');
      }
      let target: Target;
      let params = {};
      if (match.kind === 'found') {
        target = match.handler;
        params = match.params;
      } else if (match.kind === 'method') {
        throw new HttpError(405, `method ${method} is not allowed on ${path}`, { headers: { allow: match.allow.join(', ') } });
      } else if (fallback !== undefined && (!behaviour.rootOnly || (path === '/' && ROOT_METHODS.has(method)))) {
        target = fallback;
      } else if (behaviour.rootOnly) {
        // fastify's own 404, as faas-js-runtime answers a path or method it has no route for.
        throw new HttpError(404, `Route ${method}:${req.url} not found`);
      } else {
        throw new HttpError(404, `no route for ${method} ${path}`);
      }
      // 5. Probes and metrics are answered by the runtime itself.
      if (target.kind === 'probe') return await answerProbe(req, res, target, runtime, probeOptions, reqLog);
      if (target.kind === 'metrics') return send(req, res, 200, { 'content-type': METRICS_TYPE }, metrics!.render());
      if (metrics !== undefined) began = performance.now();
      const deadline = settings.timeout > 0 ? started + settings.timeout : Infinity;

      // 6. The body, read within the limit, and the context the function gets.
      const media = parseMediaType(req.headers['content-type']);
      if ((req as ContinueRequest)[AWAITS_CONTINUE] === true) res.writeContinue();
      const bytes = hasBody(req) ? await readBody(req, settings.bodyLimit) : media !== undefined && SENDS_BODY.has(method) ? EMPTY : undefined;
      const mode = detectMode(req.headers, media, behaviour.binaryEventsById);
      // What the body is parsed as: in faas-js-runtime compatibility, only what fastify parses (an event's data aside).
      const parseAs = behaviour.fastifyBodyParsers ? fastifyParsing(media, bytes) : media;
      const query = queryOf(search);
      const contentType = contentTypeOf(req.headers['content-type'], behaviour.rawContentType);
      // Once per request: a batch's events all share it.
      const raw = settings.includeRaw && bytes !== undefined ? rawBodyOf(bytes, media) : undefined;
      let Made: new (parts: ContextParts) => Context = Context;
      // The trace of the single invocation: an event it answers with carries it.
      let replyTrace = trace;
      let inBatch = false;
      // With the application's OpenTelemetry, each invocation is a span of its tracer, ended with the response.
      const otel = tracing?.active() === true ? tracing : undefined;
      let spans: Trace[] | undefined;
      const route = target.route;
      const context = (event?: CloudEvent<unknown>) => {
        let own = otel?.begin(method, path, route, req.headers, event);
        if (own !== undefined) {
          if ((spans ??= []).push(own) === 1) otel!.endWith(res, spans);
        } else if (event !== undefined) {
          // An event brings its trace in its attributes, when the request had none; a batch's events
          // under the request's trace are each an invocation of their own, with a span of their own.
          own = trace === undefined ? eventTrace(event) : inBatch ? sibling(trace) : undefined;
        }
        let ctxLog = reqLog;
        if (own !== undefined) {
          ctxLog = log.forRequest(reqId, own.logFields);
          if (!inBatch) {
            replyTrace = own;
            reqLog = ctxLog;
          }
        }
        const ctx = new Made({ req, log: ctxLog, reqId, path, query, params, contentType, defaults, res, trace: own ?? trace, runtime });
        made = made === undefined ? ctx : Array.isArray(made) ? (made.push(ctx), made) : [made, ctx];
        if (raw !== undefined) ctx.rawBody = raw;
        if (event !== undefined) {
          ctx.cloudevent = event;
          ctx.body = event.data;
        }
        return ctx;
      };

      // 7. The function: with the request's data, or once per event.
      let value: unknown;
      // The single invocation's context (not a batch's): its answer is sent as part of it.
      let single: Context | undefined;
      if (mode === undefined) {
        const data = bytes === undefined ? undefined : parseBody(bytes, parseAs);
        input = [data, query, req, params];
        const ctx = (single = context());
        ctx.body = data;
        if (metrics !== undefined) metrics.queued((performance.now() - began) / 1000);
        invoked = true;
        value = await invoke(target.fn, ctx, data, deadline);
      } else {
        const event = readEvent(mode, req.headers, bytes, media, eventData);
        // A batch's events share the request's query: one prototype holds its keys for all of them.
        inBatch = Array.isArray(event);
        if (Array.isArray(event) && search !== undefined) Made = sharingQuery(query);
        // An event is recognised by its class; its data is parsed request data like any body.
        input = [event, Array.isArray(event) ? event.map((e) => e.data) : event.data, query, req, params];
        if (metrics !== undefined) metrics.queued((performance.now() - began) / 1000);
        invoked = true;
        value = Array.isArray(event)
          ? await batch(event, target.fn, context, (fn, ctx, data) => invoke(fn, ctx, data, deadline), () => res.destroyed, behaviour.eventAsArgument)
          : await invoke(target.fn, (single = context(event)), behaviour.eventAsArgument ? event : event.data, deadline);
      }
      // 8. The answer, by the return rules; unless a fault in the invocation was answered 500 (faults.ts).
      if (res.writableEnded) return discard(value);
      if (runtime.draining || socket[CLOSING]) closeAfter(req, res);
      const how = replyMode(mode, behaviour.eventsAnsweredBinary);
      // faas-js-runtime's blanket CORS is on the function's answers only: not on errors, probes or its 404s.
      if (corsForEveryOrigin) allowAnyOrigin(res);
      // A returned stream's code (a generator that logs, a read() that fails) runs while the answer
      // is sent: as part of the invocation. Other answers run no code of the function's after it returned.
      const sent =
        single !== undefined && streams(value)
          ? inInvocation(single, respond, req, res, value, how, input, behaviour, replyTrace)
          : respond(req, res, value, how, input, behaviour, replyTrace);
      const reply: Reply = sent instanceof Promise ? await sent : sent;
      if (reply.dropped !== undefined) reqLog.warn({ headers: reply.dropped }, 'response headers left out');
      if (began >= 0) metrics!.record((performance.now() - began) / 1000, false);
    } catch (err) {
      // Any step's failure becomes an answer in one place: sendError().
      if (runtime.draining || socket[CLOSING]) closeAfter(req, res);
      // A body left unread (refused before or while reading it) leaves the connection unusable.
      if (!res.headersSent && hasBody(req) && !req.complete) res.setHeader('connection', 'close');
      sendError(req, res, err, reqLog, module.errorBody, input, invoked && behaviour.errorsAsText);
      if (began >= 0) metrics!.record((performance.now() - began) / 1000, true);
    } finally {
      if (Array.isArray(made)) for (const ctx of made) invocationAnswered(ctx);
      else if (made !== undefined) invocationAnswered(made);
      requestDone(runtime, req, res);
    }
  }


  const invoke = invoker(settings.timeout);
  const probeOptions = { probeTimeout: settings.probeTimeout, maxEventLoopDelay: settings.maxEventLoopDelay, loopDelay: loop?.delay };

  // The last line of defence: whatever escapes onRequest still gets an answer, never a crash.
  function handle(req: IncomingMessage, res: ServerResponse): void {
    onRequest(req, res).catch((err: unknown) => lastResort(res, log, err));
  }

  const server = createHttpServer(
    {
      // Checked in onRequest, so that the answer is JSON like every other error.
      requireHostHeader: false,
      headersTimeout: settings.headersTimeout,
      requestTimeout: settings.requestTimeout,
      // How often node checks those limits: often enough that they hold to within a quarter.
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.min(settings.headersTimeout, settings.requestTimeout || Infinity) / 4)),
    },
    handle,
  );
  server.keepAliveTimeout = settings.keepAliveTimeout;
  manageConnections(server);
  server.maxConnections = settings.maxConnections;
  // With `Expect: 100-continue`, a body over the limit is refused before the client sends it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (Number(req.headers['content-length']) > settings.bodyLimit) {
      const error = new HttpError(413, `request body is larger than the limit of ${settings.bodyLimit} bytes`, { details: { limit: settings.bodyLimit } });
      return sendError(req, res, error, newRequestLog(), module.errorBody);
    }
    // `100 Continue` only once the request may go on: after authorize, before its body is read.
    (req as ContinueRequest)[AWAITS_CONTINUE] = true;
    handle(req, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    sendError(req, res, new HttpError(417, 'only the expectation 100-continue is supported'), newRequestLog(), module.errorBody);
  });
  server.once('listening', () => metrics?.ready(process.uptime()));
  if (metrics !== undefined) server.on('connection', (socket: Socket) => metrics.connection(socket));
  server.once('close', () => loop?.stop());
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => clientError(err, socket));
  // A function is not a proxy: CONNECT gets a JSON 405 (node would close the socket silently).
  server.on('connect', (_req: IncomingMessage, socket: Socket) => rawError(socket, 405, 'CONNECT is not supported'));
  // shutdown() runs once the work handed to waitUntil has settled too (stop() bounds that wait).
  server.once('close', () => backgroundSettled(runtime).then(() => runShutdown(runtime)).catch((err) => log.error(err, 'shutdown() failed')));
  register(server, runtime);
  return server;

}






/** Whether a returned value is, or holds as its body, a stream (read after the function returned). */
function streams(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  try {
    return value instanceof Readable || (value as { body?: unknown }).body instanceof Readable;
  } catch {
    // A Proxy's trap or a getter threw: respond() reads the value again and answers the failure.
    return false;
  }
}

/** A URL for the log: query values often carry tokens (`?access_token=`), so only names are kept. */
export function withoutQueryValues(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const names = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq === -1 ? pair : `${pair.slice(0, eq)}=…`;
    });
  return `${url.slice(0, q)}?${names.join('&')}`;
}

function access(req: IncomingMessage, res: ServerResponse, log: () => Logger, level: 'info' | 'debug'): void {
  const started = process.hrtime.bigint();
  res.once('finish', () => {
    const responseTime = Number(process.hrtime.bigint() - started) / 1e6;
    log()[level]({ method: req.method, url: withoutQueryValues(req.url ?? ''), statusCode: res.statusCode, responseTime }, 'request completed');
  });
}


