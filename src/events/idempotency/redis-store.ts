// The idempotency store in Redis, shared by every replica. A claim is `SET key c:<token>:<digest>
// NX PX`; an answer replaces it, as `a:` and the answer's bytes, for the window; a claim is
// extended and released only while it is still this delivery's (scripts, so the check and the
// write are one step). Nothing else is written. `redis` (node-redis) is an optional peer dependency, found from the function's folder
// and loaded only when a Redis store is configured.
//
// The store never lets a delivery run without its claim: while Redis cannot be reached every call
// rejects at once (no offline queue), and a call Redis does not answer rejects after BOUND_MS, so
// a hung Redis cannot hang a request. The client reconnects by itself. Logs name the server by
// host and port only, never the URL's username or password.
//
// The client's types are written out here, as much of them as is used: funcrun's declarations
// must not need the package.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { decodeAnswer, encodeAnswer, type Claim, type Completed, type Held, type IdempotencyStore } from './memory-store';
import type { Logger } from '../../log/log';

interface Client {
  readonly isReady: boolean;
  duplicate(): Client;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  connect(): Promise<unknown>;
  sendCommand(args: (string | Buffer)[], options?: object): Promise<unknown>;
  close(): Promise<unknown>;
  destroy(): void;
}
interface Redis {
  createClient(options: object): Client;
  RESP_TYPES: { BLOB_STRING: number };
}

/** How long one call may take, and how long start waits for the first connection. */
const BOUND_MS = 2000;
/** The longest wait between two attempts to reconnect. */
const RECONNECT_CAP_MS = 2000;
/**
 * Commands waiting in the client at most. A healthy Redis has about one per request in flight; a
 * hung one would keep every command written to it, so past this they are refused at once.
 */
const QUEUE_MAX = 10_000;

const UNREACHABLE = 'the idempotency store (redis) is unreachable';
const SLOW = `the idempotency store (redis) did not answer within ${BOUND_MS / 1000} s`;
const FAILED = 'the idempotency store (redis) refused the command';
const FOREIGN = 'the idempotency store (redis) holds a value funcrun did not write';
// A reply of another shape than its command's: the connection is out of step (something between
// funcrun and Redis lost a message), so nothing it says is trusted; the outcome is written again.
const STRAY = 'the idempotency store (redis) answered out of step';

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

/** node-redis, from `folder` upwards (else from the working folder); 'old' for a version before 5; undefined when not installed. */
function loadRedis(folder: string): Redis | 'old' | undefined {
  for (const from of [folder, process.cwd()]) {
    let redis: Redis;
    try {
      redis = createRequire(join(resolve(from), 'package.json'))('redis') as Redis;
    } catch {
      continue; // Not installed there.
    }
    // RESP_TYPES came with version 5, as did the client's API used here.
    return typeof redis?.createClient === 'function' && typeof redis.RESP_TYPES?.BLOB_STRING === 'number' ? redis : 'old';
  }
  return undefined;
}

interface Target {
  /** host:port, for logs. */
  address: string;
  /** The URL's username and password (as written and decoded): never logged. */
  secrets: string[];
}

/** What the URL names, checked here so that no error quotes it (it may hold a password). */
function targetOf(url: string): Target {
  const form = 'expected redis://[[username]:password@]host[:port][/database] or rediss://…';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`the idempotency store's URL does not parse: ${form}`);
  }
  if ((parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '' || !/^\/?\d*$/.test(parsed.pathname)) {
    throw new Error(`the idempotency store's URL is not a Redis URL: ${form}`);
  }
  const secrets = [parsed.username, parsed.password].flatMap((part) => {
    let decoded = part;
    try {
      decoded = decodeURIComponent(part);
    } catch {
      // Kept as written.
    }
    return [part, decoded];
  });
  return { address: `${parsed.hostname}:${parsed.port || '6379'}`, secrets: [...new Set(secrets)].filter((s) => s !== '').sort((a, b) => b.length - a.length) };
}

/** An error's code or message for a log line, without the URL's credentials, short. Never throws. */
function reasonOf(err: unknown, secrets: string[]): string {
  let reason: string;
  try {
    const { code, message } = err as { code?: unknown; message?: unknown };
    reason = typeof code === 'string' ? code : typeof message === 'string' ? message : 'unknown error';
  } catch {
    reason = 'unknown error';
  }
  for (const secret of secrets) reason = reason.split(secret).join('[redacted]');
  return reason.length > 200 ? `${reason.slice(0, 200)}…` : reason;
}

/** `work`, or a rejection after BOUND_MS; the timer is cleared either way. */
function bounded<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(SLOW)), BOUND_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * The Redis store at `url` (redis:// or rediss://), with node-redis found from `folder`. Throws
 * when node-redis is not installed or the URL is not a Redis URL; a Redis that cannot be reached
 * yet is no error: the store starts with problem() set and connects when Redis is there.
 */
export async function redisStore(url: string, folder: string, log: Logger): Promise<IdempotencyStore> {
  const target = targetOf(url);
  const redis = loadRedis(folder);
  if (redis === undefined) {
    throw new Error(`the idempotency store is Redis, but the package 'redis' is not installed: run \`npm install redis\` in the function's folder (${folder})`);
  }
  if (redis === 'old') {
    throw new Error(
      `the idempotency store is Redis, and the package 'redis' installed is older than version 5: run \`npm install redis@latest\` in the function's folder (${folder})`,
    );
  }
  let client: Client;
  try {
    client = redis.createClient({
      url,
      disableOfflineQueue: true,
      commandsQueueMaxLength: QUEUE_MAX,
      commandOptions: { timeout: BOUND_MS },
      // The enterprise notices' handshake is one more command Redis may refuse.
      maintNotifications: 'disabled',
      socket: {
        connectTimeout: BOUND_MS,
        // Doubling from 100 ms up to the cap, with jitter so that replicas do not come back at once.
        reconnectStrategy: (retries: number) => Math.min(100 * 2 ** Math.min(retries, 10), RECONNECT_CAP_MS) + Math.floor(Math.random() * 100),
      },
    });
  } catch (err) {
    throw new Error(`the idempotency store's URL is not one the redis client accepts: ${reasonOf(err, target.secrets)}`);
  }
  const fields = { store: 'redis', redis: target.address };
  const buffers = { typeMapping: { [redis.RESP_TYPES.BLOB_STRING]: Buffer } };
  // Whether the last news was an error: the change is logged once each way.
  let down = false;
  let closed = false;
  let firstNews: () => void = () => {};
  const news = new Promise<void>((resolve) => (firstNews = resolve));

  const connect = (made: Client) => {
    made.on('error', (err) => {
      firstNews();
      if (down || closed || made !== client) return;
      // Connected still: the error is the client's own news, not an outage.
      if (made.isReady) return log.debug({ ...fields, reason: reasonOf(err, target.secrets) }, 'the idempotency store (redis) reported an error');
      down = true;
      log.warn({ ...fields, reason: reasonOf(err, target.secrets) }, `${UNREACHABLE}: reconnecting`);
    });
    made.on('ready', () => {
      firstNews();
      if (down) log.info(fields, 'the idempotency store (redis) is reachable again');
      down = false;
    });
    // Failures are reported as 'error' and retried; this settles only when the store is closed.
    made.connect().catch(() => {});
  };
  connect(client);
  // Ready, refused, or still trying after the bound: the server starts either way.
  await bounded(news).catch(() => {});

  // A reply of another shape than its command's: replies and commands are out of step on this
  // connection, and would stay so. It is dropped for a new one; what was in flight on it fails.
  const outOfStep = () => {
    if (closed) return;
    const old = client;
    log.warn(fields, `${STRAY}: connecting again`);
    client = old.duplicate();
    connect(client);
    old.destroy();
  };

  // False from a command that ran past the bound until one is answered in time.
  let answering = true;
  let pinging = false;

  /** Runs `work`, bounded; its rejection is one of the fixed messages, the client's error its cause. */
  async function call<T>(work: () => Promise<T>): Promise<T> {
    if (closed || !client.isReady) throw new Error(UNREACHABLE);
    try {
      const value = await bounded(work());
      answering = true;
      return value;
    } catch (err) {
      const message = (err as Error | undefined)?.message;
      // Connected but not answering (a hung Redis): readiness says so until it answers again.
      if (message === SLOW) answering = false;
      if (message === STRAY) outOfStep();
      if (message === SLOW || message === FOREIGN || message === STRAY) throw err;
      throw new Error(client.isReady ? FAILED : UNREACHABLE, { cause: err });
    }
  }

  return {
    // A claim whose answer is lost (a timeout, a connection cut) may have been taken all the same:
    // the caller gives it back by its token (idempotency.ts) once Redis answers again.
    claim(held, claimMs) {
      return call(async (): Promise<Claim> => {
        const set = await client.sendCommand(['SET', held.key, claimOf(held), 'NX', 'PX', milliseconds(claimMs)]);
        if (set === 'OK') return { state: 'claimed' };
        if (set !== null) throw new Error(STRAY);
        const value = await client.sendCommand(['GET', held.key], buffers);
        // Gone between the two commands (its time ran out): a claim may be taken again, by this delivery's retry.
        if (value === null) return { state: 'running', digest: '' };
        if (!Buffer.isBuffer(value)) throw new Error(STRAY);
        if (Buffer.isBuffer(value) && value.subarray(0, 2).equals(ANSWER)) return { state: 'done', ...decodeAnswer(value.subarray(2)) };
        if (Buffer.isBuffer(value) && value.subarray(0, 2).equals(CLAIM)) {
          // c:<token>:<digest>, or c:<token> as written before digests were kept.
          const text = value.toString('latin1');
          const colon = text.indexOf(':', 2);
          return { state: 'running', digest: colon === -1 ? '' : text.slice(colon + 1) };
        }
        throw new Error(FOREIGN);
      });
    },

    async extend(held, claimMs) {
      const extended = await call(() => client.sendCommand(['EVAL', EXTEND, '1', held.key, claimOf(held), milliseconds(claimMs)]));
      if (extended !== 0 && extended !== 1) throw new Error(STRAY);
      return extended === 1;
    },

    async complete(held, answer, windowMs) {
      const stored = await call(() =>
        client.sendCommand([
          'EVAL',
          COMPLETE,
          '1',
          held.key,
          claimOf(held),
          Buffer.concat([ANSWER, encodeAnswer(answer, held.digest)]),
          milliseconds(windowMs),
        ]),
      );
      const completed = COMPLETED.get(stored);
      if (completed === undefined) throw new Error(STRAY);
      return completed;
    },

    async release(held) {
      const released = await call(() => client.sendCommand(['EVAL', RELEASE, '1', held.key, claimOf(held)]));
      if (released !== 0 && released !== 1) throw new Error(STRAY);
    },

    problem() {
      if (closed || !client.isReady) return UNREACHABLE;
      if (answering) return undefined;
      // Asked (by readiness) while Redis hangs: a PING finds out when it answers again.
      if (!pinging) {
        pinging = true;
        call(() => client.sendCommand(['PING'])).then(
          () => (pinging = false),
          () => (pinging = false),
        );
      }
      return SLOW;
    },

    async close() {
      if (closed) return;
      closed = true;
      // Waits for the replies in flight, bounded; then the socket goes whatever happened.
      await bounded(Promise.resolve().then(() => client.close())).catch(() => {});
      try {
        client.destroy();
      } catch {
        // Already gone.
      }
    },
  };
}
