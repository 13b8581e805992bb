// Faults: an exception nothing caught, or a rejection nothing handled. The entry point
// (serve.ts) owns the process's handlers and hands each fault here. Raised inside an invocation
// (scope.ts tells which), it is logged with that invocation's reqId and trace, and its request,
// if still open, is answered 500; raised by work that outlived its invocation, it says so. The
// entry point then drains the rest and exits 1.
import { describeThrown, quietly, runtimeError, sendError } from '../errors';
import { invocationParts } from '../context';
import { isError, type Logger } from '../log/log';
import { currentInvocation } from '../log/scope';
import { requestDone } from './lifecycle';

/** Logs a fault fatal where it belongs and answers its request. Never throws. */
export function reportFault(err: unknown, origin: string, processLog: Logger): void {
  const what = origin === 'unhandledRejection' ? 'unhandled rejection' : 'uncaught exception';
  // A thrown Proxy may throw even when asked what it is: isError and describeThrown never do.
  const logged = isError(err) ? err : { thrown: describeThrown(err) };
  try {
    const invocation = currentInvocation();
    if (invocation === undefined) return processLog.fatal(logged, what);
    const ctx = invocation.context;
    // Work an invocation started that outlived it: not blamed on a request long answered.
    if (ctx === undefined) return invocation.log.fatal(logged, `${what} in work that outlived its request`);
    const { req, res, log, runtime } = invocationParts(ctx);
    log.fatal(logged, `${what} in this invocation`);
    // Answered already (or after the answer, in its waitUntil work): nothing more to say to it.
    if (res === undefined || res.writableEnded) return;
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
  } catch {
    quietly(() => processLog.fatal(logged, what));
  }
}
