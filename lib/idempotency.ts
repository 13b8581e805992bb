// Duplicates run once. With idempotency on, an event is known by its key (`source` and `id`, the
// CloudEvents rule, or the module's own key function). The first delivery claims the key in the
// store and runs; a delivery while it runs is answered 429 (the broker tries again later); once it
// has answered 2xx or 4xx, later deliveries within the window get that answer again, byte for
// byte, without running the function. A 5xx, a timeout, a 408 or 429, or an answer too large to
// keep releases the key, so that the next delivery runs. A store that cannot be reached answers
// 503: an event is never run without its claim.
import { createHash } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import { runtimeError } from './errors';
import { MemoryStore, type IdempotencyStore } from './idempotency-store';
import { redisStore } from './idempotency-redis';
import type { Logger } from './log';
import type { Metrics } from './metrics';
import { eventIdentity } from './outcomes';
import { send } from './send';

export interface IdempotencySettings {
  store: IdempotencyStore;
  /** Keys are namespaced by the function, so that functions may share one store. */
  namespace: string;
  /** How long an answer is replayed, in ms. */
  window: number;
  /** How long a claim holds when its replica dies mid-invocation, in ms. */
  claim: number;
  /** Characters of a key at most. */
  keyLimit: number;
  /** Bytes of an answer kept at most (status, headers and body). */
  answerLimit: number;
  /** The module's key function, else source and id. */
  key?: (event: CloudEvent<unknown>) => string;
}

/** The settings for start(): the store opened (a redis:// one connects, or keeps trying). */
export interface IdempotencyOptions {
  store: string;
  window: number;
  claim: number;
  timeout: number;
  entries: number;
  bytes: number;
  keyLimit: number;
  answerLimit: number;
  name: string;
  key?: (event: CloudEvent<unknown>) => string;
  /** Where the function's own packages are found: the `redis` client among them. */
  folder: string;
}

// Without an invocation timeout, a dead replica's claim lapses after this long.
const CLAIM_WITHOUT_TIMEOUT = 300_000;

export async function openIdempotency(options: IdempotencyOptions, log: Logger): Promise<IdempotencySettings> {
  const store =
    options.store === 'memory' ? new MemoryStore({ entries: options.entries, bytes: options.bytes }) : await redisStore(options.store, options.folder, log);
  return {
    store,
    namespace: `funcrun:${options.name}:`,
    window: options.window,
    // A claim outlasts the invocation it guards: its timeout, and a second for the answer.
    claim: options.claim > 0 ? options.claim : options.timeout > 0 ? options.timeout + 1000 : CLAIM_WITHOUT_TIMEOUT,
    keyLimit: options.keyLimit,
    answerLimit: options.answerLimit,
    key: options.key,
  };
}

// Seconds a sender waits before it tries again: a running duplicate is usually done soon; an
// unreachable store takes longer to come back.
const IN_PROGRESS_RETRY = '1';
const STORE_RETRY = '5';

// Headers of one connection or one request, not of the answer: never kept or replayed.
const NOT_KEPT = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date', 'vary']);
const kept = (name: string) => !NOT_KEPT.has(name) && !name.startsWith('access-control-');

export class Idempotency {
  constructor(
    readonly settings: IdempotencySettings,
    private readonly metrics: Metrics | undefined,
  ) {}

  /** Why readiness should fail, while the store cannot be reached. */
  problem(): string | undefined {
    return this.settings.store.problem();
  }

  /**
   * The answer kept for a duplicate, to send again (replay()); or undefined when the function
   * should run: the key is claimed, and the answer will be kept when it has been sent. Throws the
   * 429, 4xx or 503 to answer instead.
   */
  async admit(res: ServerResponse, events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger): Promise<Buffer | undefined> {
    const { store, claim: claimMs } = this.settings;
    const key = this.#keyOf(events);
    const identity = Array.isArray(events) ? { events: events.length, first: eventIdentity(events[0]) } : eventIdentity(events);
    let claim;
    try {
      claim = await store.claim(key, claimMs);
    } catch (err) {
      this.metrics?.event('store_unavailable');
      log.debug({ event: identity, err }, 'event not run: the idempotency store cannot be reached');
      throw runtimeError('FUNCRUN_STORE_UNAVAILABLE', 'the idempotency store cannot be reached', { headers: { 'retry-after': STORE_RETRY } });
    }
    if (claim.state === 'running') {
      this.metrics?.event('in_progress');
      log.info({ event: identity }, 'duplicate event: the first delivery is still running');
      throw runtimeError('FUNCRUN_EVENT_IN_PROGRESS', 'this event is being handled: deliver it again later', { headers: { 'retry-after': IN_PROGRESS_RETRY } });
    }
    if (claim.state === 'done') {
      this.metrics?.event('replayed');
      log.info({ event: identity }, 'duplicate event: answered as the first delivery was');
      return claim.answer;
    }
    this.#keep(res, key, claim.token, log, identity);
    return undefined;
  }

  #keyOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): string {
    const own = this.settings.key;
    // A batch is one delivery: known by its events' keys, in order.
    const raw = Array.isArray(events) ? JSON.stringify(events.map((e) => (own === undefined ? [e.source, e.id] : own(e)))) : keyOf(events, own);
    if (typeof raw !== 'string') throw new TypeError(`events.idempotency.key() returned ${typeof raw}, not a string`);
    if (raw.length > this.settings.keyLimit) {
      throw runtimeError('FUNCRUN_EVENT_KEY_TOO_LONG', `the event's idempotency key is longer than ${this.settings.keyLimit} characters`, {
        details: { limit: this.settings.keyLimit },
      });
    }
    // Hashed: a fixed length in the store, and no event's text in its keys.
    return `${this.settings.namespace}${createHash('sha256').update(raw).digest('base64url')}`;
  }

  /** Records the answer as it is written; once it is sent, keeps it or releases the claim. */
  #keep(res: ServerResponse, key: string, token: string, log: Logger, identity: object): void {
    const { store, answerLimit, window } = this.settings;
    const recording = record(res, answerLimit);
    res.once('close', () => {
      const answer = recording.answer();
      const status = res.statusCode;
      // Sent whole, and an answer the sender will not send again for: 2xx and 4xx (but 408 and 429, which ask for a retry).
      const final = res.writableFinished && status >= 200 && status < 500 && status !== 408 && status !== 429;
      if (final && answer === undefined) log.warn({ event: identity, limit: answerLimit }, 'answer not kept for duplicates: larger than the answer limit');
      const done = final && answer !== undefined ? store.complete(key, token, answer, window) : store.release(key, token);
      // The claim then lapses on its own, after the claim time.
      done.catch((err: unknown) => log.warn({ event: identity, err }, 'the idempotency store did not take the outcome; the claim lapses on its own'));
    });
  }
}

function keyOf(event: CloudEvent<unknown>, own: ((event: CloudEvent<unknown>) => string) | undefined): string {
  return own === undefined ? JSON.stringify([event.source, event.id]) : own(event);
}

interface Recording {
  /** The answer as sent (status, headers, body), or undefined when it was larger than the limit. */
  answer(): Buffer | undefined;
}

/** Wraps the response's writeHead, write and end, to copy what they send, up to `limit` bytes. */
function record(res: ServerResponse, limit: number): Recording {
  let status = 0;
  let headers: [string, OutgoingHttpHeader][] = [];
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  const add = (chunk: unknown, encoding?: unknown) => {
    if (over || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    try {
      const bytes =
        typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.from(chunk as Uint8Array);
      size += bytes.length;
      if (size > limit) over = true;
      else chunks.push(bytes);
    } catch {
      // A chunk node itself will refuse: nothing that could be replayed.
      over = true;
    }
  };
  const { writeHead, write, end } = res;
  res.writeHead = function (this: ServerResponse, code: number, ...rest: unknown[]) {
    status = code;
    const given = rest.find((r) => r !== null && typeof r === 'object') as OutgoingHttpHeaders | undefined;
    const all: OutgoingHttpHeaders = { ...res.getHeaders() };
    if (given !== undefined) for (const name in given) all[name.toLowerCase()] = given[name];
    headers = Object.entries(all).filter(([name, value]) => value !== undefined && kept(name)) as [string, OutgoingHttpHeader][];
    return (writeHead as (...args: unknown[]) => ServerResponse).call(this, code, ...rest);
  } as ServerResponse['writeHead'];
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    add(chunk, rest[0]);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    add(chunk, rest[0]);
    return (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest);
  } as ServerResponse['end'];
  return {
    answer() {
      if (over || status === 0) return undefined;
      const head = Buffer.from(JSON.stringify({ status, headers }));
      const length = Buffer.alloc(4);
      length.writeUInt32BE(head.length);
      const answer = Buffer.concat([length, head, ...chunks]);
      return answer.length > limit ? undefined : answer;
    },
  };
}

/** Sends a kept answer as it was first sent. */
export function replay(req: IncomingMessage, res: ServerResponse, answer: Buffer): void {
  const length = answer.readUInt32BE(0);
  const { status, headers } = JSON.parse(answer.subarray(4, 4 + length).toString()) as { status: number; headers: [string, OutgoingHttpHeader][] };
  const out: OutgoingHttpHeaders = Object.fromEntries(headers);
  const body = answer.subarray(4 + length);
  send(req, res, status, out, body.length === 0 && out['content-length'] === undefined ? undefined : body);
}
