// The requests not yet answered, in arrival order, with their reqIds: the drain waits for them,
// and names those the end of the grace period cuts. A list linked through the responses
// themselves: a Map keyed by the response hashed each one on its way in and out, and shrank as
// it emptied (some 1,300 instructions a request).
import type { ServerResponse } from 'node:http';

const ENTRY = Symbol('funcrun in flight');

interface Entry {
  readonly res: ServerResponse;
  readonly reqId: number;
  previous: Entry | undefined;
  next: Entry | undefined;
  /** Answered: out of the list, but its `next` kept, so that a walk standing on it goes on. */
  left: boolean;
}

type Tracked = ServerResponse & { [ENTRY]?: Entry | undefined };

export class InFlight {
  #first: Entry | undefined = undefined;
  #last: Entry | undefined = undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(res: ServerResponse, reqId: number): void {
    const entry: Entry = { res, reqId, previous: this.#last, next: undefined, left: false };
    if (this.#last === undefined) this.#first = entry;
    else this.#last.next = entry;
    this.#last = entry;
    this.#size++;
    (res as Tracked)[ENTRY] = entry;
  }

  /** No longer in flight; said again (the fault handler, then the request's last step), nothing. */
  delete(res: ServerResponse): void {
    const entry = (res as Tracked)[ENTRY];
    if (entry === undefined) return;
    (res as Tracked)[ENTRY] = undefined;
    entry.left = true;
    if (entry.previous === undefined) this.#first = entry.next;
    else entry.previous.next = entry.next;
    if (entry.next === undefined) this.#last = entry.previous;
    else entry.next.previous = entry.previous;
    this.#size--;
  }

  /**
   * Each request in flight, oldest first, as a Map's walk goes: one that leaves meanwhile is not
   * given, and does not stop the walk (what followed it when it left is later still, or has left).
   */
  *[Symbol.iterator](): IterableIterator<[ServerResponse, number]> {
    for (let entry = this.#first; entry !== undefined; entry = entry.next) if (!entry.left) yield [entry.res, entry.reqId];
  }
}
