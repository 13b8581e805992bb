// Outcomes on their way to the store: a kept answer, a released claim. A store in the process takes
// them at once; one outside it (Redis) may fail, so each is written again, backing off, until the
// store takes it or its claim would have lapsed anyway. A stop's drain waits for them (drain()),
// and close() says which were not written, with their keys.
import type { Logger } from '../../log/log';
import { isThenable, now, settleWithin } from '../../lifecycle/deadline';
import { identityOf, type Events } from './event-key';
import type { IdempotencySettings } from './settings';

/** The wait before an outcome the store did not take is written again, doubling up to the most. */
const RETRY_MS = 200;
const RETRY_MAX_MS = 5000;
/** Claims given back after a failed claim, at most at once: past this, they lapse on their own. */
const WRITES_MAX = 10_000;

/** What an outcome is about: the delivery's key, and what its log lines name. */
export interface Outcome {
  readonly key: string;
  readonly events: Events;
  readonly log: Logger;
}

/** An outcome being written: what to log if it is not written before the store closes. */
interface Write extends Outcome {
  /** Said already, by the write itself or by close(): said once. */
  reported: boolean;
}

export class PendingWrites {
  /** Outcomes not yet written, each settling (never rejecting) once it is, or given up. */
  readonly #writes = new Map<Promise<void>, Write>();
  #givingBack = 0;
  /** The store closes: a write that fails is not tried again. */
  #closed = false;

  constructor(private readonly settings: Pick<IdempotencySettings, 'claim'>) {}

  get size(): number {
    return this.#writes.size;
  }

  /** Writes an outcome (`work`), and tells `done` what the store said; tried again while it fails. */
  write<T>(about: Outcome, work: () => T | Promise<T>, done?: (value: T) => void): void {
    const first = attempt(work);
    if (!isThenable(first)) return done?.(first);
    const write: Write = { key: about.key, events: about.events, log: about.log, reported: false };
    this.#track(
      write,
      this.#retry(first, work, done).catch((err: unknown) => {
        if (write.reported) return;
        write.reported = true;
        about.log.warn({ event: identityOf(about.events), key: about.key, err }, 'the idempotency store did not take the outcome; the claim lapses on its own');
      }),
    );
  }

  /** Releases a claim that may not exist (its claim failed, its reply lost): bounded in number, and not waited for by drain(). */
  giveBack(work: () => unknown): void {
    const first = attempt(work);
    if (!isThenable(first)) return;
    if (this.#givingBack >= WRITES_MAX) return void Promise.resolve(first).catch(noop);
    this.#givingBack++;
    void this.#retry(first, work)
      .catch(noop)
      .finally(() => this.#givingBack--);
  }

  /** An outcome that `done` writes once it settles (its function still runs): waited for as the others are. */
  track(about: Outcome, done: Promise<void>): void {
    this.#track({ key: about.key, events: about.events, log: about.log, reported: false }, done);
  }

  /** The outcomes waited for under `key` are settled otherwise (its claim released at exit): no longer waited for, nor reported as unwritten by close(). */
  settledOtherwise(key: string): void {
    for (const [done, write] of this.#writes) if (write.key === key) this.#writes.delete(done);
  }

  /** Waits until no outcome is left to write, or `deadline` (`now()` time) has come; outcomes added meanwhile too. */
  async drain(deadline: number): Promise<void> {
    while (this.#writes.size > 0 && now() < deadline) await this.settleWithin(deadline - now());
  }

  /** Waits for the outcomes being written now, `ms` at most. Never rejects. */
  async settleWithin(ms: number): Promise<void> {
    await settleWithin(Promise.all(this.#writes.keys()), ms, () => undefined).catch(() => undefined);
  }

  /** The store closes: no write is tried again, and those not written are logged, with their keys. */
  close(): void {
    this.#closed = true;
    for (const write of this.#writes.values()) {
      if (write.reported) continue;
      write.reported = true;
      write.log.warn(
        { event: identityOf(write.events), key: write.key },
        "the event's outcome was not written before the idempotency store closed: its claim lapses on its own",
      );
    }
  }

  /** Awaits the first attempt, and writes again, backing off, until the store takes it or the claim would have lapsed. */
  async #retry<T>(first: T | Promise<T>, work: () => T | Promise<T>, done?: (value: T) => void): Promise<void> {
    const until = now() + this.settings.claim;
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
  }

  #track(write: Write, done: Promise<void>): void {
    this.#writes.set(done, write);
    void done.finally(() => this.#writes.delete(done));
  }
}

/** What `work` returns; its throw as a rejection. */
function attempt<T>(work: () => T | Promise<T>): T | Promise<T> {
  try {
    return work();
  } catch (err) {
    return Promise.reject(err);
  }
}

function noop(): void {}
