// The idempotency store's commands to Redis, and their replies checked. A claim is `SET key
// c:<token>:<digest> NX PX`; an answer replaces it, as `a:` and the answer's bytes, for the
// window; a claim is extended and released only while it is still this delivery's (Lua scripts, so
// the check and the write are one step). Nothing else is written. A reply of another shape than
// its command's throws STRAY; a value funcrun did not write, FOREIGN.
import { decodeAnswer, encodeAnswer, type Answer, type Claim, type Completed, type Held } from './memory-store';

export const FOREIGN = 'the idempotency store (redis) holds a value funcrun did not write';
// A reply of another shape than its command's: the connection is out of step (something between
// funcrun and Redis lost a message), so nothing it says is trusted; the outcome is written again.
export const STRAY = 'the idempotency store (redis) answered out of step';

/** A command as node-redis's sendCommand() takes it. */
export type Command = (string | Buffer)[];

const CLAIM = Buffer.from('c:');
const ANSWER = Buffer.from('a:');

// KEYS[1] the key; ARGV[1] the claim (c:<token>:<digest>). COMPLETE: ARGV[2] the answer (a:<bytes>),
// ARGV[3] the window; 1 kept (or kept already: a write repeated after its reply was lost), 2
// stored where the claim had gone, 0 another answer is there.
const COMPLETE = `local v = redis.call('GET', KEYS[1])
if v == ARGV[2] then return 1 end
if v and v ~= ARGV[1] and string.sub(v, 1, 2) ~= 'c:' then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if v == ARGV[1] then return 1 end
return 2`;
// ARGV[2] the claim time.
const EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
const COMPLETED = new Map<unknown, Completed>([
  [0, 'answered'],
  [1, 'kept'],
  [2, 'lapsed'],
]);

/** A claim's value: its token, and the event's digest (none in a claim written before digests were kept). */
const claimOf = (held: Held) => (held.digest === '' ? `c:${held.token}` : `c:${held.token}:${held.digest}`);
const milliseconds = (ms: number) => String(Math.max(1, Math.ceil(ms)));

export const claimCommand = (held: Held, claimMs: number): Command => ['SET', held.key, claimOf(held), 'NX', 'PX', milliseconds(claimMs)];

/** Whether SET NX claimed the key (else it is taken). */
export function isClaimed(reply: unknown): boolean {
  if (reply === 'OK') return true;
  if (reply !== null) throw new Error(STRAY);
  return false;
}

/** Read as bytes (the answer's body is any bytes). */
export const valueCommand = (held: Held): Command => ['GET', held.key];

/** What holds a key that could not be claimed: a claim (running), or an answer (done). */
export function claimFound(value: unknown): Claim {
  // Gone between the two commands (its time ran out): a claim may be taken again, by this delivery's retry.
  if (value === null) return { state: 'running', digest: '' };
  if (!Buffer.isBuffer(value)) throw new Error(STRAY);
  if (value.subarray(0, 2).equals(ANSWER)) return { state: 'done', ...decodeAnswer(value.subarray(2)) };
  if (value.subarray(0, 2).equals(CLAIM)) {
    // c:<token>:<digest>, or c:<token> as written before digests were kept.
    const text = value.toString('latin1');
    const colon = text.indexOf(':', 2);
    return { state: 'running', digest: colon === -1 ? '' : text.slice(colon + 1) };
  }
  throw new Error(FOREIGN);
}

export const extendCommand = (held: Held, claimMs: number): Command => ['EVAL', EXTEND, '1', held.key, claimOf(held), milliseconds(claimMs)];

/** Whether the claim was still this delivery's, and now holds the claim time again. */
export function isExtended(reply: unknown): boolean {
  if (reply !== 0 && reply !== 1) throw new Error(STRAY);
  return reply === 1;
}

export const completeCommand = (held: Held, answer: Answer, windowMs: number): Command => [
  'EVAL',
  COMPLETE,
  '1',
  held.key,
  claimOf(held),
  Buffer.concat([ANSWER, encodeAnswer(answer, held.digest)]),
  milliseconds(windowMs),
];

export function completedOf(reply: unknown): Completed {
  const completed = COMPLETED.get(reply);
  if (completed === undefined) throw new Error(STRAY);
  return completed;
}

export const releaseCommand = (held: Held): Command => ['EVAL', RELEASE, '1', held.key, claimOf(held)];

/** Released, or not this delivery's claim any more: either is done. */
export function checkReleased(reply: unknown): void {
  if (reply !== 0 && reply !== 1) throw new Error(STRAY);
}
