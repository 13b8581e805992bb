// The end of a request (request.ts's steps hand it what they made): after the function, its
// uploads and an unread body dealt with; any step's failure answered in one place; then, however
// the request ended, its invocations ended, its connection told, and its event's claim settled.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyIncomplete, hasBody } from './body/body';
import type { RequestInput } from './body/provenance';
import type { Uploads } from './uploads/uploads';
import { heldWork, invocationAnswered, outlivingHandler } from './context';
import { returnedError, sendError, statusOf, type SentError } from './errors';
import { discard, type Reply } from './respond';
import { requestDone } from './lifecycle/lifecycle';
import { closeAfter, closeUnread } from './http/connections';
import { now } from './lifecycle/deadline';
import type { Input } from './input';
import type { Exchange, Pipeline } from './exchange';

/**
 * After the function, before the answer: temporary files are removed (a file stream the function
 * returned was opened already), a streamed body over its limit is a 413 whatever the function
 * returned, and a body left unread is dropped after the answer or closes the connection (closeUnread).
 */
export async function bodyDone(p: Pipeline, x: Exchange, input: Input, value: unknown): Promise<void> {
  if (x.uploads !== undefined && !holdsWork(x)) await x.uploads.remove();
  const stream = input.bodyStream;
  if (stream === undefined) return;
  if (stream.refused !== undefined) {
    discard(value);
    throw stream.refused;
  }
  if (!x.req.complete && !x.res.headersSent) closeUnread(x.req, x.res, p.settings.bodyLimit);
}

/** Whether the request's invocations handed work to waitUntil: their files stay until it settles. */
export function holdsWork(x: Exchange): boolean {
  const made = x.contexts;
  if (made === undefined) return false;
  return Array.isArray(made) ? made.some((ctx) => heldWork(ctx) !== undefined) : heldWork(made) !== undefined;
}

/**
 * The request's invocations have ended, or will once their waitUntil work settles (work it hands
 * on to waitUntil included): their uploads end then.
 */
function endUploads(x: Exchange, uploads: Uploads, settled = 0): void {
  const made = x.contexts;
  const held = made === undefined ? [] : (Array.isArray(made) ? made : [made]).flatMap((ctx) => heldWork(ctx) ?? []);
  if (held.length === settled) void uploads.end();
  else void Promise.all(held).then(() => endUploads(x, uploads, held.length));
}

/** What was sent is logged where headers were left out, and counted. */
export function answered(p: Pipeline, x: Exchange, reply: Reply): void {
  if (reply.dropped !== undefined) x.log.warn({ headers: reply.dropped }, 'response headers left out');
  if (p.metrics !== undefined && x.began >= 0) p.metrics.record((now() - x.began) / 1000, false);
}

/** Any step's failure answered; `read`: what the request was read into by then. Returns what was sent. */
export function fail(p: Pipeline, x: Exchange, failure: unknown, read: RequestInput | undefined): SentError | undefined {
  const { req, res } = x;
  closeAfter(req, res, p.runtime.draining);
  // A body left unread (refused before or while reading it): dropped after the answer if small, else the connection closes.
  if (!res.headersSent && hasBody(req) && !req.complete) closeUnread(req, res, p.settings.bodyLimit);
  // An Error the function returned is read as funcrun reads one in either mode (its statusCode, JSON), as fastify answers it.
  const returned = returnedError(failure);
  const err = returned ?? failure;
  const sent = sendError(req, res, leftMidBody(req, res, err) ? bodyIncomplete() : err, x.log, {
    format: p.module.errorBody,
    input: read,
    asText: x.invoked && returned === undefined && p.behaviour.errorsAsText,
    withoutCodes: p.behaviour.withoutErrorCodes,
    faultOnly: x.invoked && p.serveFetch !== undefined,
  });
  if (p.metrics !== undefined && x.began >= 0) p.metrics.record((now() - x.began) / 1000, true);
  return sent;
}

/**
 * Whether the client went away before its body was whole and before any answer, while the body
 * was being read, and a failure was thrown since: what the function made of the cut body (a failed
 * read wrapped or rethrown, its aborted signal thrown) is the client leaving, answered as the
 * body's own failure is (a 400, logged at debug), not the server's error. A function that never
 * read the body failed on its own: that stays an error.
 */
function leftMidBody(req: IncomingMessage, res: ServerResponse, err: unknown): boolean {
  return req.readableAborted && req.readableDidRead && !req.complete && !res.headersSent && statusOf(err) >= 500;
}

/** The request is answered: its invocations end (once their waitUntil work settles), and its connection counts it. */
export function finish(p: Pipeline, x: Exchange, input: Input | undefined, sent: Reply | SentError | undefined): void {
  // A batch cut short (batch() stopped before an event): its answer is not the whole batch's. One
  // whose client went away after its last event began ran whole: its answer is kept, as an event's.
  if (x.settleClaim !== undefined) x.settleClaim(x.batchCut, sent, outliving(x));
  // However the request ended: its temporary files go (once its waitUntil work settles), and a body still streaming stops.
  if (x.uploads !== undefined) endUploads(x, x.uploads);
  const stream = input?.bodyStream;
  if (stream !== undefined && !stream.readableEnded) stream.destroy();
  const made = x.contexts;
  if (Array.isArray(made)) for (const ctx of made) invocationAnswered(ctx);
  else if (made !== undefined) invocationAnswered(made);
  requestDone(p.runtime, x.req, x.res);
}

/** What a handler answered for at its timeout still runs, if one does: its event's claim waits for it. */
function outliving(x: Exchange): PromiseLike<unknown> | undefined {
  const made = x.contexts;
  if (!Array.isArray(made)) return made === undefined ? undefined : outlivingHandler(made);
  // In a batch, only the event that timed out can be still running: the others had finished.
  for (const ctx of made) {
    const running = outlivingHandler(ctx);
    if (running !== undefined) return running;
  }
  return undefined;
}
