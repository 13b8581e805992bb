// Where idempotency keeps its claims and answers: the interface every store implements, and the
// default store, in this process's memory. A claim marks an event as running; an answer replaces
// it when the function has answered, for the window. Keys arrive bounded by the key limit.
import type { OutgoingHttpHeader } from 'node:http';

/** An answer kept for duplicates: what was sent, but the headers of the connection. */
export interface Answer {
  status: number;
  headers: [string, OutgoingHttpHeader][];
  /** As send() wrote it: text is kept as text (its bytes are made only for a store outside the process). */
  body: Buffer | string;
}

/** An answer as bytes, for a store outside the process: its head as JSON, then the body as it was. */
export function encodeAnswer(answer: Answer): Buffer {
  const head = Buffer.from(JSON.stringify({ status: answer.status, headers: answer.headers }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(head.length);
  return Buffer.concat([length, head, typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body]);
}

export function decodeAnswer(bytes: Buffer): Answer {
  const length = bytes.readUInt32BE(0);
  const { status, headers } = JSON.parse(bytes.subarray(4, 4 + length).toString()) as Omit<Answer, 'body'>;
  return { status, headers, body: bytes.subarray(4 + length) };
}

/** The memory an answer takes, at most: its body and its headers' text (a character is 2 bytes at most). */
export function sizeOf(answer: Answer): number {
  const body = answer.body;
  let size = (typeof body === 'string' ? body.length * 2 : body.length) + 16;
  for (const [name, value] of answer.headers) size += name.length + (typeof value === 'string' ? value.length * 2 : String(value).length * 2);
  return size;
}

/** What a store says of a key when asked to claim it. */
export type Claim =
  /** The key was free: it is claimed now, under `token`, until it is completed or released or its time runs out. */
  | { state: 'claimed'; token: string }
  /** Another delivery holds the claim. */
  | { state: 'running' }
  /** The answer stored for the key: replayed as it is. */
  | { state: 'done'; answer: Answer };

export interface IdempotencyStore {
  /**
   * Claims `key` for `claimMs` (SET NX PX), or says who has it. Rejects when the store cannot be
   * reached. A store in the process may answer at once, without a promise.
   */
  claim(key: string, claimMs: number): Claim | Promise<Claim>;
  /** Replaces this claim (only if it is still `token`'s) with the answer, kept for `windowMs`. */
  complete(key: string, token: string, answer: Answer, windowMs: number): Promise<void>;
  /** Removes this claim (only if it is still `token`'s): the next delivery runs. */
  release(key: string, token: string): Promise<void>;
  /** Undefined while the store is usable; else why not, in words safe to answer (no address, no credentials). */
  problem(): string | undefined;
  /** Closes connections; called once at shutdown. */
  close(): Promise<void>;
}

export interface MemoryLimits {
  /** Keys kept at most. */
  entries: number;
  /** Bytes of keys and answers kept at most. */
  bytes: number;
}

interface Entry {
  /** A claim's token, or undefined for an answer. */
  token: string | undefined;
  answer: Answer | undefined;
  expires: number;
  size: number;
}

let tokens = 0;
const RUNNING: Claim = Object.freeze({ state: 'running' });
const DONE = Promise.resolve();

/**
 * The store of one process: a Map in least-recently-used order (a read moves a key to the end),
 * bounded in entries and bytes. Answers leave oldest first; a claim leaves only when it is
 * completed, released or expired, since dropping it would let a duplicate run (claims are bounded
 * by the requests in flight).
 */
export class MemoryStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  #cursor = this.#entries.entries();
  #bytes = 0;
  constructor(
    readonly limits: MemoryLimits,
    private readonly now: () => number = Date.now,
  ) {}

  claim(key: string, claimMs: number): Claim {
    const entry = this.#live(key);
    if (entry !== undefined) {
      // Recently used: to the end of the order.
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      return entry.answer === undefined ? RUNNING : { state: 'done', answer: entry.answer };
    }
    const token = String(++tokens);
    this.#entries.set(key, { token, answer: undefined, expires: this.now() + claimMs, size: key.length });
    this.#bytes += key.length;
    this.#evict();
    return { state: 'claimed', token };
  }

  complete(key: string, token: string, answer: Answer, windowMs: number): Promise<void> {
    const entry = this.#live(key);
    if (entry?.token !== token) return DONE;
    // The claim's entry becomes the answer's, where it stands in the order.
    const size = key.length + sizeOf(answer);
    this.#bytes += size - entry.size;
    entry.token = undefined;
    entry.answer = answer;
    entry.expires = this.now() + windowMs;
    entry.size = size;
    this.#evict();
    return DONE;
  }

  release(key: string, token: string): Promise<void> {
    if (this.#live(key)?.token === token) this.#remove(key);
    return DONE;
  }

  problem(): undefined {
    return undefined;
  }

  close(): Promise<void> {
    this.#entries.clear();
    this.#bytes = 0;
    return Promise.resolve();
  }

  /** How many keys and bytes are kept: for the specs. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  #live(key: string): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.expires > this.now()) return entry;
    this.#remove(key);
    return undefined;
  }

  #remove(key: string): void {
    const old = this.#entries.get(key);
    if (old === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= old.size;
  }

  // Oldest first: expired entries and answers. Live claims are passed over (see the class's
  // comment); there are no more of them than requests in flight. The scan goes on from where the
  // last one stopped (a Map's iterator sees later changes), so removed entries are not walked again.
  #evict(): void {
    const { entries, bytes } = this.limits;
    const now = this.now();
    let restarted = false;
    while (this.#entries.size > entries || this.#bytes > bytes) {
      const next = this.#cursor.next();
      if (next.done === true) {
        // Only live claims are left to pass over: they stay.
        if (restarted) return;
        restarted = true;
        this.#cursor = this.#entries.entries();
        continue;
      }
      const [key, entry] = next.value;
      if (entry.token === undefined || entry.expires <= now) this.#remove(key);
    }
  }
}
