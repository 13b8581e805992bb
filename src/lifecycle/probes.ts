// Liveness and readiness: the module's own check (bounded in time), then what the runtime knows
// itself: draining, and an event loop running late.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorJson, readThrown, runtimeError } from '../errors';
import { closeAfter } from '../http/connections';
import { isThenable, settleWithin } from './deadline';
import type { Runtime } from './lifecycle';
import type { Logger } from '../log/log';
import { JSON_TYPE, send, TEXT } from '../send';
import type { HealthCheck } from '../types';

export interface Probe {
  check?: HealthCheck;
  readiness: boolean;
}

export interface ProbeOptions {
  /** A check that has not answered after this many ms counts as failed. */
  probeTimeout: number;
  /** Readiness fails while the event loop runs later than this many ms; 0 is off. */
  maxEventLoopDelay: number;
  loopDelay?: () => number;
  /** Why the runtime cannot serve (its idempotency store is unreachable), or undefined. */
  notReady?: () => string | undefined;
}

/** Answers a probe: 200 with `OK` (or the check's own text), or 503 with a JSON body. */
export async function answerProbe(
  req: IncomingMessage,
  res: ServerResponse,
  target: Probe,
  runtime: Runtime,
  options: ProbeOptions,
  reqLog: Logger,
): Promise<void> {
  let healthy = true;
  let answer: unknown;
  if (target.check !== undefined) {
    try {
      const check = target.check();
      answer = isThenable(check) ? await settleWithin(check, options.probeTimeout, () => new Error('the check did not answer in time')) : check;
      healthy = answer !== false;
    } catch (err) {
      reqLog.warn(err, `${target.readiness ? 'readiness' : 'liveness'} check failed`);
      healthy = false;
    }
  }
  // Checked after the module's own check, which may have been in flight when draining began.
  if (runtime.draining) {
    if (target.readiness) healthy = false;
    closeAfter(req, res, true);
  }
  // Something the function's events need is missing: said in the answer, so that operators see why.
  let why: string | undefined;
  if (target.readiness && healthy && options.notReady !== undefined) {
    why = options.notReady();
    if (why !== undefined) {
      healthy = false;
      reqLog.warn({ reason: why }, 'not ready');
    }
  }
  // An event loop running late is a saturated instance: the platform should route elsewhere.
  if (target.readiness && healthy && options.maxEventLoopDelay > 0) {
    const delay = options.loopDelay!();
    if (delay > options.maxEventLoopDelay) {
      healthy = false;
      reqLog.warn({ eventLoopDelay: Math.round(delay) }, 'not ready: the event loop is running late');
    }
  }
  // A check may answer with its own text (faas-js-runtime sends what it returns).
  if (healthy) send(req, res, 200, { 'content-type': TEXT }, typeof answer === 'string' && answer !== '' ? answer : 'OK');
  else
    send(
      req,
      res,
      503,
      { 'content-type': JSON_TYPE },
      errorJson(readThrown(runtimeError('FUNCRUN_NOT_READY', 'not ready')), undefined, reqLog, {
        format: runtime.module.errorBody,
        withoutCodes: runtime.withoutCodes,
        said: why === undefined ? undefined : { reason: why },
      }),
    );
}
