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
  /** The mode of the event it carries, as funcrun wrote it; undefined when it carries none (or the function wrote it). */
  mode?: EventMode;
}

export type EventMode = 'binary' | 'structured';

/**
 * An answer as bytes, for a store outside the process: its head as JSON (the event's digest and
 * mode in it, `mode: null` for no event), then the body as it was.
 */
export function encodeAnswer(answer: Answer, digest: string): Buffer {
  const head = Buffer.from(JSON.stringify({ status: answer.status, headers: answer.headers, ...(digest === '' ? {} : { digest }), mode: answer.mode ?? null }));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(head.length);
  return Buffer.concat([length, head, typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body]);
}

/** An answer and the digest of the event it answered ('' when none was kept with it). */
export function decodeAnswer(bytes: Buffer): { answer: Answer; digest: string } {
  const length = bytes.readUInt32BE(0);
  const head = JSON.parse(bytes.subarray(4, 4 + length).toString()) as Omit<Answer, 'body' | 'mode'> & { digest?: unknown; mode?: unknown };
  const { status, headers, digest } = head;
  const answer: Answer = { status, headers, body: bytes.subarray(4 + length) };
  // An answer kept by a version that did not write the mode (no `mode` at all) is told by its headers.
  const mode = 'mode' in head ? head.mode : keptMode(headers);
  if (mode === 'binary' || mode === 'structured') answer.mode = mode;
  return { answer, digest: typeof digest === 'string' ? digest : '' };
}

/** The mode of the event an answer's headers carry, as the HTTP binding tells it (structured by its media type, binary by `ce-*` headers). */
function keptMode(headers: Answer['headers']): EventMode | undefined {
  let binary = 0;
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower === 'content-type' && /^application\/cloudevents\+json\s*(;|$)/i.test(String(value))) return 'structured';
    if (lower === 'ce-id' || lower === 'ce-specversion') binary++;
  }
  return binary === 2 ? 'binary' : undefined;
}

/**
 * The answer with a body and headers of its own. A Buffer is copied: the function may write into
 * its own again (one Buffer reused for every answer), and a view of a larger one (`big.subarray(0,
 * 200)`, a slice of node's pool) would keep all of it alive, past the bound on bytes, which counts
 * the view. Text is copied too: V8 keeps a string cut from a larger one (`doc.slice(0, 40)`) as a
 * view of it, 5 MB alive for 40 characters counted.
 */
function ownBytes(answer: Answer): Answer {
  const body = answer.body;
  const copy = typeof body === 'string' ? ownText(body) : Buffer.from(new Uint8Array(body).buffer);
  const headers = answer.headers.map(([name, value]): [string, OutgoingHttpHeader] => [
    ownText(name),
    typeof value === 'string' ? ownText(value) : Array.isArray(value) ? value.map(ownText) : value,
  ]);
  return { ...answer, body: copy, headers };
}

/** A copy of `text` that is no view of another string: V8 flattens a joined string into new memory when it is cut. */
function ownText(text: string): string {
  return text.length === 0 ? text : (' ' + text).slice(1);
}

/** The memory an answer takes, at most: its body and its headers' text (a character is 2 bytes at most). */
export function sizeOf(answer: Answer): number {
  const body = answer.body;
  let size = (typeof body === 'string' ? body.length * 2 : body.length) + 16;
  for (const [name, value] of answer.headers) size += name.length + (typeof value === 'string' ? value.length * 2 : String(value).length * 2);
  return size;
}

/**
 * One delivery's claim on a key: its token, unique across replicas, and the digest of the event
 * it runs ('' where the module's own key says what one event is), kept with the claim and the answer.
 */
export interface Held {
  readonly key: string;
  readonly token: string;
  readonly digest: string;
}

/** What a store says of a key when asked to claim it. */
export type Claim =
  /** The key was free: it is claimed now, under the delivery's token, until completed, released or its time runs out. */
  | { state: 'claimed' }
  /** Another delivery holds the claim, for the event of this digest ('' when not known). */
  | { state: 'running'; digest: string }
  /** The answer stored for the key, replayed as it is, and the digest of the event it answered. */
  | { state: 'done'; answer: Answer; digest: string };

/**
 * What complete() did: `kept` replaced the delivery's claim; `lapsed` stored the answer where the
 * claim had gone (its time ran out, or another delivery took the key: it ran twice, and the first
 * answer stays); `answered` found another delivery's answer there already, and left it.
 */
export type Completed = 'kept' | 'lapsed' | 'answered';

export interface IdempotencyStore {
  /**
   * Claims `held.key` for `claimMs` under its token (SET NX PX), or says who has it. Rejects when
   * the store cannot be reached. A store in the process may answer at once, without a promise.
   */
  claim(held: Held, claimMs: number): Claim | Promise<Claim>;
  /** Makes the claim hold `claimMs` from now, if it is still `held`'s: false when it is not. */
  extend(held: Held, claimMs: number): boolean | Promise<boolean>;
  /** Stores the answer for `windowMs` in the place of `held`'s claim, or of no claim (see Completed). */
  complete(held: Held, answer: Answer, windowMs: number): Completed | Promise<Completed>;
  /** Removes the claim, if it is still `held`'s: the next delivery runs. */
  release(held: Held): void | Promise<void>;
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
  digest: string;
  expires: number;
  size: number;
}

const CLAIMED: Claim = Object.freeze({ state: 'claimed' });

/**
 * The store of one process: a Map in least-recently-used order (a read moves a key to the end),
 * bounded in entries and bytes. Answers leave oldest first; a claim leaves only when it is
 * completed, released or expired, since dropping it would let a duplicate run (claims are bounded
 * by the requests in flight).
 */
export class MemoryStore implements IdempotencyStore {
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  constructor(
    readonly limits: MemoryLimits,
    private readonly now: () => number = Date.now,
  ) {}

  claim(held: Held, claimMs: number): Claim {
    const key = held.key;
    const entry = this.#live(key);
    if (entry !== undefined) {
      // Recently used: to the end of the order.
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      return entry.answer === undefined ? { state: 'running', digest: entry.digest } : { state: 'done', answer: entry.answer, digest: entry.digest };
    }
    const size = key.length + held.digest.length;
    this.#entries.set(key, { token: held.token, answer: undefined, digest: held.digest, expires: this.now() + claimMs, size });
    this.#bytes += size;
    this.#evict();
    return CLAIMED;
  }

  extend(held: Held, claimMs: number): boolean {
    const entry = this.#live(held.key);
    if (entry?.token !== held.token) return false;
    entry.expires = this.now() + claimMs;
    return true;
  }

  complete(held: Held, given: Answer, windowMs: number): Completed {
    const key = held.key;
    const entry = this.#live(key);
    if (entry !== undefined && entry.token === undefined) return 'answered';
    const outcome = entry?.token === held.token ? 'kept' : 'lapsed';
    const answer = ownBytes(given);
    const size = key.length + held.digest.length + sizeOf(answer);
    // The claim's entry, if it is there, becomes the answer's, at the end of the order: just written, it is the most recently used.
    if (entry !== undefined) this.#remove(key);
    this.#entries.set(key, { token: undefined, answer, digest: held.digest, expires: this.now() + windowMs, size });
    this.#bytes += size;
    this.#evict();
    return outcome;
  }

  release(held: Held): void {
    if (this.#live(held.key)?.token === held.token) this.#remove(held.key);
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

  // Least recently used first: expired entries and answers. Live claims are passed over (see the
  // class's comment); there are no more of them than requests in flight, so each scan from the
  // start passes over at most those. (One that went on from where the last stopped would pass over
  // keys used since, moved to the end, and take a later one first.)
  #evict(): void {
    const { entries, bytes } = this.limits;
    const now = this.now();
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= entries && this.#bytes <= bytes) return;
      if (entry.token === undefined || entry.expires <= now) this.#remove(key);
    }
  }
}
