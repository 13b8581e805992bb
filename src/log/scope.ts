// Which invocation the running code belongs to, wherever it runs (a helper module, a timer, a
// promise chain): an AsyncLocalStorage entered once per invocation, holding a small record of it.
// It gives `log`, the logger that writes with the current invocation's reqId and trace, and tells
// the entry point which request a stray exception belongs to.
//
// Whatever an invocation starts (a timer, an AbortSignal.timeout, a pooled socket, a promise)
// keeps the record for as long as it lives. So the record links the context, and through it the
// request and its body, only until the invocation ends (its answer sent, its waitUntil work
// settled); from then on what is still running writes lines that say it outlived its request,
// without that request's reqId or its client's trace.
//
// Where AsyncLocalStorage is built on AsyncContextFrame (Node 24; Node 22 with
// --experimental-async-context-frame), entering it costs next to nothing and it is always on.
// Node 22's own is built on promise hooks, which slow every promise of the process (about 18% of a
// small function's throughput, measured): there it is turned on only when a function reaches for
// `log` or `eventResponse` (see withScopingOnUse), and faults are then attributed too.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createLogger, snapshot, type ChildOptions, type Logger, type LogLevel, type RootLogger } from './log';
import type { Invocation } from '../context';

// The promise-hook implementation has `_enable`; AsyncContextFrame's has not.
const CHEAP = !('_enable' in AsyncLocalStorage.prototype);

/** What an invocation's scope holds. */
export class InvocationRecord {
  /** The invocation's context while it runs; undefined once it has ended. */
  #context: Invocation | undefined;
  #log: Logger;
  // Made only when something logs after the invocation ended: most invocations never need it.
  #outlived: Logger | undefined = undefined;
  // waitUntil work still running: the invocation has not ended until it settles.
  #waiting = 0;
  #answered = false;

  constructor(
    context: Invocation,
    log: Logger,
    private readonly reqId: number,
    private readonly root: RootLogger | undefined,
  ) {
    this.#context = context;
    this.#log = log;
  }

  get context(): Invocation | undefined {
    return this.#context;
  }

  /** The invocation's logger; once it has ended, one whose lines say they outlived it. */
  get log(): Logger {
    if (this.#context !== undefined) return this.#log;
    return (this.#outlived ??= (this.root ?? scoping.processLog).child({ outlivedRequest: this.reqId }));
  }

  /** The invocation has answered; it ends once its waitUntil work has settled too. */
  answered(): void {
    this.#answered = true;
    if (this.#waiting === 0) this.#end();
  }

  /** waitUntil work: the invocation lasts until `work` settles. */
  holdUntil(work: Promise<unknown>): void {
    this.#waiting++;
    void work.finally(() => {
      if (--this.#waiting === 0 && this.#answered) this.#end();
    });
  }

  #end(): void {
    this.#context = undefined;
  }
}

/**
 * What scoping reads, which is the process's: the public `log` (`import { log } from 'funcrun'`)
 * is one per process, and so are the storage invocations run in and the logger it writes with
 * outside any invocation. Made once, below, and handed to every ScopedLogger.
 */
class Scoping {
  /** The storage invocations run in, or undefined while scoping is off (see above). */
  storage: AsyncLocalStorage<InvocationRecord> | undefined = CHEAP ? new AsyncLocalStorage() : undefined;
  // Outside an invocation: the logger of the server started last, else one of its own at info.
  #processLog: Logger | undefined;

  /** Turns scoping on, for the invocations that start from now on. */
  turnOn(): void {
    this.storage ??= new AsyncLocalStorage();
  }

  set processLog(log: Logger) {
    this.#processLog = log;
  }

  get processLog(): Logger {
    return (this.#processLog ??= createLogger('info'));
  }

  /** The current invocation's logger, else the process's. */
  current(): Logger {
    return this.storage?.getStore()?.log ?? this.processLog;
  }
}

const scoping = new Scoping();

/** The storage invocations run in, or undefined while scoping is off (see above). */
export function invocationScope(): AsyncLocalStorage<InvocationRecord> | undefined {
  return scoping.storage;
}

/**
 * Calls `fn(...args)` in the scope of the invocation whose record is `record`. Where the scope is
 * built on AsyncContextFrame, it is entered and not left: node's run() would make a second frame
 * to leave it (some 900 instructions). Node sets the frame back itself when the task that called
 * returns: the callback that carried the request (each request, pipelined ones too, is dispatched
 * in a callback of its own), a microtask, a timer, a tick. What runs after `fn` in that task is
 * the request's own answer, which belongs to the invocation.
 */
export function inScope<A extends unknown[], R>(scope: AsyncLocalStorage<InvocationRecord>, record: InvocationRecord, fn: (...args: A) => R, ...args: A): R {
  if (!CHEAP) return scope.run(record, fn, ...args);
  scope.enterWith(record);
  return fn(...args);
}

/** Turns scoping on, for the invocations that start from now on. */
export function useScope(): void {
  scoping.turnOn();
}

/**
 * The public entry as the bundle hands it out (scripts/bundle.js): index.ts's exports, but
 * reaching for `log` (`require('funcrun').log`, or an ESM import of funcrun, which reads every
 * name) turns scoping on; so does reaching for `eventResponse`, which reads the invocation it is
 * called in (its trace).
 */
export function withScopingOnUse<T extends object>(entry: T): T {
  const { eventResponse } = entry as { eventResponse?: unknown };
  return Object.defineProperties({} as T, {
    ...Object.getOwnPropertyDescriptors(entry),
    log: {
      enumerable: true,
      get() {
        useScope();
        return log;
      },
    },
    eventResponse: {
      enumerable: true,
      get() {
        useScope();
        return eventResponse;
      },
    },
  });
}

/** The record of the invocation the calling code runs in, or that started it, if any (and scoping is on). */
export function currentInvocation(): InvocationRecord | undefined {
  return scoping.storage?.getStore();
}

/** Called by start(): outside any invocation, `log` writes with this server's logger. */
export function setProcessLogger(log: Logger): void {
  scoping.processLog = log;
}

// More arguments than any message has placeholders for.
const MAX_ARGS = 1024;

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/**
 * A logger that resolves, at each call, to the current invocation's logger (so its lines carry
 * that invocation's reqId and trace fields), or outside any invocation to the process's logger.
 * A child keeps its bindings and resolves the same way, made once per invocation it writes in.
 */
class ScopedLogger implements Logger {
  // Children of each invocation's logger, made on first use there and dropped with it.
  readonly #children = new WeakMap<Logger, Logger>();

  readonly #scoping: Scoping;

  constructor(
    scoping: Scoping,
    private readonly bindings?: Record<string, unknown>,
    private readonly options?: ChildOptions,
  ) {
    this.#scoping = scoping;
  }

  #target(): Logger {
    const base = this.#scoping.current();
    if (this.bindings === undefined) return base;
    let child = this.#children.get(base);
    if (child === undefined) this.#children.set(base, (child = base.child(this.bindings, this.options)));
    return child;
  }

  #write(level: Level, args: unknown[]): void {
    const target = this.#target();
    // Logging never throws, as the loggers it resolves to.
    // At most MAX_ARGS: spreading tens of thousands of arguments again would overflow the stack.
    (target[level] as (...a: unknown[]) => void).apply(target, args.length > MAX_ARGS ? args.slice(0, MAX_ARGS) : args);
  }

  // Own functions bound to this logger, not prototype methods: `const { info } = log` and
  // `items.forEach(log.info)` call them without `this`, and logging never throws.
  readonly trace = (...args: unknown[]): void => this.#write('trace', args);
  readonly debug = (...args: unknown[]): void => this.#write('debug', args);
  readonly info = (...args: unknown[]): void => this.#write('info', args);
  readonly warn = (...args: unknown[]): void => this.#write('warn', args);
  readonly error = (...args: unknown[]): void => this.#write('error', args);
  readonly fatal = (...args: unknown[]): void => this.#write('fatal', args);

  get level(): LogLevel {
    return this.#target().level;
  }

  readonly isLevelEnabled = (level: string): boolean => this.#target().isLevelEnabled(level);

  readonly child = (bindings: Record<string, unknown>, options?: ChildOptions): Logger => {
    // Bindings are read and serialised now, as any logger's child reads them.
    const own = { ...this.bindings, ...snapshot(bindings) };
    this.#scoping.turnOn();
    return new ScopedLogger(this.#scoping, own, options ?? this.options);
  };
}

/**
 * The request-scoped logger: `import { log } from 'funcrun'`. In an invocation (and anything it
 * started: timers, promises, helper modules) its lines carry that invocation's reqId and trace
 * fields; elsewhere it is the process's logger.
 */
export const log: Logger = new ScopedLogger(scoping);
