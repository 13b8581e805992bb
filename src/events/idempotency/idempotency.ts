// Duplicates run once. With idempotency on, an event is known by its key (`source` and `id`, the
// CloudEvents rule, or the module's own key function). The first delivery claims the key in the
// store and runs, its claim renewed while it runs; a delivery while it runs is answered 429 (the
// broker tries again later); once it has answered 2xx or 4xx, later deliveries within the window
// get that answer again, byte for byte, without running the function. A 5xx, a timeout (once the
// function has finished), a 408 or 429, or an answer not kept (too large, or streamed) releases
// the key, so that the next delivery runs. Another event under the same source and id is a 409. A
// store that cannot be reached answers 503: an event is never run without its claim. Outcomes the
// store did not take are written again until it does, and a stop waits for them (close()).
import { randomFillSync, sha256, sha256Hash } from '../../util/random';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import { runtimeError, type SentError } from '../../errors';
import { MemoryStore, sizeOf, type Answer, type Claim, type Held, type IdempotencyStore } from './memory-store';
import { redisStore } from './redis-store';
import type { Logger } from '../../log/log';
import type { Metrics } from '../../telemetry/metrics';
import { eventIdentity } from '../../cloudevents/outcomes';
import { isThenable, now, settleWithin } from '../../lifecycle/deadline';
import { parseBody } from '../../body/body';
import { parseMediaType, type MediaType } from '../../body/media-type';
import type { Claims } from '../../lifecycle/lifecycle';
import { send } from '../../send';
import type { Reply } from '../../respond';

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

// Headers of one connection, not of the answer: never kept or replayed. The answer's headers are
// the function's own (CORS's, set per request, are the response's, not the answer's): all kept.
const NOT_KEPT = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date']);
const isKept = (name: string) => !NOT_KEPT.has(name);

/** The wait before an outcome the store did not take is written again, doubling up to the most. */
const RETRY_MS = 200;
const RETRY_MAX_MS = 5000;
/** Claims given back after a failed claim, at most at once: past this, they lapse on their own. */
const WRITES_MAX = 10_000;
/** How long close() waits for outcomes still being written, when stop() gave it no grace period. */
const CLOSE_WAIT_MS = 10_000;
/** The least it waits, however little of a grace period is left: a write to Redis takes a round trip. */
const CLOSE_LEAST_MS = 1000;

/** A claim this process holds: the delivery's, while its function runs and until its outcome is written. */
interface Hold extends Held {
  readonly events: CloudEvent<unknown> | CloudEvent<unknown>[];
  readonly log: Logger;
  readonly req: IncomingMessage;
  /** When the claim was last made to hold the claim time from then (`now()` time). */
  renewed: number;
  /** The store says the claim is no longer this delivery's. */
  lost: boolean;
  /** A fault in the invocation answered its request 500: the claim goes, at the latest when the process stops. */
  crashed: boolean;
}

/** An outcome being written: what to log if it is not written before the store closes. */
interface Write {
  readonly key: string;
  readonly events: CloudEvent<unknown> | CloudEvent<unknown>[];
  readonly log: Logger;
  /** Said already, by the write itself or by close(): said once. */
  reported: boolean;
}

export class Idempotency implements Claims {
  /** Claims whose function runs, or whose outcome waits for it to finish. */
  readonly #live = new Set<Hold>();
  /** Outcomes not yet written, each settling (never rejecting) once it is, or given up. */
  readonly #writes = new Map<Promise<void>, Write>();
  #renewal: NodeJS.Timeout | undefined;
  #givingBack = 0;
  #closing: Promise<void> | undefined;
  #closed = false;
  /** The process exits once drained. */
  #exiting = false;
  #tokenPrefix: string | undefined;
  #tokens = 0;

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
   * 409, 429, 4xx or 503 to answer instead. `delivered`: the events as they arrived, before a
   * contract's validator gave their data another form. The memory store answers at once, without a promise.
   */
  admit(
    events: CloudEvent<unknown> | CloudEvent<unknown>[],
    delivered: CloudEvent<unknown> | CloudEvent<unknown>[],
    log: Logger,
    req: IncomingMessage,
  ): Admission | Promise<Admission> {
    const held: Held = { key: this.#keyOf(events), token: this.#newToken(), digest: this.settings.key === undefined ? digestOf(delivered) : '' };
    let claim: Claim | Promise<Claim>;
    try {
      claim = this.settings.store.claim(held, this.settings.claim);
    } catch (err) {
      throw this.#unreachable(held, events, log, err);
    }
    if (!isThenable(claim)) return this.#admission(held, claim, events, log, req);
    return claim.then(
      (c) => this.#admission(held, c, events, log, req),
      (err: unknown) => {
        throw this.#unreachable(held, events, log, err);
      },
    );
  }

  /** The invocation of `req` crashed (faults.ts): its claim is released once its function stops, or when the process does. */
  crashed(req: IncomingMessage): void {
    for (const hold of this.#live) if (hold.req === req) hold.crashed = true;
  }

  /**
   * The process exits once this drain is over (serve.ts, after a signal or a crash): the claims of
   * functions still running then are released (they stop with it), whichever invocation crashed
   * (on Node 22 a fault is not always told to its invocation).
   */
  exiting(): void {
    this.#exiting = true;
  }

  /**
   * Ends idempotency for a stop: the claims of crashed invocations are released, outcomes still
   * being written are waited for, within `limit` ms, what was not written is logged with its key,
   * and the store is closed. Once, however often it is called; never rejects.
   */
  close(limit = CLOSE_WAIT_MS): Promise<void> {
    return (this.#closing ??= this.#close(limit));
  }

  async #close(limit: number): Promise<void> {
    const { store } = this.settings;
    for (const hold of this.#live) {
      if (!hold.crashed) continue;
      this.#live.delete(hold);
      this.#write(hold, () => store.release(hold));
    }
    // Outcomes of functions that finish meanwhile are written too: waited for until none is left.
    const deadline = now() + Math.max(limit, CLOSE_LEAST_MS);
    while (this.#writes.size > 0 && now() < deadline) {
      await settleWithin(Promise.all(this.#writes.keys()), deadline - now(), () => undefined).catch(() => undefined);
    }
    // The process exits: functions still running (cut at the end of the grace period, or crashed) stop with it, so their claims go.
    if (this.#exiting && this.#live.size > 0) {
      for (const hold of this.#live) this.#write(hold, () => store.release(hold));
      this.#live.clear();
      await settleWithin(Promise.all(this.#writes.keys()), Math.max(0, deadline - now()), () => undefined).catch(() => undefined);
    }
    this.#closed = true;
    clearInterval(this.#renewal);
    for (const write of this.#writes.values()) {
      if (write.reported) continue;
      write.reported = true;
      write.log.warn(
        { event: identityOf(write.events), key: write.key },
        "the event's outcome was not written before the idempotency store closed: its claim lapses on its own",
      );
    }
    for (const hold of this.#live) {
      hold.log.warn(
        { event: identityOf(hold.events), key: hold.key },
        "the idempotency store closed while the event's function still runs: its claim lapses on its own",
      );
    }
    await store.close().catch(() => undefined);
  }

  #admission(held: Held, claim: Claim, events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger, req: IncomingMessage): Admission {
    if (claim.state === 'claimed') {
      const hold: Hold = { ...held, events, log, req, renewed: now(), lost: false, crashed: false };
      this.#live.add(hold);
      this.#renewal ??= setInterval(this.#renew, Math.max(5, this.settings.claim / 4)).unref();
      return { settle: (incomplete, sent, unfinished) => this.#settle(hold, incomplete, sent, unfinished) };
    }
    // Another event under the same key (a forged or mistaken source and id): never its answer.
    if (held.digest !== '' && claim.digest !== '' && claim.digest !== held.digest) {
      this.metrics?.event('conflict');
      log.info({ event: identityOf(events) }, 'event refused: another event with its source and id was delivered first');
      throw runtimeError('FUNCRUN_EVENT_CONFLICT', 'another event with this source and id was delivered first: an event is known by its source and id');
    }
    if (claim.state === 'running') {
      this.metrics?.event('in_progress');
      log.info({ event: identityOf(events) }, 'duplicate event: the first delivery is still running');
      throw runtimeError('FUNCRUN_EVENT_IN_PROGRESS', 'this event is being handled: deliver it again later', { headers: { 'retry-after': IN_PROGRESS_RETRY } });
    }
    this.metrics?.event('replayed');
    log.info({ event: identityOf(events) }, 'duplicate event: answered as the first delivery was');
    return { replay: claim.answer };
  }

  /** A 503; the claim asked for may have been taken all the same (its reply lost): it is given back once the store answers. */
  #unreachable(held: Held, events: CloudEvent<unknown> | CloudEvent<unknown>[], log: Logger, err: unknown): Error {
    this.metrics?.event('store_unavailable');
    log.debug({ event: identityOf(events), err }, 'event not run: the idempotency store cannot be reached');
    this.#write({ ...held, events, log }, () => this.settings.store.release(held), undefined, true);
    return runtimeError('FUNCRUN_STORE_UNAVAILABLE', 'the idempotency store cannot be reached', { headers: { 'retry-after': STORE_RETRY } });
  }

  #keyOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): string {
    const { namespace, hashKeys } = this.settings;
    // A batch is one delivery: known by its events' keys, in order, hashed whatever the store (a
    // batch of many events would be past any key limit). Its own prefix: no event's key is a batch's.
    if (Array.isArray(events)) return `${hashKeys ? namespace : ''}batch:${sha256(JSON.stringify(events.map((e) => this.#eventKey(e))))}`;
    const key = this.#eventKey(events);
    if (hashKeys) return namespace + sha256(key);
    // In memory, source and id as they are; the module's own keys (any text) hashed.
    return this.settings.key === undefined ? `e:${key}` : `k:${sha256(key)}`;
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

  /** Unique across replicas: a random prefix per process, then a count. */
  #newToken(): string {
    this.#tokenPrefix ??= randomFillSync(Buffer.alloc(12)).toString('base64url');
    return `${this.#tokenPrefix}.${(++this.#tokens).toString(36)}`;
  }

  /**
   * Keeps what was sent, or releases the key. Called when the request's steps are done, so a client
   * gone mid-invocation does not free the key while the function still runs: its answer is kept
   * all the same (the function ran). `incomplete`: part of the work did not run (a batch cut
   * short), so the next delivery must. `unfinished`: the function still runs (answered 504 at its
   * timeout): the claim holds until it has finished, and is released then.
   */
  #settle(hold: Hold, incomplete: boolean, sent: Reply | SentError | undefined, unfinished: PromiseLike<unknown> | undefined): void {
    if (unfinished !== undefined) {
      const finished = Promise.resolve(unfinished).then(noop, noop);
      this.#track(
        hold,
        finished.then(() => this.#settle(hold, incomplete, sent, undefined)),
      );
      return;
    }
    this.#live.delete(hold);
    const { store, answerLimit, window } = this.settings;
    const status = sent?.status ?? 0;
    // An answer the sender will not send again for: 2xx and 4xx (but 408 and 429, which ask for a retry).
    const final = !incomplete && !hold.crashed && status >= 200 && status < 500 && status !== 408 && status !== 429;
    const answer = final ? answerOf(sent!, answerLimit) : undefined;
    // Larger than the limit, or streamed: sent, not kept.
    if (final && answer === undefined)
      hold.log.warn({ event: identityOf(hold.events), limit: answerLimit }, 'answer not kept for duplicates: streamed, or larger than the answer limit');
    if (answer === undefined) return this.#write(hold, () => store.release(hold));
    this.#write(
      hold,
      () => store.complete(hold, answer, window),
      (completed) => {
        if (completed === 'lapsed') {
          hold.log.warn(
            { event: identityOf(hold.events), key: hold.key },
            "the event's claim had gone while it ran (another delivery may have run it too): its answer is kept",
          );
        } else if (completed === 'answered') {
          hold.log.warn({ event: identityOf(hold.events), key: hold.key }, 'another delivery of the event answered first (it ran twice): its answer stays');
        }
      },
    );
  }

  /**
   * Writes an outcome; a store in the process does it at once. One that fails (an outside store)
   * is tried again and again, backing off, until the claim would have lapsed anyway. `giveBack`: a
   * claim that may not exist, released after a failed claim: bounded in number, and not waited
   * for by close().
   */
  #write<T>(about: Held & Pick<Hold, 'events' | 'log'>, work: () => T | Promise<T>, done?: (value: T) => void, giveBack = false): void {
    let first: T | Promise<T>;
    try {
      first = work();
    } catch (err) {
      first = Promise.reject(err);
    }
    if (!isThenable(first)) return done?.(first);
    const until = now() + this.settings.claim;
    const attempt = async (): Promise<void> => {
      let written: T | Promise<T> = first;
      for (let wait = RETRY_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
        try {
          // Awaited apart: `done?.(await written)` would not await it where there is no `done`.
          const value = await written;
          done?.(value);
          return;
        } catch (err) {
          if (this.#closed || now() + wait >= until) throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, wait).unref());
        written = work();
      }
    };
    if (giveBack) {
      if (this.#givingBack >= WRITES_MAX) return void Promise.resolve(first).catch(noop);
      this.#givingBack++;
      void attempt()
        .catch(noop)
        .finally(() => this.#givingBack--);
      return;
    }
    const write: Write = { key: about.key, events: about.events, log: about.log, reported: false };
    this.#track(
      write,
      attempt().catch((err: unknown) => {
        if (write.reported) return;
        write.reported = true;
        about.log.warn({ event: identityOf(about.events), key: about.key, err }, 'the idempotency store did not take the outcome; the claim lapses on its own');
      }),
    );
  }

  #track(write: Write | Hold, done: Promise<void>): void {
    const entry: Write = 'reported' in write ? write : { key: write.key, events: write.events, log: write.log, reported: false };
    this.#writes.set(done, entry);
    void done.finally(() => this.#writes.delete(done));
  }

  // A live process keeps its claims: each is made to hold the claim time again before a quarter of it has passed.
  #renew = (): void => {
    const { store, claim } = this.settings;
    const at = now();
    for (const hold of this.#live) {
      if (hold.lost || at - hold.renewed < claim / 4) continue;
      hold.renewed = at;
      let extended: boolean | Promise<boolean>;
      try {
        extended = store.extend(hold, claim);
      } catch (err) {
        extended = Promise.reject(err);
      }
      Promise.resolve(extended).then(
        (held) => {
          if (held || hold.lost || !this.#live.has(hold)) return;
          hold.lost = true;
          hold.log.warn(
            { event: identityOf(hold.events), key: hold.key },
            "the event's claim was lost while its function runs: another delivery may run it too",
          );
        },
        (err: unknown) => hold.log.debug({ event: identityOf(hold.events), err }, "the event's claim could not be extended: tried again shortly"),
      );
    }
  };
}

function noop(): void {}

/**
 * What makes an event this one beside its source and id, digested: its type, subject, data schema,
 * the data's media type (without its parameters; none is JSON, as in the JSON format) and the data
 * as binary mode reads it (bytes of JSON, text, XML or a form parsed by that media type, as a
 * structured event's data_base64 may carry them), so that a binary and a structured delivery of
 * one event agree. Values are compared as JSON: as JavaScript reads them (numbers past 2^53 may
 * compare equal, and of keys given twice the last is kept); the order of an object's keys counts.
 */
function digestOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): string {
  const hash = sha256Hash();
  for (const event of Array.isArray(events) ? events : [events]) {
    const media = parseMediaType(event.datacontenttype);
    hash.update(JSON.stringify([event.type, event.subject ?? null, event.dataschema ?? null, media?.type ?? 'application/json']), 'utf16le');
    let data = event.data;
    if (data instanceof Uint8Array && media !== undefined) data = readAs(data, media);
    if (data instanceof Uint8Array) {
      hash.update(`b${data.length}:`);
      hash.update(data);
      continue;
    }
    let text: string;
    try {
      text = typeof data === 'string' ? data : (JSON.stringify(data) ?? '');
    } catch {
      // Not JSON (a parsed XML document): its text.
      text = String(data);
    }
    hash.update(`${typeof data === 'string' ? 's' : 'j'}${text.length}:`);
    hash.update(text, 'utf16le');
  }
  return hash.digest('base64url');
}

/** Bytes read as binary mode reads a body of this media type; as they are when they do not parse. */
function readAs(bytes: Uint8Array, media: MediaType): unknown {
  try {
    return parseBody(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), media);
  } catch {
    return bytes;
  }
}

function identityOf(events: CloudEvent<unknown> | CloudEvent<unknown>[]): object {
  if (!Array.isArray(events)) return eventIdentity(events);
  return events.length === 0 ? { events: 0 } : { events: events.length, first: eventIdentity(events[0]) };
}

/** Keeps what was sent for duplicates, or releases the claim; once the function has finished, when it still runs. */
export type Settle = (incomplete: boolean, sent: Reply | SentError | undefined, unfinished: PromiseLike<unknown> | undefined) => void;

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
