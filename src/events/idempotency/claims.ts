// The claims this process holds, one a delivery: from its admission, while its function runs, until
// its outcome is handed to the store. A live process keeps them: each is made to hold the claim
// time again before a quarter of it has passed, so that only a dead replica's claims lapse.
import type { IncomingMessage } from 'node:http';
import type { Logger } from '../../log/log';
import { now } from '../../lifecycle/deadline';
import type { Held } from './memory-store';
import { identityOf, type Events } from './event-key';
import type { IdempotencySettings } from './settings';

/** A claim this process holds: the delivery's, while its function runs and until its outcome is written. */
export interface Hold extends Held {
  readonly events: Events;
  readonly log: Logger;
  readonly req: IncomingMessage;
  /** When the claim was last made to hold the claim time from then (`now()` time). */
  renewed: number;
  /** The store says the claim is no longer this delivery's. */
  lost: boolean;
  /** A fault in the invocation answered its request 500: the claim goes, at the latest when the process stops. */
  crashed: boolean;
}

export class LiveClaims implements Iterable<Hold> {
  readonly #holds = new Set<Hold>();
  #renewal: NodeJS.Timeout | undefined;

  constructor(private readonly settings: Pick<IdempotencySettings, 'store' | 'claim'>) {}

  /** A claim just taken: held, and renewed while it is. */
  add(held: Held, events: Events, log: Logger, req: IncomingMessage): Hold {
    const hold: Hold = { ...held, events, log, req, renewed: now(), lost: false, crashed: false };
    this.#holds.add(hold);
    this.#renewal ??= setInterval(this.#renew, Math.max(5, this.settings.claim / 4)).unref();
    return hold;
  }

  delete(hold: Hold): void {
    this.#holds.delete(hold);
  }

  clear(): void {
    this.#holds.clear();
  }

  get size(): number {
    return this.#holds.size;
  }

  [Symbol.iterator](): IterableIterator<Hold> {
    return this.#holds.values();
  }

  /** The invocation of `req` crashed: its claim goes once its function stops. */
  crashed(req: IncomingMessage): void {
    for (const hold of this.#holds) if (hold.req === req) hold.crashed = true;
  }

  /** The store closes: no claim is renewed any more; those still held are said to lapse on their own. */
  close(): void {
    clearInterval(this.#renewal);
    for (const hold of this.#holds) {
      hold.log.warn(
        { event: identityOf(hold.events), key: hold.key },
        "the idempotency store closed while the event's function still runs: its claim lapses on its own",
      );
    }
  }

  // Each claim not renewed for a quarter of the claim time is made to hold it again.
  #renew = (): void => {
    const { store, claim } = this.settings;
    const at = now();
    for (const hold of this.#holds) {
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
          if (held || hold.lost || !this.#holds.has(hold)) return;
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
