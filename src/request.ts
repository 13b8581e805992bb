// One request's way through funcrun: `onRequest` is the list of its numbered steps, each step a
// function of its own. The steps hand each other values: the route's destination, the Input the
// body was read into (input.ts), the function's returned value, what was sent. What more than one
// step needs and cannot be handed on as a value is on the request's `Exchange`, each field written
// by one step. What is decided once at start (routes, CORS origins, defaults) is in the `Pipeline`
// http-server.ts builds (both in exchange.ts); the steps do per-request work only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { queryOf } from './http/target';
import { replyMode } from './cloudevents/cloudevent';
import { invocationEvent, invocationTrace } from './context';
import { allowAnyOrigin, allowOrigin, isPreflight } from './http/cors';
import { isUnreadable, lastResort, runtimeError, UnreadableReturn, type SentError } from './errors';
import { withoutQueryValues } from './log/redact';
import { discard, respond, type Reply, type ReplyContext } from './respond';
import { requestTrace } from './telemetry/trace';
import { JSON_TYPE, send } from './send';
import { METRICS_TYPE } from './telemetry/metrics';
import { answerProbe } from './lifecycle/probes';
import { beforeDeadline, callFunction, inInvocation } from './invocation';
import { closeAfter, inItsTurn, lastAnswer, requestArrived } from './http/connections';
import { isThenable } from './lifecycle/deadline';
import { Outcome, settleOutcome } from './cloudevents/outcomes';
import type * as AdmitEvents from './events/admit-events';
import type * as ServeFetch from './fetch/serve';
import { describeRequest, inputOf, readInput, type Input } from './input';
import type { Match } from './routing/router';
import { runtimePathOf, type Destination, type FetchDestination, type FunctionDestination } from './routing/routes';
import type { Function as FunctionModule, RequestInfo } from './types';
import { Exchange, type Pipeline } from './exchange';
import { answered, bodyDone, fail, finish, holdsWork } from './request-end';

// Called by http-server.ts for a request that waits for `100 Continue`; sent by step 6 (input.ts).
export { awaitContinue } from './input';

// The methods faas-js-runtime routes to the function (fastify answers HEAD for a GET route).
const ROOT_METHODS = new Set(['GET', 'HEAD', 'POST']);

/**
 * A request, from its arrival to its answer: a promise while a step waits; none for a fetch
 * handler's request where nothing does (fetchAtOnce()).
 */
export function onRequest(p: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
  // Pipelined behind an answer that closes the connection: not run (connections.ts).
  if (!requestArrived(req)) return undefined;
  // Pipelined behind an answer not finished yet: run in its turn, if the connection goes on.
  if (res.socket === null) return new Promise((resolve) => inItsTurn(req, res, () => resolve(run(p, req, res))));
  return run(p, req, res);
}

/** The request, counted on its connection, from step 0. */
function run(p: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
  const x = arrive(p, req, res);
  if (!p.fetchAtOnce) return steps(p, x, undefined);
  // Step 3's lookup, first: a path the runtime does not answer is the fetch handler's; one it
  // does (a probe's, the metrics') is handed to steps() as it was found.
  const match = p.routes.router.find(x.method, x.path);
  return match.kind === 'none' ? fetchAtOnce(p, x, match) : steps(p, x, match);
}

/** Steps 1 to 9 of a request, each awaited where it waits; `found`: step 3's lookup, when onRequest made it. */
async function steps(p: Pipeline, x: Exchange, found: Match<Destination> | undefined): Promise<void> {
  const req = x.req;
  // What the steps hand on that a failure's answer and finish() read: declared out here, so that a
  // throw still finds what was read by then (provenance.ts) and what was sent.
  let access: RequestInfo | undefined;
  let input: Input | undefined;
  let sent: Reply | SentError | undefined;
  // Whether a step waited before the function was called, or the function's answer was waited
  // for: the function then runs in a microtask (after its await, for an async one), where node runs
  // the ticks it queues (process.nextTick()) only once every microtask has run, and what it queued
  // runs within its invocation only if the request ends a tick later, after those ticks.
  let late = false;
  try {
    // 1 to 3: the route looked up, unless the request was answered (a preflight).
    const match = firstSteps(p, x, found);
    if (match === undefined) return;
    // 4. The module's access check, before the body is read or a 404 says which routes exist.
    const authorize = p.module.authorize;
    if (authorize !== undefined && !isProbe(match)) {
      access = { method: x.method, path: x.path, headers: req.headers, query: queryOf(x.search) };
      await checkAccess(p, x, authorize, access);
      late = true;
    }
    const destination = destinationOf(p, x, match);
    // 5. Probes and metrics are answered by the runtime itself.
    if (destination.kind === 'probe' || destination.kind === 'metrics') return await answerRuntime(p, x, destination);
    // 6 to 9, for a fetch handler: its Request made, its Response sent (fetch/serve.ts, loaded for such a module only).
    if (destination.kind === 'fetch') {
      const serving = serveFetchOf(p)(p, x, destination);
      // Answered without a promise, the request still ends a turn later: what the handler queued
      // as it returned (a microtask that logs) runs within its invocation, as step 8's does.
      sent = serving instanceof Promise ? await serving : (await undefined, serving);
      if (sent !== undefined) answered(p, x, sent);
      return;
    }
    // 6. The body, within its limit, read into the request's Input (input.ts).
    const head = describeRequest(p, x, destination, match);
    const reading = readInput(p, x, destination, head);
    late ||= reading instanceof Promise;
    input = reading instanceof Promise ? inputOf(p, x, head, await reading) : reading;
    // 7. Events: checked against the module's contracts; with idempotency, a duplicate is answered as the first delivery was.
    if (input.events !== undefined && (p.contracts !== undefined || p.idempotency !== undefined)) {
      // Loaded with the first event of a module that uses them (scripts/bundle.js ON_DEMAND).
      let admitted = (require('./events/admit-events') as typeof AdmitEvents).admitEvents(p, x, input);
      if (isThenable(admitted)) {
        late = true;
        admitted = await admitted;
      }
      if (admitted === undefined) return;
      input = admitted;
    }
    // 8. The function (invocation.ts): with the request's data, or once per event.
    // Awaited even when it is not a promise: what the function queued as it returned (a microtask
    // that finishes the value) runs before the answer, as in faas-js-runtime. The tick is taken on
    // `undefined` for a value that is no thenable: awaiting the value itself would look up its
    // `then` without an inline cache (some 800 instructions for a returned CloudEvent).
    const called = callFunction(p, x, destination, input);
    const pending = isThenable(called);
    late ||= pending;
    const value = pending ? await called : (await undefined, called);
    if (x.uploads !== undefined || input.bodyStream !== undefined) await bodyDone(p, x, input, value);
    // 9. The answer, by the return rules: a promise while a returned stream is still being sent.
    const answering = answer(p, x, input, value);
    sent = answering instanceof Promise ? await answering : answering;
    if (sent !== undefined) answered(p, x, sent);
  } catch (err) {
    // Temporary files are gone before any answer is sent (unless waitUntil work still reads them).
    if (x.uploads !== undefined && !holdsWork(x)) await x.uploads.remove();
    // Any step's failure becomes an answer in one place: sendError().
    sent = fail(p, x, err, input ?? (access === undefined ? undefined : { access }));
  } finally {
    // A tick, not a promise: the request need not wait for it, only end after it.
    if (late) process.nextTick(finishOrLastResort, p, x, sent, input);
    else finish(p, x, input, sent);
  }
}

/**
 * Steps 1 to 9 for a fetch handler's request, where the module has no authorize() and no route of
 * the runtime's takes the path: the steps of steps(), in its order, without a promise unless one
 * is waited for (the handler's, a streamed body's). The request ends a turn after its answer, as
 * one whose function steps() awaited: what the handler queued as it returned runs within its
 * invocation.
 */
function fetchAtOnce(p: Pipeline, x: Exchange, match: Match<Destination>): Promise<void> | undefined {
  let sent: Reply | SentError | undefined;
  let serving: Reply | Promise<Reply | undefined> | undefined;
  try {
    // 1 to 3, as steps() takes them: no route of the runtime's, so the handler's (a 404 for a
    // runtime path spelled otherwise).
    if (firstSteps(p, x, match) === undefined) return undefined;
    // No route took the path (onRequest): the fallback, the fetch handler's, unless the path is a runtime path spelled otherwise.
    const destination = unlessRuntimePath(p, x, p.routes.fallback as FetchDestination);
    // 6 to 9 (fetch/serve.ts).
    serving = serveFetchOf(p)(p, x, destination);
    if (serving instanceof Promise) return servedLater(p, x, serving);
    sent = serving;
    if (sent !== undefined) answered(p, x, sent);
    return undefined;
  } catch (err) {
    sent = fail(p, x, err, undefined);
    return undefined;
  } finally {
    // A reaction to a settled promise, not queueMicrotask(), which makes an async resource per call.
    if (!(serving instanceof Promise)) void SETTLED.then(() => finishOrLastResort(p, x, sent, undefined));
  }
}

/** The rest of fetchAtOnce() once the fetch handler's answer waits for something. */
async function servedLater(p: Pipeline, x: Exchange, serving: Promise<Reply | undefined>): Promise<void> {
  let sent: Reply | SentError | undefined;
  try {
    sent = await serving;
    if (sent !== undefined) answered(p, x, sent);
  } catch (err) {
    sent = fail(p, x, err, undefined);
  } finally {
    // At once, not a tick later as steps() ends a request whose function ran in a microtask: a
    // tick here costs an async fetch handler's request some 1,600 instructions (Hono's POST),
    // for the rare process.nextTick() it queues after its last await (then logged as outlived).
    finish(p, x, undefined, sent);
  }
}

const SETTLED = Promise.resolve();

// finish() outside any promise: what escapes it is answered as onRequest's rejection is (http-server.ts).
function finishOrLastResort(p: Pipeline, x: Exchange, sent: Reply | SentError | undefined, input: Input | undefined): void {
  try {
    finish(p, x, input, sent);
  } catch (err) {
    lastResort(x.res, p.log, err);
  }
}

// Loaded with the server of a module with fetch (http-server.ts); else here, the first time.
function serveFetchOf(p: Pipeline): typeof ServeFetch.serveFetch {
  return p.serveFetch ?? (require('./fetch/serve') as typeof ServeFetch).serveFetch;
}

/** 0. The request is counted on its connection and among those in flight, with a reqId and a logger. */
function arrive(p: Pipeline, req: IncomingMessage, res: ServerResponse): Exchange {
  // Node's headers are a getter: read once here, for every step.
  const headers = req.headers;
  const x = new Exchange(p, req, res, headers, ++p.requests, requestTrace(headers));
  p.runtime.inFlight.add(res, x.reqId);
  if (p.accessLevel !== undefined) logWhenAnswered(x, p.accessLevel);
  return x;
}

/**
 * Steps 1 to 3, the same for steps() and fetchAtOnce(): the request's route (its lookup, unless
 * onRequest made it: `found`), or undefined when the request was answered here (a preflight).
 * The route's destination is read after step 4's access check (destinationOf()).
 */
function firstSteps(p: Pipeline, x: Exchange, found: Match<Destination> | undefined): Match<Destination> | undefined {
  // 1. The request line and headers: what HTTP itself requires.
  checkHttp(x);
  // 2. CORS: a preflight is answered here.
  if (answerCors(p, x)) return undefined;
  // 3. The route.
  return found ?? p.routes.router.find(x.method, x.path);
}

function checkHttp(x: Exchange): void {
  const req = x.req;
  // HTTP/1.1 requires Host (RFC 9112 section 3.2); node's own check would answer without a JSON body.
  if (x.headers.host === undefined) {
    if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1) throw runtimeError('FUNCRUN_NO_HOST', 'the request has no Host header');
  } else if (repeatsHost(req.rawHeaders)) {
    // node keeps the first of them; a proxy in front may have read another (RFC 9112 section 3.2: a 400).
    throw runtimeError('FUNCRUN_HOST_REPEATED', 'the request has more than one Host header');
  }
  // funcrun upgrades nothing, and node has handed the rest of this connection's bytes to the
  // upgrade: answer this request, then close, rather than leave requests behind it unanswered.
  if (x.headers.upgrade !== undefined) lastAnswer(req, x.res);
}

/** Whether the headers (node's raw list: name, value, ...) name Host more than once. */
function repeatsHost(raw: string[]): boolean {
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    // Compared by character, in either case: toLowerCase() would make a string per request.
    if (name.length !== 4 || !isHost(name)) continue;
    if (seen) return true;
    seen = true;
  }
  return false;
}

/** Whether a four-character header name is Host, in any case (ASCII letters: `| 0x20` lowercases them). */
function isHost(name: string): boolean {
  return (
    (name.charCodeAt(0) | 0x20) === 0x68 && (name.charCodeAt(1) | 0x20) === 0x6f && (name.charCodeAt(2) | 0x20) === 0x73 && (name.charCodeAt(3) | 0x20) === 0x74
  );
}

/** True when the request was answered here: a preflight, or OPTIONS under faas-js-runtime's blanket CORS. */
function answerCors(p: Pipeline, x: Exchange): boolean {
  const { req, res } = x;
  if (p.cors !== undefined && req.headers.origin !== undefined) {
    const allowed = allowOrigin(req, res, p.cors);
    if (!isPreflight(req)) return false;
    if (!allowed) throw runtimeError('FUNCRUN_ORIGIN_NOT_ALLOWED', `origin '${req.headers.origin}' is not allowed`);
    closeAfter(req, res, p.runtime.draining);
    send(req, res, 204, undefined, undefined);
    return true;
  }
  if (p.corsForEveryOrigin && x.method === 'OPTIONS' && (x.path === '/' || !p.behaviour.rootOnly)) {
    // faas-js-runtime answers OPTIONS itself, whoever asks, without calling the function.
    allowAnyOrigin(res);
    closeAfter(req, res, p.runtime.draining);
    send(req, res, 204, { 'content-type': JSON_TYPE, 'access-control-allow-headers': '*' }, undefined);
    return true;
  }
  return false;
}

// Probes are exempt from the access check: the platform asks them without credentials.
function isProbe(match: Match<Destination>): boolean {
  return match.kind === 'found' && match.handler.kind === 'probe';
}

/**
 * The module's `authorize()`: `false` or a throw refuses; within the request's timeout, as the
 * function is. What it throws is read by the same rule as a handler's: headers that are the
 * request's own are not sent back (`info` is the failure's provenance, in onRequest).
 */
async function checkAccess(p: Pipeline, x: Exchange, authorize: NonNullable<FunctionModule['authorize']>, info: RequestInfo): Promise<void> {
  // A hung auth backend is a 504, not a pile-up of requests up to the connection cap.
  const verdict = await beforeDeadline(authorize(info), p.settings.timeout, x.deadline, 'authorize()', 'FUNCRUN_AUTHORIZE_TIMEOUT');
  // `false` refuses as a throw does: the types, and the probes' own rule, say a boolean answers.
  if (verdict === false) throw runtimeError('FUNCRUN_NOT_AUTHORIZED', 'not allowed');
}

/** The route's destination, or a 404 or 405 for a request no route takes. */
function destinationOf(p: Pipeline, x: Exchange, match: Match<Destination>): Destination {
  const { method, path } = x;
  if (match.kind === 'found')
    return match.handler.kind === 'probe' || match.handler.kind === 'metrics' ? match.handler : unlessRuntimePath(p, x, match.handler);
  if (match.kind === 'method')
    throw runtimeError('FUNCRUN_METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${path}`, { headers: { allow: match.allow.join(', ') } });
  const rootOnly = p.behaviour.rootOnly;
  const fallback = p.routes.fallback;
  // A fetch handler takes every path and method, whatever the compatibility.
  if (fallback !== undefined && (fallback.kind === 'fetch' || !rootOnly || (path === '/' && ROOT_METHODS.has(method))))
    return unlessRuntimePath(p, x, fallback);
  // fastify's own 404, as faas-js-runtime answers a path or method it has no route for.
  if (rootOnly) throw runtimeError('FUNCRUN_NOT_FOUND', `Route ${method}:${x.req.url} not found`);
  throw runtimeError('FUNCRUN_NOT_FOUND', `no route for ${method} ${path}`);
}

/**
 * The function's destination, unless the path is a runtime path spelled otherwise
 * (`/health/./liveness`, `/%6Detrics`): the runtime answers its paths only as they are spelled, and
 * the function, whose `request.url` would read as one of them, never gets it: a 404.
 */
function unlessRuntimePath<D extends FunctionDestination | FetchDestination>(p: Pipeline, x: Exchange, destination: D): D {
  // A plain target is read as it is spelled, by every reader.
  const runtimePath = x.plain ? undefined : runtimePathOf(p.routes, x.path);
  if (runtimePath === undefined) return destination;
  throw runtimeError('FUNCRUN_NOT_FOUND', `no route for ${x.method} ${x.path}: it resolves to the runtime's ${runtimePath}, answered only as spelled`);
}

function answerRuntime(p: Pipeline, x: Exchange, destination: Exclude<Destination, FunctionDestination | FetchDestination>): Promise<void> | void {
  if (destination.kind === 'probe') return answerProbe(x.req, x.res, destination, p.runtime, p.probeOptions, x.log);
  // The metrics route is in the table only with metrics on (routes.ts).
  closeAfter(x.req, x.res, p.runtime.draining);
  send(x.req, x.res, 200, { 'content-type': METRICS_TYPE }, p.metrics?.render());
}

/** Sends the answer: what was sent, or a promise of it while a returned stream is still being sent; undefined when a fault was answered already. */
function answer(p: Pipeline, x: Exchange, input: Input, returned: unknown): Reply | Promise<Reply> | undefined {
  let value = returned;
  const { req, res } = x;
  const behaviour = p.behaviour;
  // A fault in the invocation was answered 500 already (faults.ts).
  if (res.writableEnded) return void discard(value);
  // A value that answers nothing it is asked (a revoked Proxy): a 500 for what the function returned.
  if (isUnreadable(value)) throw new UnreadableReturn();
  // The single invocation's context (a batch's are in an array): its answer is sent as part of it.
  const single = Array.isArray(x.contexts) ? undefined : x.contexts;
  // A client gone first: a retry() is not to be delivered again because of this answer, that nobody gets.
  if (value instanceof Outcome) value = settleOutcome(p.metrics, x.log, value, single === undefined ? undefined : invocationEvent(single), res.destroyed);
  closeAfter(req, res, p.runtime.draining);
  // faas-js-runtime's blanket CORS is on the function's answers only: not on errors, probes or its 404s.
  if (p.corsForEveryOrigin) allowAnyOrigin(res);
  // An answered event carries the single invocation's trace (its own span's, or its event's).
  const trace = single === undefined ? x.trace : invocationTrace(single);
  const to: ReplyContext = {
    req,
    res,
    mode: replyMode(input.mode, behaviour.eventsAnsweredBinary),
    input,
    behaviour,
    trace,
    deadline: x.deadline,
    invocation: single,
  };
  // A returned stream's code (a generator that logs, a read() that fails) runs while the answer
  // is sent: as part of the invocation. Other answers run no code of the function's after it returned.
  return single !== undefined && streams(value) ? inInvocation(single, respond, to, value) : respond(to, value);
}

/** Whether a returned value is, or holds as its body, a stream (read after the function returned): a web one is a class instance with its tag. */
function streams(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  try {
    const body = (value as { body?: unknown }).body;
    if (value instanceof Readable || body instanceof Readable) return true;
    // A structured response (an object literal) streams when its body is a web stream.
    if (Object.getPrototypeOf(value) === Object.prototype)
      return body !== null && typeof body === 'object' && Object.getPrototypeOf(body) !== Object.prototype && webTagged(body);
    return webTagged(value);
  } catch {
    // A Proxy's trap or a getter threw: respond() reads the value again and answers the failure.
    return false;
  }
}

/** Whether an object says it is a Response or a web ReadableStream (its tag: respond.ts checks its class). */
function webTagged(value: object): boolean {
  const tag = (value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag];
  return tag === 'Response' || tag === 'ReadableStream';
}

// One line per answered request, with the logger the request has by then (a single event's trace).
function logWhenAnswered(x: Exchange, level: 'info' | 'debug'): void {
  const started = process.hrtime.bigint();
  // 'close', not 'finish': an answer cut short (the client gone, a streamed body that failed) has its line too.
  x.res.once('close', () => {
    const { req, res } = x;
    const responseTime = Number(process.hrtime.bigint() - started) / 1e6;
    const url = withoutQueryValues(req.url ?? '');
    if (res.writableFinished) x.log[level]({ method: req.method, url, statusCode: res.statusCode, responseTime }, 'request completed');
    // A status only when one was sent: node's default 200 would say an answer went out.
    else x.log[level]({ method: req.method, url, statusCode: res.headersSent ? res.statusCode : undefined, responseTime }, 'request aborted');
  });
}
