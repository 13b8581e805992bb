// Duplicates run once. With idempotency on, an event is known by its key (`source` and `id`, the
// CloudEvents rule, or the module's own key function). The first delivery claims the key in the
// store and runs, its claim renewed while it runs; a delivery while it runs is answered 429 (the
// broker tries again later); once it has answered 2xx or 4xx, later deliveries within the window
// get that answer again, byte for byte (an event in it written again in their own mode, binary
// or structured), without running the function. A 5xx, a timeout (once the function has
// finished), a 408 or 429, or an answer not kept (too large, or streamed) releases the key, so
// that the next delivery runs. Another event under the same source and id is a 409. A
// store that cannot be reached answers 503: an event is never run without its claim. Outcomes the
// store did not take are written again until it does, and a stop waits for them (close()).
//
// This module admits and settles deliveries; beside it, by role: settings.ts (the store opened),
// event-key.ts (an event's key and digest), claims.ts (the claims held, and their renewal),
// answers.ts (what is kept, and its replay), pending-writes.ts (outcomes on their way to the store).
import type { IncomingMessage } from 'node:http';
import { randomFillSync } from '../../util/random';
import { runtimeError, type SentError } from '../../errors';
import type { Logger } from '../../log/log';
import type { Metrics } from '../../telemetry/metrics';
import { isThenable, now } from '../../lifecycle/deadline';
import type { Claims } from '../../lifecycle/lifecycle';
import type { Reply } from '../../respond';
import type { Answer, Claim, Completed, Held } from './memory-store';
import type { IdempotencySettings } from './settings';
import { digestOf, identityOf, keyOf, type Events } from './event-key';
import { LiveClaims, type Hold } from './claims';
import { answerOf, isFinal } from './answers';
import { PendingWrites } from './pending-writes';

export { openIdempotency, type IdempotencyOptions, type IdempotencySettings } from './settings';
export { replay } from './answers';

// Seconds a sender waits before it tries again: a running duplicate is usually done soon; an
// unreachable store takes longer to come back.
const IN_PROGRESS_RETRY = '1';
const STORE_RETRY = '5';

/** How long close() waits for outcomes still being written, when stop() gave it no grace period. */
const CLOSE_WAIT_MS = 10_000;
/** The least it waits, however little of a grace period is left: a write to Redis takes a round trip. */
const CLOSE_LEAST_MS = 1000;

/** Keeps what was sent for duplicates, or releases the claim; once the function has finished, when it still runs. */
export type Settle = (incomplete: boolean, sent: Reply | SentError | undefined, unfinished: PromiseLike<unknown> | undefined) => void;

/** A duplicate's kept answer, or the go-ahead to run with what settles the claim afterwards. */
export type Admission = { replay: Answer; settle?: undefined } | { settle: Settle; replay?: undefined };

export class Idempotency implements Claims {
  /** Claims whose function runs, or whose outcome waits for it to finish. */
  readonly #live: LiveClaims;
  /** Outcomes not yet written. */
  readonly #writes: PendingWrites;
  #closing: Promise<void> | undefined;
  /** The process exits once drained. */
  #exiting = false;
  #tokenPrefix: string | undefined;
  #tokens = 0;

  constructor(
    readonly settings: IdempotencySettings,
    private readonly metrics: Metrics | undefined,
  ) {
    this.#live = new LiveClaims(settings);
    this.#writes = new PendingWrites(settings);
  }

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
  admit(events: Events, delivered: Events, log: Logger, req: IncomingMessage): Admission | Promise<Admission> {
    const held: Held = { key: keyOf(events, this.settings), token: this.#newToken(), digest: this.settings.key === undefined ? digestOf(delivered) : '' };
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
    this.#live.crashed(req);
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
      this.#writes.write(hold, () => store.release(hold));
    }
    // Outcomes of functions that finish meanwhile are written too: waited for until none is left.
    const deadline = now() + Math.max(limit, CLOSE_LEAST_MS);
    await this.#writes.drain(deadline);
    // The process exits: functions still running (cut at the end of the grace period, or crashed) stop with it, so their claims go.
    if (this.#exiting && this.#live.size > 0) {
      for (const hold of this.#live) {
        hold.log.warn(
          { event: identityOf(hold.events), key: hold.key },
          "the process exits while the event's function still runs: its claim is released, and the event runs again when it is delivered again",
        );
        // What waited for the function (answered at its timeout) is settled by this release, or by its own failure's line.
        this.#writes.settledOtherwise(hold.key);
        this.#writes.write(hold, () => store.release(hold));
      }
      this.#live.clear();
      // Their own time: the drain may have waited to its end for such a function (answered at its timeout).
      await this.#writes.settleWithin(Math.max(CLOSE_LEAST_MS, deadline - now()));
    }
    this.#writes.close();
    this.#live.close();
    await store.close().catch(() => undefined);
  }

  #admission(held: Held, claim: Claim, events: Events, log: Logger, req: IncomingMessage): Admission {
    if (claim.state === 'claimed') {
      const hold = this.#live.add(held, events, log, req);
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
  #unreachable(held: Held, events: Events, log: Logger, err: unknown): Error {
    this.metrics?.event('store_unavailable');
    log.debug({ event: identityOf(events), err }, 'event not run: the idempotency store cannot be reached');
    this.#writes.giveBack(() => this.settings.store.release(held));
    return runtimeError('FUNCRUN_STORE_UNAVAILABLE', 'the idempotency store cannot be reached', { headers: { 'retry-after': STORE_RETRY } });
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
      this.#writes.track(
        hold,
        finished.then(() => this.#settle(hold, incomplete, sent, undefined)),
      );
      return;
    }
    this.#live.delete(hold);
    const { store, answerLimit, window } = this.settings;
    const final = !incomplete && !hold.crashed && isFinal(sent?.status ?? 0);
    const answer = final ? answerOf(sent!, answerLimit) : undefined;
    // Larger than the limit, or streamed: sent, not kept.
    if (final && answer === undefined)
      hold.log.warn({ event: identityOf(hold.events), limit: answerLimit }, 'answer not kept for duplicates: streamed, or larger than the answer limit');
    if (incomplete)
      hold.log.info({ event: identityOf(hold.events) }, 'batch cut short: its claim is released, and its events run again when it is delivered again');
    if (answer === undefined) return this.#writes.write(hold, () => store.release(hold));
    this.#writes.write(
      hold,
      () => store.complete(hold, answer, window),
      (completed) => reportCompleted(hold, completed),
    );
  }
}

/** Says when the answer was kept where the claim was no longer this delivery's: the event may have run twice. */
function reportCompleted(hold: Hold, completed: Completed): void {
  if (completed === 'lapsed') {
    hold.log.warn(
      { event: identityOf(hold.events), key: hold.key },
      "the event's claim had gone while it ran (another delivery may have run it too): its answer is kept",
    );
  } else if (completed === 'answered') {
    hold.log.warn({ event: identityOf(hold.events), key: hold.key }, 'another delivery of the event answered first (it ran twice): its answer stays');
  }
}

function noop(): void {}
