// Steps 6 and 7 of a request (request.ts) for a fetch handler of a module with event contracts or
// idempotency: a request that carries CloudEvents has its body read and its events admitted as a
// `handle` function's are (input.ts, events/admit-events.ts: the contract's 400s, the claim's
// 409, 429 and 503, a duplicate's replay), before `fetch` runs. The handler is then handed a
// Request over the bytes read, on which readEvent() gives the admitted events (cloudevents/web.ts).
// With a claim held, the Response's body is read ahead up to the answer limit, so that the answer
// can be kept for duplicates. A request that carries no event reaches `fetch` untouched.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { CloudEvent } from 'cloudevents';
import { noteAdmitted, type ExecutionContext, type Invocation } from '../context';
import { withAdmittedEvents } from '../cloudevents/web';
import type * as AdmitEvents from '../events/admit-events';
import { describeRequest, inputOf, readInput, type BodyReading, type Input } from '../input';
import { isThenable } from '../lifecycle/deadline';
import type { Exchange, Pipeline } from '../exchange';
import type { Reply } from '../respond';
import type { SignalSource } from './web-request';
import { toRequest } from './web-request';
import { sendWeb } from './web-response';

type Read = Awaited<ReturnType<ReadableStreamDefaultReader<unknown>['read']>>;

// A fetch handler's events are read as a `handle` function's body is: whole, within the body limit.
const READ_WHOLE: BodyReading = Object.freeze({ streamBody: false });
const NO_MATCH = Object.freeze({ kind: 'none' as const });
// What a race against the next turn of the event loop gives when a read has not settled by then.
const PENDING = Symbol('pending');

/** The events admitted, and the bytes they were read from (none for an event without a body). */
export interface AdmittedEvents {
  readonly events: CloudEvent<unknown> | CloudEvent<unknown>[];
  readonly bytes: Buffer | undefined;
}

/**
 * The request's events, admitted; undefined when it carries none (its body is then unread); null
 * when a duplicate was answered here, from the store. Throws the answer to an event refused.
 */
export async function admitFetchEvents(p: Pipeline, x: Exchange): Promise<AdmittedEvents | undefined | null> {
  const head = describeRequest(p, x, READ_WHOLE, NO_MATCH);
  if (head.mode === undefined) return undefined;
  const reading = readInput(p, x, READ_WHOLE, head);
  const read = reading instanceof Promise ? await reading : reading;
  const bytes = Buffer.isBuffer(read) ? read : undefined;
  // Loaded with the module's first event (scripts/bundle.js ON_DEMAND), as on `handle`'s path.
  let admitted: Input | undefined | Promise<Input | undefined> = (require('../events/admit-events') as typeof AdmitEvents).admitEvents(
    p,
    x,
    inputOf(p, x, head, read),
  );
  if (isThenable(admitted)) admitted = await admitted;
  if (admitted === undefined) return null;
  return { events: admitted.events!, bytes };
}

/** The Request `fetch` is handed: as toRequest() makes it, its body the bytes already read, carrying the admitted events. */
export function admittedRequest(x: Exchange, admitted: AdmittedEvents, signal: SignalSource, ctx: ExecutionContext): Request {
  const body = admitted.bytes === undefined || admitted.bytes.length === 0 ? undefined : Readable.from([admitted.bytes]);
  const request = withAdmittedEvents(toRequest(x.req, x.target, body, signal), admitted.events);
  // A copy of it (`new Request(request, { body })`, as Hono's bodyLimit() makes, or clone()) reads the same events.
  noteAdmitted(ctx, { method: request.method, url: request.url, events: admitted.events });
  return request;
}

/**
 * A Reply sent with its body read ahead (readAhead()): what was sent, its body kept when it came
 * whole within `limit`. Its first chunk is waited for until `deadline`, as sendWeb() does.
 */
export async function sendKept(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  limit: number,
  deadline: number,
  invocation: Invocation,
): Promise<Reply> {
  return sendWeb(req, res, reply, await readAhead(reply, limit), deadline, invocation);
}

/**
 * With a claim held: the Response's body read ahead while it comes at once, up to `limit` bytes.
 * Whole, it becomes the Reply's body (kept for duplicates) and the stream returned sends it; larger,
 * or still being produced (streamed), the stream returned sends what was read and then the rest,
 * and the Reply keeps its stream (sent, not kept: the claim is released).
 */
async function readAhead(reply: Reply, limit: number): Promise<ReadableStream<unknown> | string | undefined> {
  const body = reply.body as ReadableStream<unknown> | string | undefined;
  if (body === undefined) return undefined;
  // A light Response's text (light-response.ts): whole already, kept when within the limit (answers.ts).
  if (typeof body === 'string') return body;
  const reader = body.getReader();
  const chunks: unknown[] = [];
  let size = 0;
  let empty = 0;
  let coming: Promise<Read> | undefined = reader.read();
  try {
    for (;;) {
      const read = await Promise.race([coming, nextTurn()]);
      if (read === PENDING) break;
      coming = undefined;
      if (read.done) {
        const whole = Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Uint8Array))));
        reply.body = whole;
        return whole.length === 0 ? undefined : streamOf([whole], undefined, reader);
      }
      chunks.push(read.value);
      // A chunk that is not bytes is sendWeb()'s to refuse.
      const length = byteLength(read.value);
      if (length === undefined || (size += length) > limit) break;
      // Empty chunks are bounded by their number, not their size: a stream of them is sent (streamed) as sendWeb() sends one.
      if (length === 0 && ++empty > MAX_EMPTY_CHUNKS) break;
      coming = reader.read();
    }
  } catch (err) {
    reader.cancel().catch(ignore);
    throw err;
  }
  return streamOf(chunks, coming, reader);
}

// How many empty chunks a body read ahead may hold before it is sent as a stream.
const MAX_EMPTY_CHUNKS = 64;

/** The chunks read ahead, then the read still coming, then the rest of `reader`. */
function streamOf(chunks: unknown[], coming: Promise<Read> | undefined, reader: ReadableStreamDefaultReader<unknown>): ReadableStream<unknown> {
  let next = coming;
  return new ReadableStream<unknown>(
    {
      async pull(controller) {
        if (chunks.length > 0) return controller.enqueue(chunks.shift());
        const read = await (next ?? reader.read());
        next = undefined;
        if (read.done) controller.close();
        else controller.enqueue(read.value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

function byteLength(chunk: unknown): number | undefined {
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return typeof chunk === 'string' ? Buffer.byteLength(chunk) : undefined;
}

function nextTurn(): Promise<typeof PENDING> {
  return new Promise((resolve) => setImmediate(resolve, PENDING));
}

function ignore(): void {}
