// Duplicates run once. With idempotency on, an event is known by its key (`source` and `id`, the
// CloudEvents rule, or the module's own key function). The first delivery claims the key in the
// store and runs; a delivery while it runs is answered 429 (the broker tries again later); once it
// has answered 2xx or 4xx, later deliveries within the window get that answer again, byte for
// byte, without running the function. A 5xx, a timeout, a 408 or 429, or an answer not kept (too
// large, or streamed) releases the key, so that the next delivery runs. A store that cannot be
// reached answers 503: an event is never run without its claim.
import { sha256 } from './random';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import { runtimeError, type SentError } from './errors';
import { MemoryStore, sizeOf, type Answer, type Claim, type IdempotencyStore } from './idempotency-store';
import { redisStore } from './idempotency-redis';
import type { Logger } from './log';
import type { Metrics } from './metrics';
import { eventIdentity } from './outcomes';
import { isThenable } from './deadline';
import { send } from './send';
import type { Reply } from './respond';

export interface IdempotencySettings {
  store: IdempotencyStore;
  /** Keys are namespaced by the function, so that functions may share one store. */
  namespace: string;
  /** A shared store gets keys hashed: a fixed length, and no event's text in its keys. */
  hashKeys: boolean;
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
    hashKeys: options.store !== 'memory',
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
const isKept = (name: string) => !NOT_KEPT.has(name) && !name.startsWith('access-control-');

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
   * What to do with these events: send a duplicate the answer kept for it (replay()), or run the
   * function, the key claimed, and call `settle` once the request has been answered. Throws the
   * 429, 4xx or 503 to answer instead. The memory store answers at once, without a promise.
   */
  admit(events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger): Admission | Promise<Admission> {
    const key = this.#keyOf(events);
    let claim: Claim | Promise<Claim>;
    try {
      claim = this.settings.store.claim(key, this.settings.claim);
    } catch (err) {
      throw this.#unreachable(events, log, err);
    }
    if (!isThenable(claim)) return this.#admission(key, claim, events, log);
    return claim.then(
      (c) => this.#admission(key, c, events, log),
      (err: unknown) => {
        throw this.#unreachable(events, log, err);
      },
    );
  }

  #admission(key: string, claim: Claim, events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger): Admission {
    if (claim.state === 'claimed') return { settle: this.#keeper(key, claim.token, log, events) };
    if (claim.state === 'running') {
      this.metrics?.event('in_progress');
      log.info({ event: identityOf(events) }, 'duplicate event: the first delivery is still running');
      throw runtimeError('FUNCRUN_EVENT_IN_PROGRESS', 'this event is being handled: deliver it again later', { headers: { 'retry-after': IN_PROGRESS_RETRY } });
    }
    this.metrics?.event('replayed');
    log.info({ event: identityOf(events) }, 'duplicate event: answered as the first delivery was');
    return { replay: claim.answer };
  }

  #unreachable(events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger, err: unknown): Error {
    this.metrics?.event('store_unavailable');
    log.debug({ event: identityOf(events), err }, 'event not run: the idempotency store cannot be reached');
    return runtimeError('FUNCRUN_STORE_UNAVAILABLE', 'the idempotency store cannot be reached', { headers: { 'retry-after': STORE_RETRY } });
  }

  #keyOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): string {
    const { namespace, hashKeys } = this.settings;
    if (!Array.isArray(events)) {
      const key = this.#eventKey(events);
      return hashKeys ? namespace + sha256(key) : key;
    }
    // A batch is one delivery: known by its events' keys, in order, hashed whatever the store (a
    // batch of many events would be past any key limit).
    return namespace + sha256(JSON.stringify(events.map((e) => this.#eventKey(e))));
  }

  /** One event's key, checked: within the key limit. */
  #eventKey(event: CloudEvent<unknown>): string {
    const own = this.settings.key;
    // Source and id, told apart by the source's length: no source and id make another pair's key.
    const key = own === undefined ? `${event.source.length}:${event.source}${event.id}` : own(event);
    if (typeof key !== 'string') throw new TypeError(`events.idempotency.key() returned ${typeof key}, not a string`);
    if (key.length > this.settings.keyLimit) {
      throw runtimeError('FUNCRUN_EVENT_KEY_TOO_LONG', `the event's idempotency key is longer than ${this.settings.keyLimit} characters`, {
        details: { limit: this.settings.keyLimit },
      });
    }
    return key;
  }

  /**
   * What settles the claim: keeps what was sent, or releases the key. Called when the request's
   * steps are done, so a client gone mid-invocation does not free the key while the function still
   * runs: its answer is kept all the same (the function ran). `incomplete`: part of the work did
   * not run (a batch cut short), so the next delivery must.
   */
  #keeper(key: string, token: string, log: Logger, events: CloudEvent<unknown> | CloudEvent<unknown>[]): Settle {
    const { store, answerLimit, window } = this.settings;
    return (incomplete, sent) => {
      const status = sent?.status ?? 0;
      // An answer the sender will not send again for: 2xx and 4xx (but 408 and 429, which ask for a retry).
      const final = !incomplete && status >= 200 && status < 500 && status !== 408 && status !== 429;
      const answer = final ? answerOf(sent!, answerLimit) : undefined;
      // Larger than the limit, or streamed: sent, not kept.
      if (final && answer === undefined)
        log.warn({ event: identityOf(events), limit: answerLimit }, 'answer not kept for duplicates: streamed, or larger than the answer limit');
      const done = answer !== undefined ? store.complete(key, token, answer, window) : store.release(key, token);
      // The claim then lapses on its own, after the claim time.
      done.catch((err: unknown) => log.warn({ event: identityOf(events), err }, 'the idempotency store did not take the outcome; the claim lapses on its own'));
    };
  }
}

function identityOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): object {
  return Array.isArray(events) ? { events: events.length, first: eventIdentity(events[0]) } : eventIdentity(events);
}

/** Keeps what was sent for duplicates, or releases the claim. */
export type Settle = (incomplete: boolean, sent: Reply | SentError | undefined) => void;

/** A duplicate's kept answer, or the go-ahead to run with what settles the claim afterwards. */
export type Admission = { replay: Answer; settle?: undefined } | { settle: Settle; replay?: undefined };

/** What was sent, as kept for duplicates (headers but the connection's), while it is at most `limit` bytes; not a stream. */
function answerOf(sent: Reply | SentError, limit: number): Answer | undefined {
  const body = sent.body ?? '';
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return undefined;
  const headers: [string, OutgoingHttpHeader][] = [];
  for (const name in sent.headers) {
    const value = sent.headers[name];
    if (value !== undefined && isKept(name.toLowerCase())) headers.push([name, value]);
  }
  const answer = { status: sent.status, headers, body };
  // Counted exactly only when the bound of 3 bytes of UTF-8 a character says it may be too large.
  return sizeOf(answer) * 1.5 <= limit || exactSize(answer) <= limit ? answer : undefined;
}

/** The bytes of an answer as sent: its body and its headers. */
function exactSize(answer: Answer): number {
  let size = Buffer.byteLength(answer.body) + 16;
  for (const [name, value] of answer.headers) size += name.length + Buffer.byteLength(String(value));
  return size;
}

/** Sends a kept answer as it was first sent. */
export function replay(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of answer.headers) headers[name] = value;
  send(req, res, answer.status, headers, answer.body.length === 0 ? undefined : answer.body);
}
