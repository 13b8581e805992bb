// Step 7 of a request (request.ts): its CloudEvents checked against the module's contracts, and
// with idempotency a duplicate answered as the first delivery was. Synchronous unless a validator
// or the store answers with a promise.
import type { CloudEvent } from 'cloudevents';
import { closeAfter } from '../http/connections';
import { allowAnyOrigin } from '../http/cors';
import { isThenable } from '../lifecycle/deadline';
import { replay, type Admission } from './idempotency/idempotency';
import { beforeDeadline } from '../invocation';
import { withEvents, type Input } from '../input';
import { eventIdentity } from '../cloudevents/outcomes';
import { replyMode } from '../cloudevents/cloudevent';
import type { Exchange, Pipeline } from '../exchange';

type Events = CloudEvent<unknown> | CloudEvent<unknown>[];

/**
 * The Input the function is called with (its events as their contracts gave them), or undefined
 * when a duplicate was answered here, from the store; throws the answer to an event refused.
 * A promise only when a validator or the store answers with one.
 */
export function admitEvents(p: Pipeline, x: Exchange, input: Input): Input | undefined | Promise<Input | undefined> {
  const delivered = input.events;
  if (delivered === undefined) return input;
  if (p.contracts === undefined) return admitOnce(p, x, input, delivered);
  let checked;
  try {
    checked = p.contracts.check(delivered);
  } catch (err) {
    throw refused(p, x, delivered, err);
  }
  if (!isThenable(checked)) return admitOnce(p, x, input, delivered, checked);
  // A validator that answers later answers within the request's timeout, as the function does.
  return beforeDeadline(checked, p.settings.timeout, x.deadline, 'the event contract', 'FUNCRUN_TIMEOUT').then(
    (events) => admitOnce(p, x, input, delivered, events),
    (err: unknown) => {
      throw refused(p, x, delivered, err);
    },
  );
}

/**
 * With idempotency, a duplicate answered as the first delivery was. `delivered`: the events as they
 * arrived (what a duplicate is compared by); `checked`: as their contracts gave them.
 */
function admitOnce(p: Pipeline, x: Exchange, input: Input, delivered: Events, checked = delivered): Input | undefined | Promise<Input | undefined> {
  // A validator that gave back other data gave other events (contracts.ts keeps them otherwise).
  const admitted = checked === delivered ? input : withEvents(input, checked);
  if (p.idempotency === undefined) return admitted;
  const admission = p.idempotency.admit(checked, delivered, x.log, x.req);
  return isThenable(admission) ? admission.then((answer) => afterAdmission(p, x, admitted, answer)) : afterAdmission(p, x, admitted, admission);
}

function afterAdmission(p: Pipeline, x: Exchange, input: Input, admission: Admission): Input | undefined {
  if (admission.settle !== undefined) {
    x.settleClaim = admission.settle;
    return input;
  }
  closeAfter(x.req, x.res, p.runtime.draining);
  // A replay is the function's answer again: with faas-js-runtime's blanket CORS, as the first was.
  if (p.corsForEveryOrigin) allowAnyOrigin(x.res);
  // Its event in the mode this request is answered in, as a fresh answer would be.
  replay(x.req, x.res, admission.replay, { mode: replyMode(input.mode, p.behaviour.eventsAnsweredBinary), asSdk: p.behaviour.eventsWrittenAsSdk });
  return undefined;
}

// An event refused by its contract: counted, and logged with the event's identity. Returns the error.
function refused(p: Pipeline, x: Exchange, events: Events, err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'FUNCRUN_INVALID_EVENT_DATA' && code !== 'FUNCRUN_UNDECLARED_EVENT_TYPE') return err;
  p.metrics?.event(code === 'FUNCRUN_INVALID_EVENT_DATA' ? 'invalid' : 'undeclared');
  const index = ((err as { details?: { index?: number } }).details?.index ?? 0) as number;
  const event = Array.isArray(events) ? events[index] : events;
  x.log.info({ event: eventIdentity(event), code }, 'event refused by its contract');
  return err;
}
