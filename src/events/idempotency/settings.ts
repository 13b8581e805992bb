// Idempotency's settings: what start() is given (the store as text, the times, the limits) and
// what they become once the store is open. A claim's time is chosen here, from the invocation
// timeout when none is set.
import type { CloudEvent } from 'cloudevents';
import type { Logger } from '../../log/log';
import { MemoryStore, type IdempotencyStore } from './memory-store';
import { redisStore } from './redis-store';

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
