// A server's life after start: the state its requests read (draining), its shutdown() run once,
// and stop(), the graceful drain.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isError, type Logger, type RootLogger } from '../log/log';
import { describeThrown, pathOf } from '../log/redact';
import type { Metrics } from '../telemetry/metrics';
import { closeQueued, destroyAll, requestAnswered } from '../http/connections';
import { abortInvocations } from '../context';
import { settleWithin } from './deadline';
import { SETTINGS } from '../start/settings';
import type { Function as FunctionModule } from '../types';
import type { InFlight } from './in-flight';

/** Idempotency's claims, as a stop and the fault handler see them (idempotency.ts). */
export interface Claims {
  /** The invocation of `req` crashed: its claim is released, at the latest when the process stops. */
  crashed(req: IncomingMessage): void;
  /** The process exits once the drain is over: what its functions still run then stops with it. */
  exiting(): void;
  /** Waits, within `limit` ms, for the outcomes still being written, then closes the store. Never rejects. */
  close(limit?: number): Promise<void>;
}

/** What a running server keeps beside the node:http server. */
export interface Runtime {
  readonly module: FunctionModule;
  readonly log: RootLogger;
  /** faas-js-runtime's error bodies, without funcrun's codes (compat.ts). */
  readonly withoutCodes: boolean;
  /** Set by stop(): readiness turns 503 and connections close after their answers. */
  draining: boolean;
  shutdown?: Promise<void>;
  metrics?: Metrics;
  /** Work functions handed to `context.waitUntil`, still running: stop() waits for it. */
  readonly background: Set<Promise<void>>;
  /** With idempotency on: the claims this process holds. */
  readonly claims: Claims | undefined;
  /** Requests not yet answered (by their response), with their reqId: those the grace period cuts are logged by it. */
  readonly inFlight: InFlight;
  /**
   * Runs a callback in the async context the server was made in: shutdown() must not run as part
   * of whichever invocation happened to close the last connection (its reqId, trace, span).
   */
  readonly outside: (run: () => unknown) => unknown;
  /** Where the probes answer, as decided at start (probe-paths.ts). */
  readonly probes: { readonly liveness: string; readonly readiness: string };
}

/**
 * Keeps `work` (a function's `context.waitUntil`) in flight until it settles: stop() waits for it
 * within the grace period, and its failure is logged with the invocation's logger, never an
 * unhandled rejection. Returns a promise that settles with it and never rejects.
 */
export function keepInFlight(runtime: Runtime | undefined, work: unknown, log: Logger): Promise<void> {
  const tracked = Promise.resolve(work).then(
    () => undefined,
    // Read with helpers that never throw: a rejection value may be a hostile Proxy.
    (err: unknown) => log.error(isError(err) ? err : { thrown: describeThrown(err) }, 'waitUntil: the work failed'),
  );
  // Without a server (a unit test's context) the work is only watched for failure.
  if (runtime === undefined) return tracked;
  runtime.background.add(tracked);
  void tracked.finally(() => runtime.background.delete(tracked));
  return tracked;
}

/**
 * A request has its answer (or is past one): no longer in flight, and no longer holding its
 * connection open. `early`: said by the fault handler, before the request's own last step.
 */
export function requestDone(runtime: Runtime, req: IncomingMessage, res: ServerResponse, early = false): void {
  runtime.inFlight.delete(res);
  requestAnswered(req, res, early);
}

/**
 * Resolves once no waitUntil work is left: work handed on by other work while it ran (a
 * waitUntil inside a waitUntil) is waited for too, not only what was running when asked.
 */
export async function backgroundSettled(runtime: Runtime): Promise<void> {
  while (runtime.background.size > 0) await Promise.all(runtime.background);
}

/** How a stop went: complete when every request was answered and all waitUntil work settled in time. */
export interface Drain {
  complete: boolean;
  /** Requests still unanswered at the end of the grace period, whose connections were cut. */
  cut: number;
  /** waitUntil work still running at the end of the grace period (left to run). */
  unfinished: number;
}

// The background work still running, awaited for at most `limit` ms; past that it is left to run
// and the drain goes on. Resolves with how much was left.
async function backgroundDone(runtime: Runtime, limit: number): Promise<number> {
  if (runtime.background.size === 0) return 0;
  const left = await settleWithin(backgroundSettled(runtime), limit, () => undefined).then(
    () => 0,
    () => runtime.background.size,
  );
  if (left > 0) runtime.log.warn({ running: left }, 'waitUntil work still running after the grace period');
  return left;
}

// The end of the grace period: each request still unanswered is logged and its invocations'
// signals aborted (now, not at its socket's 'close': the process may exit before that), then every
// socket destroyed; answers a slow reader had not read whole are cut with them, and counted.
function cutConnections(server: Server, runtime: Runtime): number {
  const cut = runtime.inFlight.size;
  for (const [res, reqId] of runtime.inFlight) {
    const { req } = res;
    runtime.log
      .forRequest(reqId)
      .error({ method: req.method, path: pathOf(req.url) }, 'request cut at the end of the grace period: its connection is closed unanswered');
    abortInvocations(res, new Error('the request was cut at the end of the grace period'));
  }
  const unwritten = destroyAll(server);
  if (unwritten > 0) runtime.log.error({ connections: unwritten }, 'answers cut at the end of the grace period: their clients had not read them whole');
  return cut + unwritten;
}

const runtimes = new WeakMap<Server, Runtime>();

export function register(server: Server, runtime: Runtime): void {
  runtimes.set(server, runtime);
}

/** Where the server's probes answer (funcrun/testing tells a function's tests). */
export function probesOf(server: Server): Runtime['probes'] | undefined {
  return runtimes.get(server)?.probes;
}

/** The process exits once the server is drained (serve.ts): what its functions still run then stops with it. */
export function exitAfterDrain(server: Server): void {
  runtimes.get(server)?.claims?.exiting();
}

/** The logger a server made by start() writes with. */
export function loggerOf(server: Server): RootLogger {
  const runtime = runtimes.get(server);
  if (runtime === undefined) throw new TypeError('loggerOf() takes a server made by start()');
  return runtime.log;
}

// The module's shutdown() runs once, when the server has closed, however it was closed; its
// failure is logged here, once, and rejects.
export function runShutdown(runtime: Runtime): Promise<void> {
  return (runtime.shutdown ??= (async () => {
    try {
      await runtime.outside(() => runtime.module.shutdown?.());
    } catch (err) {
      runtime.log.error(err, 'shutdown() failed');
      throw err;
    }
  })());
}

/**
 * Stops gracefully: readiness turns 503, no new connections are accepted, requests in flight
 * finish (keep-alive connections close after their current response, and as soon as they go
 * idle), then work handed to `context.waitUntil`, then the idempotency store takes the outcomes
 * still being written, and after that the module's `shutdown()` runs. Past `gracePeriod` ms the remaining connections are cut, each unanswered
 * request logged; `shutdown()` then has `gracePeriod` ms of its own. Resolves when `shutdown()`
 * has finished, with how complete the drain was; rejects with its error, or when it does not
 * finish in time.
 */
export function stop(server: Server, gracePeriod: number = SETTINGS.gracePeriod.default): Promise<Drain> {
  const runtime = runtimes.get(server);
  if (runtime === undefined) throw new TypeError('stop() takes a server made by start()');
  runtime.draining = true;
  // An answer made before, waiting to be sent, that is its connection's last says so too.
  closeQueued(server);
  const deadline = Date.now() + gracePeriod;
  // The answers given meanwhile are written to the idempotency store before shutdown() runs.
  const drained = async (cut: number, unfinished: number): Promise<Drain> => {
    await runtime.claims?.close(Math.max(0, deadline - Date.now()));
    await bounded(runShutdown(runtime), gracePeriod, runtime.log);
    return { complete: cut + unfinished === 0, cut, unfinished };
  };
  if (!server.listening) return backgroundDone(runtime, gracePeriod).then((unfinished) => drained(0, unfinished));
  let cutCount = 0;
  const cut = setTimeout(() => (cutCount = cutConnections(server, runtime)), gracePeriod);
  // A response that was already streaming when the drain began could not say `connection: close`:
  // its connection is closed when it goes idle, rather than kept for the keep-alive timeout.
  const sweep = setInterval(() => server.closeIdleConnections(), 50);
  cut.unref();
  sweep.unref();
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  }).then(async () => {
    clearTimeout(cut);
    clearInterval(sweep);
    // Work the functions go on with after answering is in flight too, within the same grace period.
    return drained(cutCount, await backgroundDone(runtime, deadline - Date.now()));
  });
}

// shutdown() may never settle; the process must still be able to exit.
function bounded(shutdown: Promise<void>, limit: number, log: RootLogger): Promise<void> {
  // The timer keeps the process: a shutdown() that holds nothing must still end in this error and exit code 1.
  return settleWithin(shutdown, limit, () => {
    const error = new Error(`shutdown() did not finish within ${limit} ms`);
    log.error(error.message);
    return error;
  });
}
