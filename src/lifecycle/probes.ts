// Liveness and readiness: the module's own check (bounded in time), then what the runtime knows
// itself: draining, and an event loop running late.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorJson, readThrown, runtimeError } from '../errors';
import { closeAfter } from '../http/connections';
import { isThenable, settleWithin } from './deadline';
import type { Runtime } from './lifecycle';
import type { Logger } from '../log/log';
import { BINARY, JSON_TYPE, send, TEXT } from '../send';
import type { HealthCheck } from '../types';
import { probeRequest, ProbeReply } from './probe-reply';

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

/** What a check answered: healthy or not, and the answer it gave (a status, headers, a body), if any. */
interface CheckAnswer {
  healthy: boolean;
  status: number;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
  /** It answered with a status of its own (through the reply): sent as it is, failing or not. */
  own: boolean;
}

/** Answers a probe: 200 with `OK` (or the check's own answer), or 503 with a JSON body. */
export async function answerProbe(
  req: IncomingMessage,
  res: ServerResponse,
  target: Probe,
  runtime: Runtime,
  options: ProbeOptions,
  reqLog: Logger,
): Promise<void> {
  const checked = target.check === undefined ? OK : await runCheck(req, target, options, reqLog);
  let healthy = checked.healthy;
  // Checked after the module's own check, which may have been in flight when draining began.
  let runtimeSays = false;
  if (runtime.draining) {
    if (target.readiness) runtimeSays = true;
    closeAfter(req, res, true);
  }
  // Something the function's events need is missing: said in the answer, so that operators see why.
  let why: string | undefined;
  if (target.readiness && !runtimeSays && options.notReady !== undefined) {
    why = options.notReady();
    if (why !== undefined) {
      runtimeSays = true;
      reqLog.warn({ reason: why }, 'not ready');
    }
  }
  // An event loop running late is a saturated instance: the platform should route elsewhere.
  if (target.readiness && !runtimeSays && options.maxEventLoopDelay > 0) {
    const delay = options.loopDelay!();
    if (delay > options.maxEventLoopDelay) {
      runtimeSays = true;
      reqLog.warn({ eventLoopDelay: Math.round(delay) }, 'not ready: the event loop is running late');
    }
  }
  if (runtimeSays) healthy = false;
  // The check's own answer, failing or not, where it gave a status of its own (faas-js-runtime sends it as it is).
  if (!runtimeSays && (healthy || checked.own)) return send(req, res, checked.status, checked.headers, checked.body);
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

const OK: CheckAnswer = Object.freeze({ healthy: true, status: 200, headers: Object.freeze({ 'content-type': TEXT }), body: 'OK', own: false });

/**
 * The module's check, within the probe timeout: `false`, a throw or a rejection fails it; a
 * returned string is the answer's text, any other value (not `false`) JSON. One that answered
 * through its reply (a fastify handler written for faas-js-runtime) is answered so: its status
 * (a failure from 400 up), its headers and what it sent.
 */
async function runCheck(req: IncomingMessage, target: Probe, options: ProbeOptions, reqLog: Logger): Promise<CheckAnswer> {
  const reply = new ProbeReply();
  let answer: unknown;
  try {
    const check = target.check!(probeRequest(req), reply);
    answer = isThenable(check) ? await settleWithin(check, options.probeTimeout, () => new Error('the check did not answer in time')) : check;
  } catch (err) {
    reqLog.warn(err, `${target.readiness ? 'readiness' : 'liveness'} check failed`);
    return { ...OK, healthy: false };
  }
  const status = reply.statusCode;
  const own = status !== 200;
  if (own && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
    reqLog.warn({ statusCode: String(status) }, `${target.readiness ? 'readiness' : 'liveness'} check failed: no such status`);
    return { ...OK, healthy: false };
  }
  const healthy = status < 400 && (reply.sent || answer !== false);
  const given = reply.sent ? reply.payload : answer === reply ? undefined : answer;
  const headers: Record<string, string> = { ...reply.sentHeaders };
  let body: string | Buffer | undefined;
  if (typeof given === 'string') body = given !== '' || reply.sent ? given : 'OK';
  else if (Buffer.isBuffer(given)) {
    body = given;
    headers['content-type'] ??= BINARY;
  } else if (given === undefined || (given === false && !reply.sent) || given === true) body = reply.sent ? undefined : 'OK';
  else {
    body = JSON.stringify(given) ?? undefined;
    headers['content-type'] ??= JSON_TYPE;
  }
  headers['content-type'] ??= TEXT;
  return { healthy, status, headers, body, own };
}
