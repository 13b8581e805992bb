// The idempotency store's connection to Redis. `redis` (node-redis) is an optional peer dependency,
// found from the function's folder and loaded only when a Redis store is configured.
//
// The store never lets a delivery run without its claim: while Redis cannot be reached every call
// rejects at once (no offline queue), and a call Redis does not answer rejects after BOUND_MS, so
// a hung Redis cannot hang a request. The client reconnects by itself, and is replaced when its
// replies fall out of step with its commands. Logs name the server by host and port only, never
// the URL's username or password.
//
// The client's types are written out here, as much of them as is used: funcrun's declarations
// must not need the package.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { Logger } from '../../log/log';
import { FOREIGN, STRAY, type Command } from './redis-scripts';

interface Client {
  readonly isReady: boolean;
  duplicate(): Client;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  on(event: 'ready', listener: () => void): unknown;
  connect(): Promise<unknown>;
  sendCommand(args: Command, options?: object): Promise<unknown>;
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

/** node-redis, version 5 or later; else the error that says how to install it. */
function requireRedis(folder: string): Redis {
  const redis = loadRedis(folder);
  if (redis === undefined) {
    throw new Error(`the idempotency store is Redis, but the package 'redis' is not installed: run \`npm install redis\` in the function's folder (${folder})`);
  }
  if (redis === 'old') {
    throw new Error(
      `the idempotency store is Redis, and the package 'redis' installed is older than version 5: run \`npm install redis@latest\` in the function's folder (${folder})`,
    );
  }
  return redis;
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

/** The client for `url`: no offline queue, every command bounded, reconnecting with backoff. */
function newClient(redis: Redis, url: string, target: Target): Client {
  try {
    return redis.createClient({
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
}

export class RedisConnection {
  #client: Client;
  /** GET's reply as bytes, not text. */
  readonly #asBytes: object;
  readonly #secrets: string[];
  readonly #fields: object;
  readonly #log: Logger;
  /** Settles at the first connection's first news: ready, or an error. */
  readonly #news: Promise<void>;
  #heard: () => void = () => {};
  /** Whether the last news was an error: the change is logged once each way. */
  #down = false;
  #closed = false;
  /** False from a command that ran past the bound until one is answered in time. */
  #answering = true;
  #pinging = false;

  private constructor(redis: Redis, client: Client, target: Target, log: Logger) {
    this.#client = client;
    this.#asBytes = { typeMapping: { [redis.RESP_TYPES.BLOB_STRING]: Buffer } };
    this.#secrets = target.secrets;
    this.#fields = { store: 'redis', redis: target.address };
    this.#log = log;
    this.#news = new Promise<void>((resolve) => (this.#heard = resolve));
  }

  /**
   * The connection to `url` (redis:// or rediss://), with node-redis found from `folder`. Throws
   * when node-redis is not installed or the URL is not a Redis URL; a Redis that cannot be reached
   * yet is no error: problem() says so until it connects.
   */
  static async open(url: string, folder: string, log: Logger): Promise<RedisConnection> {
    const target = targetOf(url);
    const redis = requireRedis(folder);
    const connection = new RedisConnection(redis, newClient(redis, url, target), target, log);
    connection.#connect(connection.#client);
    // Ready, refused, or still trying after the bound: the server starts either way.
    await bounded(connection.#news).catch(() => {});
    return connection;
  }

  /** Runs `work`, bounded; its rejection is one of the fixed messages, the client's error its cause. */
  async call<T>(work: () => Promise<T>): Promise<T> {
    if (this.#closed || !this.#client.isReady) throw new Error(UNREACHABLE);
    try {
      const value = await bounded(work());
      this.#answering = true;
      return value;
    } catch (err) {
      const message = (err as Error | undefined)?.message;
      // Connected but not answering (a hung Redis): readiness says so until it answers again.
      if (message === SLOW) this.#answering = false;
      if (message === STRAY) this.#outOfStep();
      if (message === SLOW || message === FOREIGN || message === STRAY) throw err;
      throw new Error(this.#client.isReady ? FAILED : UNREACHABLE, { cause: err });
    }
  }

  /** Sends a command on the current client (inside call()); `asBytes`: its reply's strings as Buffers. */
  send(command: Command, asBytes = false): Promise<unknown> {
    return asBytes ? this.#client.sendCommand(command, this.#asBytes) : this.#client.sendCommand(command);
  }

  /** Why the store cannot be used now: unreachable, or not answering. */
  problem(): string | undefined {
    if (this.#closed || !this.#client.isReady) return UNREACHABLE;
    if (this.#answering) return undefined;
    // Asked (by readiness) while Redis hangs: a PING finds out when it answers again.
    if (!this.#pinging) {
      this.#pinging = true;
      this.call(() => this.send(['PING'])).then(
        () => (this.#pinging = false),
        () => (this.#pinging = false),
      );
    }
    return SLOW;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Waits for the replies in flight, bounded; then the socket goes whatever happened.
    await bounded(Promise.resolve().then(() => this.#client.close())).catch(() => {});
    try {
      this.#client.destroy();
    } catch {
      // Already gone.
    }
  }

  #connect(made: Client): void {
    made.on('error', (err) => {
      this.#heard();
      if (this.#down || this.#closed || made !== this.#client) return;
      // Connected still: the error is the client's own news, not an outage.
      if (made.isReady) return this.#log.debug({ ...this.#fields, reason: reasonOf(err, this.#secrets) }, 'the idempotency store (redis) reported an error');
      this.#down = true;
      this.#log.warn({ ...this.#fields, reason: reasonOf(err, this.#secrets) }, `${UNREACHABLE}: reconnecting`);
    });
    made.on('ready', () => {
      this.#heard();
      if (this.#down) this.#log.info(this.#fields, 'the idempotency store (redis) is reachable again');
      this.#down = false;
    });
    // Failures are reported as 'error' and retried; this settles only when the store is closed.
    made.connect().catch(() => {});
  }

  // A reply of another shape than its command's: replies and commands are out of step on this
  // connection, and would stay so. It is dropped for a new one; what was in flight on it fails.
  #outOfStep(): void {
    if (this.#closed) return;
    const old = this.#client;
    this.#log.warn(this.#fields, `${STRAY}: connecting again`);
    this.#client = old.duplicate();
    this.#connect(this.#client);
    old.destroy();
  }
}
