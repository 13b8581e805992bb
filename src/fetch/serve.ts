// Steps 6 to 9 of a request (request.ts) for a fetch handler: its body is not read but handed over
// as the Request's stream (web-request.ts), the handler called once with the Request, `env` and
// `ctx`, within the request's timeout (invocation.ts), and the Response it returns sent as it is
// produced (web-response.ts). With event contracts or idempotency, a request that carries
// CloudEvents has them read and admitted first, as a `handle` function's are (events.ts).
// Loaded by a module with `fetch` only (scripts/bundle.js ON_DEMAND).
import { hasBody } from '../body/body';
import type { BodyStream } from '../body/body-stream';
import { invocationEvent, signalSource, type ExecutionContext } from '../context';
import { allowAnyOrigin } from '../http/cors';
import { closeAfter, closeUnread, leaveRest } from '../http/connections';
import { openBodyStream } from '../input';
import { fetchContext, inInvocation } from '../invocation';
import { isThenable, now } from '../lifecycle/deadline';
import type { Exchange, Pipeline } from '../exchange';
import type { Reply } from '../respond';
import type { FetchDestination } from '../routing/routes';
import type { FetchEnv } from '../types';
import { kindOf } from '../util/kind';
import { isUnreadable, UnreadableReturn } from '../errors';
import { discardWeb, lightOf, lightReply, responseReply, sendWeb, sendWhole, withEventMode } from './web-response';
import { toRequest } from './web-request';
import { lazyRequest } from './light-request';
import { NativeResponse } from './natives';
import { isOutcome, Outcome, settleOutcome } from '../cloudevents/outcomes';
import { admitFetchEvents, admittedRequest, sendKept, type AdmittedEvents } from './events';

/** What `p.invoke` hands the handler's call: the Request, and what `fetch` is called with beside it. */
interface FetchCall {
  readonly destination: FetchDestination;
  readonly request: Request;
}

// Called by p.invoke as a handle function is (in the invocation's scope, within its timeout): `fetch` with its handler as `this`.
function callFetch(ctx: ExecutionContext, call: FetchCall): unknown {
  const { destination } = call;
  return destination.fetch(call.request, destination.env as FetchEnv, ctx);
}

/**
 * The request served by the fetch handler: what was sent, or undefined when a fault was answered
 * already. No promise is made where none is waited for: a handler that returns its Response as it
 * is (a Hono route that is not async), with its body whole, is answered at once.
 */
export function serveFetch(p: Pipeline, x: Exchange, destination: FetchDestination): Served {
  if (p.metrics !== undefined) x.began = now();
  if (p.contracts === undefined && p.idempotency === undefined) return serveRequest(p, x, destination, undefined);
  return admitThenServe(p, x, destination);
}

type Served = Reply | undefined | Promise<Reply | undefined>;

// 6 and 7, with event contracts or idempotency: a request's events admitted before fetch runs, as a `handle` function's (events.ts).
async function admitThenServe(p: Pipeline, x: Exchange, destination: FetchDestination): Promise<Reply | undefined> {
  const admitted = await admitFetchEvents(p, x);
  return admitted === null ? undefined : await serveRequest(p, x, destination, admitted);
}

function serveRequest(p: Pipeline, x: Exchange, destination: FetchDestination, admitted: AdmittedEvents | undefined): Served {
  const { req } = x;
  const body =
    admitted === undefined && x.method !== 'GET' && x.method !== 'HEAD' && hasBody(req) ? openBodyStream(p, x, p.settings.bodyLimit, 'bodyLimit') : undefined;
  // Its failure (a client gone, the limit) reaches whoever reads it: unread, it is nobody's to throw.
  body?.on('error', ignore);
  let served: Served;
  try {
    const ctx = fetchContext(p, x, admitted?.events);
    // With lightWebGlobals, a look-alike made lazily (light-request.ts); else undici's own.
    const request =
      admitted !== undefined
        ? admittedRequest(x, admitted, signalSource(ctx), ctx)
        : p.settings.lightWebGlobals
          ? lazyRequest(req, x.headers.host, x.target, x.plain, body, signalSource(ctx))
          : toRequest(req, x.target, body, signalSource(ctx));
    let value: unknown;
    try {
      value = p.invoke(callFetch, ctx, { destination, request }, x.deadline);
    } catch (err) {
      value = thrownValue(body, err);
    }
    // A promise answered once it settles (answerWhenSettled() stops the body itself).
    if (isThenable(value)) return (served = answerWhenSettled(p, x, ctx, body, value));
    served = answerWith(p, x, ctx, body, value);
  } finally {
    // Answered without a promise, the request's body is done with here; else once the promise settles (answerWhenSettled(), doneAfter()).
    if (body !== undefined && !(served instanceof Promise)) done(p, x, body);
  }
  return body !== undefined && served instanceof Promise ? doneAfter(p, x, served, body) : served;
}

/** The handler's promise settled, then answered. */
async function answerWhenSettled(
  p: Pipeline,
  x: Exchange,
  ctx: ExecutionContext,
  body: BodyStream | undefined,
  pending: PromiseLike<unknown>,
): Promise<Reply | undefined> {
  try {
    let value: unknown;
    try {
      value = await pending;
    } catch (err) {
      value = thrownValue(body, err);
    }
    const answering = answerWith(p, x, ctx, body, value);
    return answering instanceof Promise ? await answering : answering;
  } finally {
    if (body !== undefined) done(p, x, body);
  }
}

/** What the handler threw, as what it answered: retry() or drop() (an app that answers every Error itself lets others through). */
function thrownValue(body: BodyStream | undefined, err: unknown): unknown {
  // A body over its limit is the answer (413), whatever the handler threw after the failed read.
  if (body?.refused !== undefined) throw body.refused;
  // Asked its class without throwing: what a revoked Proxy throws when asked would be funcrun's error, not the function's.
  if (!isOutcome(err)) throw err;
  return err;
}

/** 9. The handler's value answered: a promise while its body is still being sent, or kept for duplicates. */
function answerWith(p: Pipeline, x: Exchange, ctx: ExecutionContext, body: BodyStream | undefined, value: unknown): Served {
  const { req, res } = x;
  // A body over its limit is the answer (413), whatever the handler made of the failed read.
  if (body?.refused !== undefined) {
    discard(value);
    throw body.refused;
  }
  // A fault in the invocation was answered 500 already (faults.ts).
  if (res.writableEnded) return void discard(value);
  // A value that answers nothing it is asked (a revoked Proxy): a 500 for what the function returned.
  if (isUnreadable(value)) throw new UnreadableReturn();
  // A client gone first: a retry() is not to be delivered again because of this answer, that nobody gets.
  const reply = replyOf(p, ctx, value, res.destroyed);
  closeAfter(req, res, p.runtime.draining);
  if (p.corsForEveryOrigin) allowAnyOrigin(res);
  // A body still coming that the handler did not read: read and dropped after the answer if small, else the connection closes.
  if (!req.complete && hasBody(req) && (body === undefined || !body.started)) closeUnread(req, res, p.settings.bodyLimit);
  // The body's own code (a stream's pull() that logs or fails) runs as part of the invocation.
  // With an event's claim held, a body that comes whole within the answer limit is kept for duplicates (events.ts).
  if (x.settleClaim !== undefined) return inInvocation(ctx, sendKept, req, res, reply, p.idempotency!.settings.answerLimit, x.deadline, ctx);
  const sent = reply.body as ReadableStream<unknown> | string | undefined;
  // A body there whole (a light Response's text) or none runs no code of the function's: sent as it is.
  if (typeof sent === 'string' || (sent === undefined && req.method !== 'HEAD')) return sendWhole(req, res, reply, sent);
  // Its first chunk is waited for within the request's timeout: the head is not sent until then.
  return inInvocation(ctx, sendWeb, req, res, reply, sent, x.deadline, ctx);
}

/** answerWith()'s promise (a Response's body still being sent), with the request's body done with once it settles. */
async function doneAfter(p: Pipeline, x: Exchange, served: Promise<Reply | undefined>, body: BodyStream): Promise<Reply | undefined> {
  try {
    return await served;
  } finally {
    done(p, x, body);
  }
}

/** The Response `fetch` gave as a Reply: a light one's parts as they are (light-response.ts); retry() and drop() their answers. */
function replyOf(p: Pipeline, ctx: ExecutionContext, returned: unknown, clientGone: boolean): Reply {
  const light = lightOf(returned);
  if (light !== undefined) return withEventMode(lightReply(light), returned as object);
  let value = returned;
  // retry() and drop(), returned or thrown: a retry is thrown as its 503 (or 429), a drop is a 204.
  if (value instanceof Outcome) value = settleOutcome(p.metrics, ctx.log, value, invocationEvent(ctx), clientGone) ?? new Response(null, { status: 204 });
  if (!(value instanceof NativeResponse)) {
    discard(value);
    throw new Error(`fetch must return a Response, got ${kindOf(value)}`);
  }
  return responseReply(value);
}

/** However the request ended, once its answer has been sent: a body still streaming stops, and what is left of one begun is dropped or closes the connection. */
function done(p: Pipeline, x: Exchange, body: BodyStream): void {
  if (body.finished) return;
  if (!body.destroyed) body.destroy();
  // A body refused (too slow) is not read further: the connection closes.
  if (body.started) leaveRest(x.req, x.res, body.refused === undefined ? p.settings.bodyLimit : -1);
}

function ignore(): void {}

function discard(value: unknown): void {
  try {
    if (value !== null && typeof value === 'object') discardWeb(value);
  } catch {
    // A value whose class cannot be read holds nothing we could cancel.
  }
}
