// Step 7 of a request (request.ts): its CloudEvents checked against the module's contracts, and
// with idempotency a duplicate answered as the first delivery was. Synchronous unless a validator
// or the store answers with a promise.
import type { CloudEvent } from 'cloudevents';
import { closeAfter } from '../http/connections';
import { allowAnyOrigin } from '../http/cors';
import { isThenable } from '../lifecycle/deadline';
import { replay, type Admission } from './idempotency/idempotency';
import { beforeDeadline } from '../invocation';
import { eventIdentity } from '../cloudevents/outcomes';
import type { Exchange, Pipeline } from '../request';

/**
 * True when the events were answered here, from the store; throws the answer to an event refused.
 * A promise only when a validator or the store answers with one.
 */
export function admitEvents(p: Pipeline, x: Exchange): boolean | Promise<boolean> {
  const delivered = x.events!;
  if (p.contracts === undefined) return admitOnce(p, x, delivered);
  let checked;
  try {
    checked = p.contracts.check(x.events!);
  } catch (err) {
    throw refused(p, x, err);
  }
  if (!isThenable(checked)) return admitOnce(p, x, delivered, checked);
  // A validator that answers later answers within the request's timeout, as the function does.
  const timeout = p.settings.timeout;
  return beforeDeadline(checked, timeout, x.started + timeout, 'the event contract', 'FUNCRUN_TIMEOUT').then(
    (events) => admitOnce(p, x, delivered, events),
    (err: unknown) => {
      throw refused(p, x, err);
    },
  );
}

/**
 * With idempotency, a duplicate answered as the first delivery was. `delivered`: the events as they
 * arrived (what a duplicate is compared by); `checked`: as their contracts gave them.
 */
function admitOnce(
  p: Pipeline,
  x: Exchange,
  delivered: CloudEvent<unknown> | CloudEvent<unknown>[],
  checked?: CloudEvent<unknown> | CloudEvent<unknown>[],
): boolean | Promise<boolean> {
  // A validator that gave back other data gave other events (contracts.ts keeps them otherwise).
  if (checked !== undefined && checked !== x.events) {
    x.events = checked;
    // A validator's output is request data like the body it came from (provenance.ts).
    x.input = { ...x.input, events: checked, data: Array.isArray(checked) ? checked.map((e) => e.data) : checked.data };
  }
  if (p.idempotency === undefined) return false;
  const admitted = p.idempotency.admit(x.events!, delivered, x.log, x.req);
  return isThenable(admitted) ? admitted.then((admission) => afterAdmission(p, x, admission)) : afterAdmission(p, x, admitted);
}

function afterAdmission(p: Pipeline, x: Exchange, admission: Admission): boolean {
  if (admission.settle !== undefined) {
    x.settleClaim = admission.settle;
    return false;
  }
  closeAfter(x.req, x.res, p.runtime.draining);
  // A replay is the function's answer again: with faas-js-runtime's blanket CORS, as the first was.
  if (p.corsForEveryOrigin) allowAnyOrigin(x.res);
  replay(x.req, x.res, admission.replay);
  return true;
}

// An event refused by its contract: counted, and logged with the event's identity. Returns the error.
function refused(p: Pipeline, x: Exchange, err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'FUNCRUN_INVALID_EVENT_DATA' && code !== 'FUNCRUN_UNDECLARED_EVENT_TYPE') return err;
  p.metrics?.event(code === 'FUNCRUN_INVALID_EVENT_DATA' ? 'invalid' : 'undeclared');
  const events = x.events!;
  const index = ((err as { details?: { index?: number } }).details?.index ?? 0) as number;
  const event = Array.isArray(events) ? events[index] : events;
  x.log.info({ event: eventIdentity(event), code }, 'event refused by its contract');
  return err;
}
