// Faults: an exception nothing caught, or a rejection nothing handled. The entry point
// (serve.ts) owns the process's handlers and hands each fault here. Raised inside an invocation
// (scope.ts tells which), it is logged with that invocation's reqId and trace, and its request,
// if still open, is answered 500; raised by work that outlived its invocation, it says so. The
// entry point then drains the rest and exits 1. One exception is no fault: a write into a web
// stream that is closed (isClosedStreamWrite()).
import { quietly, runtimeError, sendError } from '../errors';
import { describeThrown } from '../log/redact';
import { invocationParts } from '../context';
import { closeAfter } from '../http/connections';
import { isError, type Logger } from '../log/log';
import { currentInvocation, type InvocationRecord } from '../log/scope';
import { requestDone } from './lifecycle';

/**
 * Logs a fault fatal where it belongs and answers its request; true when the process is to stop
 * for it. Never throws.
 */
export function reportFault(err: unknown, origin: string, processLog: Logger): boolean {
  const what = origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception';
  // A thrown Proxy may throw even when asked what it is: isError and describeThrown never do.
  const logged = isError(err) ? err : { thrown: describeThrown(err) };
  try {
    const invocation = currentInvocation();
    if (isClosedStreamWrite(err)) {
      (invocation?.log ?? processLog).warn(logged, CLOSED_STREAM_WRITE);
      return false;
    }
    report(what, logged, invocation, processLog);
  } catch {
    quietly(() => processLog.fatal(logged, what));
  }
  return true;
}

const CLOSED_STREAM_WRITE =
  'the function wrote to a response body stream that was closed (funcrun cancels one when the client leaves or the timeout passes): nothing more is sent';

/**
 * A web ReadableStream's controller refusing a chunk (or a close) because the stream is closed:
 * what a function's `enqueue()` throws once funcrun has cancelled its response body, as the
 * Streams standard has it, when the client left or the timeout passed (a producer on a timer that
 * has no `cancel()`, or ignores it). Nothing is left in a bad state: the stream refused the write,
 * and nobody reads it any more. So the process goes on, with a warning.
 */
function isClosedStreamWrite(err: unknown): boolean {
  try {
    return (
      err instanceof TypeError &&
      (err as { code?: unknown }).code === 'ERR_INVALID_STATE' &&
      (err.message === 'Invalid state: Controller is already closed' || err.message === 'Invalid state: ReadableStream is already closed')
    );
  } catch {
    return false;
  }
}

/** A fault, logged fatal with the invocation it was raised in, whose request is answered 500 if still open. */
function report(what: string, logged: object, invocation: InvocationRecord | undefined, processLog: Logger): void {
  if (invocation === undefined) return processLog.fatal(logged, what);
  const ctx = invocation.context;
  // Work an invocation started that outlived it: not blamed on a request long answered.
  if (ctx === undefined) return invocation.log.fatal(logged, `${what} in work that outlived its request`);
  const { req, res, log, runtime } = invocationParts(ctx);
  log.fatal(logged, `${what} in this invocation`);
  // Answered already (or after the answer, in its waitUntil work): nothing more to say to it.
  if (res === undefined || res.writableEnded) return;
  // The process stops after the drain: the answer to its connection's latest request says so.
  closeAfter(req, res, true);
  // A 500 whatever the thrown value says of itself: the function crashed, it did not answer.
  sendError(req, res, runtimeError('FUNCRUN_FUNCTION_CRASHED', `the function crashed: ${what}`), log, {
    format: runtime?.module.errorBody,
    withoutCodes: runtime?.withoutCodes,
  });
  // Answered: the drain need not wait for the crashed function, which may never return. Its
  // event's claim goes once it stops, or with the process (a 5xx lets the next delivery run).
  if (runtime !== undefined) {
    requestDone(runtime, req, res, true);
    runtime.claims?.crashed(req);
  }
}
