// A web-standard answer written: a Response (a fetch handler's, or a `handle` function's) or a web
// ReadableStream a `handle` function returned. Its body is written as it is produced: each chunk
// when it is read, the next read only once node has taken it ('drain'), so server-sent events
// stream. A body that fails after its status was sent cuts the connection (the client sees an
// incomplete answer); one that fails before is a throw, answered by sendError(). Until the head is
// sent, the first chunk is waited for within the request's deadline; from then on, for as long as
// the body produces.
import { AsyncResource } from 'node:async_hooks';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ANSWERED_MODE } from '../cloudevents/web';
import { writtenMode } from '../cloudevents/cloudevent';
import { abortInvocation, type Invocation } from '../context';
import { firstChunkTimeout, isUnreadable, UnreadableReturn } from '../errors';
import { safeHeaders, type Dropped } from '../http/headers';
import { now } from '../lifecycle/deadline';
import { kindOf } from '../util/kind';
import type { Reply } from '../respond';
import { sendAsGiven, withoutContent } from '../send';
import { LIGHT, type LightParts } from './light-response';
import { NativeResponse } from './natives';

type Read = Awaited<ReturnType<ReadableStreamDefaultReader<unknown>['read']>>;

// What a race against the next turn of the event loop gives when the read has not settled by then.
const PENDING = Symbol('pending');
// What a race against the promises already settled gives when the read has not settled yet.
const PENDING_NOW: Promise<typeof PENDING> = Promise.resolve(PENDING);

/** A Response as a Reply: its status, reason phrase, headers (each Set-Cookie kept apart) and body. */
export function responseReply(response: Response): Reply {
  const light = lightOf(response);
  if (light !== undefined) return withEventMode(lightReply(light), response);
  if (response.type === 'error') throw new Error('the function returned Response.error(), which is no answer');
  // A final answer's status (a Response's own check, which a status made to read otherwise gets past): a 1xx would leave the client waiting.
  const status = response.status;
  if (!(Number.isInteger(status) && status >= 200 && status <= 599))
    throw new Error(`the function returned a Response whose status is ${kindOf(status)}: expected 200 to 599`);
  const dropped: Dropped[] = [];
  // Iterating Headers gives each Set-Cookie apart (the Fetch standard's "sort and combine").
  const headers = safeHeaders(response.headers, dropped);
  const reply: Reply = { status, headers };
  if (response.statusText !== '') reply.reason = response.statusText;
  if (response.body !== null) reply.body = response.body;
  // A Response's framing headers (an upstream's Content-Length and Connection, passed on) are
  // funcrun's to write: left out without a warning. Headers node refuses are still logged.
  const refused = dropped.filter((header) => header.reason !== 'framing');
  if (refused.length > 0) reply.dropped = refused;
  const length = declaredLength(response.headers.get('content-length'));
  if (length !== undefined) reply.declaredLength = length;
  return withEventMode(reply, response);
}

/**
 * The Reply of a Response eventResponse() wrote its event in the request's mode (no `mode` given),
 * or of one made again of its body: with that mode, while its headers still carry the event so, as
 * a `handle` function's answered event (respond.ts). A replay to a duplicate then writes it in the
 * duplicate's mode (answers.ts).
 */
export function withEventMode(reply: Reply, response: object): Reply {
  let written = (response as { [ANSWERED_MODE]?: unknown })[ANSWERED_MODE];
  // A Response made again of its body: the mark is on the stream (cloudevents/web.ts).
  if (written === undefined && reply.body instanceof ReadableStream) written = (reply.body as { [ANSWERED_MODE]?: unknown })[ANSWERED_MODE];
  if (written !== 'binary' && written !== 'structured') return reply;
  const headers = reply.headers ?? {};
  const structured = writtenMode(headers['content-type']) === 'structured';
  if (written === 'structured' ? structured : !structured && headers['ce-id'] !== undefined && headers['ce-specversion'] !== undefined)
    reply.eventMode = written;
  return reply;
}

/** A light Response's parts (light-response.ts), or undefined for any other value. */
export function lightOf(value: unknown): LightParts | undefined {
  return value !== null && typeof value === 'object' ? (value as { [LIGHT]?: LightParts })[LIGHT] : undefined;
}

/**
 * A light Response (light-response.ts) as a Reply: its text body as it is, sent whole with its
 * length. Its headers were checked when it was made: without a framing header, and unless a
 * Headers was made of them since, they are sent as they are (sendAsGiven() does not change them).
 */
export function lightReply(light: LightParts): Reply {
  let reply: Reply;
  if (light.headers === undefined && !light.framing) reply = { status: light.status, headers: light.fields };
  else {
    const dropped: Dropped[] = [];
    reply = { status: light.status, headers: safeHeaders(light.headers ?? light.fields, dropped) };
    const refused = dropped.filter((header) => header.reason !== 'framing');
    if (refused.length > 0) reply.dropped = refused;
    const length = declaredLength(light.headers === undefined ? (light.fields['content-length'] ?? null) : light.headers.get('content-length'));
    if (length !== undefined) reply.declaredLength = length;
  }
  if (light.statusText !== '') reply.reason = light.statusText;
  if (light.body !== null) reply.body = light.body;
  return reply;
}

/** A Content-Length the Response gave, when it is one number (several joined, or anything else: none). */
function declaredLength(value: string | null): number | undefined {
  if (value === null || !/^\d{1,15}$/.test(value)) return undefined;
  return Number(value);
}

/** Whether a value is a web Response or ReadableStream: told by its class, as node's own. */
export function webKind(value: object): 'response' | 'stream' | 'body' | undefined {
  if (value instanceof NativeResponse) return 'response';
  if (value instanceof ReadableStream) return 'stream';
  if (value instanceof Blob || value instanceof URLSearchParams || value instanceof FormData) return 'body';
  return undefined;
}

/** A Blob (a File), URLSearchParams or FormData returned: the Response the platform makes of it (its bytes, its Content-Type). */
export function bodyResponse(value: Blob | URLSearchParams | FormData): Response {
  return new NativeResponse(value);
}

/** A web answer that will not be sent (a late result, a refused one): its body is cancelled. */
export function discardWeb(value: object): void {
  // A light Response holds text at most: nothing to cancel, and no real Response to make for it.
  if (lightOf(value) !== undefined) return;
  const body = value instanceof NativeResponse ? value.body : value instanceof ReadableStream ? value : null;
  if (body !== null && !body.locked) body.cancel().catch(ignore);
}

function ignore(): void {}

/**
 * Sends a Reply whose body is a web ReadableStream, text (a light Response's), or none. Text, or a
 * stream whose body is one chunk (a Response made of a string or bytes), is sent whole, with its
 * Content-Length; any other is sent chunked as it comes.
 * Resolves once sent, or once the client has gone (the stream is then cancelled); rejects when
 * the stream fails or produces something other than bytes or text, and with funcrun's 504 when it
 * has produced neither its first chunk nor its end by `deadline` (the request's, `now()` time: the
 * stream is then cancelled, and the signal of `invocation`, the one the answer is part of, aborted).
 */
export async function sendWeb(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  body: ReadableStream<unknown> | string | Buffer | undefined,
  deadline = Infinity,
  invocation?: Invocation,
): Promise<Reply> {
  if (typeof body === 'string' || Buffer.isBuffer(body)) return sendWhole(req, res, reply, body);
  if (req.method === 'HEAD') {
    if (reply.reason !== undefined) res.statusMessage = reply.reason;
    return sendHead(res, reply, body);
  }
  if (body === undefined) return sendWhole(req, res, reply, body);
  if (reply.reason !== undefined) res.statusMessage = reply.reason;
  if (res.destroyed || withoutContent(reply.status)) {
    if (!body.locked) body.cancel().catch(ignore);
    if (res.destroyed) return reply;
    sendAsGiven(req, res, reply.status, reply.headers ?? {}, undefined);
    return reply;
  }
  const reader = body.getReader();
  let first: Buffer;
  let coming: Promise<Read>;
  try {
    const reading = reader.read();
    // A body there at once (a Response made of a string or bytes) is read without arming anything:
    // looked at twice, as on node 22 such a stream, made in the same turn, starts a microtask later.
    let read = await Promise.race([reading, PENDING_NOW]);
    if (read === PENDING) read = await Promise.race([reading, PENDING_NOW]);
    if (read === PENDING) read = await firstRead(res, reader, reading, deadline, invocation);
    // An empty chunk is no first byte: the head waits on, within the deadline.
    while (!read.done && !res.destroyed && isEmpty(read.value)) read = await afterEmpty(res, reader, deadline, invocation);
    // The client went away while the first chunk was awaited: the stream was cancelled.
    if (res.destroyed) {
      reader.cancel().catch(ignore);
      return reply;
    }
    if (read.done) {
      sendAsGiven(req, res, reply.status, reply.headers ?? {}, undefined);
      return reply;
    }
    first = bytesOf(read.value);
    coming = reader.read();
    // A Response made of a string or bytes has closed its stream already: its end is there now,
    // without waiting for the next turn of the event loop (which is waited for otherwise). A read
    // failing after the first chunk is a stream failing midway: what it produced is sent first (pump).
    let next = await Promise.race([coming, PENDING_NOW]).catch((): typeof PENDING => PENDING);
    if (next === PENDING) next = await Promise.race([coming, nextTurn()]).catch((): typeof PENDING => PENDING);
    // The whole body was there at once: one write, with its length.
    if (next !== PENDING && next.done) {
      sendAsGiven(req, res, reply.status, reply.headers ?? {}, first);
      return reply;
    }
  } catch (err) {
    reader.cancel().catch(ignore);
    throw err;
  }
  return pump(res, reply, reader, first, coming);
}

/**
 * Sends a Reply whose body is there whole (text or bytes), or none, but for a HEAD request without
 * one (sendWeb()'s). A HEAD answer is the head a GET would have, its Content-Length among it.
 */
export function sendWhole(req: IncomingMessage, res: ServerResponse, reply: Reply, body: string | Buffer | undefined): Reply {
  if (reply.reason !== undefined) res.statusMessage = reply.reason;
  // A Reply's headers have no undefined value, and are sent as they are (send.ts).
  if (!res.destroyed) sendAsGiven(req, res, reply.status, reply.headers ?? {}, body);
  return reply;
}

/**
 * The body's first read, waited for while nothing is sent: the client going away cancels the
 * stream (the read then ends), and past `deadline` the stream is cancelled and the 504 thrown, the
 * invocation's signal aborted with it. Armed only here, for a body not there at once; disarmed once
 * the read settles.
 */
function firstRead(
  res: ServerResponse,
  reader: ReadableStreamDefaultReader<unknown>,
  reading: Promise<Read>,
  deadline: number,
  invocation: Invocation | undefined,
): Promise<Read> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    // Run in the invocation's scope, as the stream's own code is: what its cancel() logs carries the reqId.
    const gone = AsyncResource.bind(() => {
      if (!res.writableFinished) reader.cancel(new Error('the client closed the connection')).catch(ignore);
    });
    const disarm = () => {
      clearTimeout(timer);
      res.off('close', gone);
    };
    res.once('close', gone);
    if (deadline !== Infinity) {
      timer = setTimeout(
        () => {
          disarm();
          const late = firstChunkTimeout();
          if (invocation !== undefined) abortInvocation(invocation, late);
          reader.cancel(late).catch(ignore);
          reject(late);
        },
        Math.max(0, deadline - now()),
      );
    }
    reading.then(
      (read) => {
        disarm();
        resolve(read);
      },
      (err: unknown) => {
        disarm();
        reject(err);
      },
    );
  });
}

/** Whether a chunk holds no bytes (one that is not bytes is bytesOf()'s to refuse). Asks nothing a Proxy could answer. */
function isEmpty(chunk: unknown): boolean {
  return chunk === '' || (ArrayBuffer.isView(chunk) && chunk.byteLength === 0);
}

/**
 * The read after an empty chunk, before the head is sent: a turn of the event loop first (a stream
 * of empty chunks would otherwise hold it, its timers included), then past `deadline` the 504 as
 * firstRead() throws it, else the read, waited for as the first one is.
 */
async function afterEmpty(
  res: ServerResponse,
  reader: ReadableStreamDefaultReader<unknown>,
  deadline: number,
  invocation: Invocation | undefined,
): Promise<Read> {
  await nextTurn();
  // The client went away during the turn, before a read was armed to hear it: the stream is cancelled.
  if (res.destroyed) {
    reader.cancel(new Error('the client closed the connection')).catch(ignore);
    return { done: true, value: undefined };
  }
  if (now() >= deadline) {
    const late = firstChunkTimeout();
    if (invocation !== undefined) abortInvocation(invocation, late);
    reader.cancel(late).catch(ignore);
    throw late;
  }
  return firstRead(res, reader, reader.read(), deadline, invocation);
}

/** The rest of the body, chunked: the head and the first chunk now, then each chunk as it is read. */
async function pump(res: ServerResponse, reply: Reply, reader: ReadableStreamDefaultReader<unknown>, first: Buffer, coming: Promise<Read>): Promise<Reply> {
  // The client going away cancels the stream: a pending read then ends, and nothing more is produced.
  // In the invocation's scope, as the stream's own code is: what its cancel() logs carries the reqId.
  const onClose = AsyncResource.bind(() => {
    if (!res.writableFinished) reader.cancel(new Error('the client closed the connection')).catch(ignore);
  });
  res.once('close', onClose);
  try {
    res.writeHead(reply.status, reply.headers);
    let writable = res.write(first);
    for (let read = await coming; !read.done; read = await reader.read()) {
      if (!writable) await drained(res);
      if (res.destroyed) break;
      const bytes = bytesOf(read.value);
      // An empty chunk writes nothing, so nothing would ever make this loop wait: a stream of them
      // would hold the event loop (no probe, no timer, no other request). It gets a turn instead.
      if (bytes.length === 0) await nextTurn();
      else writable = res.write(bytes);
    }
    if (!res.destroyed) res.end();
    return reply;
  } catch (err) {
    reader.cancel().catch(ignore);
    // The client went away first: nothing failed that anyone could see.
    if (res.destroyed) return reply;
    throw err;
  } finally {
    res.off('close', onClose);
  }
}

/**
 * A HEAD answer: the head a GET would have, without a body. A body whole at once (a string or
 * bytes, as sendWeb sends with its length) gives the Content-Length a GET would have; any other,
 * or none (a Hono app answers HEAD with a null body), the Response's own valid Content-Length, if
 * it gave one. The body is not waited for, and is cancelled.
 */
async function sendHead(res: ServerResponse, reply: Reply, body: ReadableStream<unknown> | undefined): Promise<Reply> {
  const whole = body === undefined ? undefined : await wholeLength(body);
  // A 205 has no content, and says so, as its GET does (send.ts).
  const length = reply.status === 205 ? 0 : (whole ?? reply.declaredLength);
  if (res.destroyed) return reply;
  const headers = length === undefined || reply.status === 204 || reply.status === 304 ? reply.headers : { ...reply.headers, 'content-length': length };
  res.writeHead(reply.status, headers);
  res.end();
  return reply;
}

/** The length of a body there whole at once (its chunk read, then its end, each by the next turn); undefined for any other. */
async function wholeLength(body: ReadableStream<unknown>): Promise<number | undefined> {
  if (body.locked) return undefined;
  const reader = body.getReader();
  try {
    const first = await Promise.race([reader.read(), nextTurn()]);
    if (first === PENDING) return undefined;
    if (first.done) return 0;
    const next = await Promise.race([reader.read(), nextTurn()]);
    return next !== PENDING && next.done ? bytesOf(first.value).length : undefined;
  } catch {
    // A body that fails, or holds no bytes: a HEAD answer does not send it, and says no length.
    return undefined;
  } finally {
    reader.cancel().catch(ignore);
  }
}

function nextTurn(): Promise<typeof PENDING> {
  return new Promise((resolve) => setImmediate(resolve, PENDING));
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** A chunk as bytes: Uint8Array (without a copy) or text; anything else is the function's mistake. */
function bytesOf(chunk: unknown): Buffer {
  // A chunk that answers nothing it is asked (a revoked Proxy): what the function gave, not an error of funcrun's.
  if (isUnreadable(chunk)) throw new UnreadableReturn();
  if (chunk instanceof Uint8Array) return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === 'string') return Buffer.from(chunk);
  throw new TypeError(`the response body's stream produced a chunk that is not bytes or text (${chunk === null ? 'null' : typeof chunk})`);
}
