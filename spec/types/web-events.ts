// CloudEvents in a fetch handler, typed: readEvent() and readEvents() take a WHATWG Request and
// give the SDK's CloudEvent; eventResponse() takes an event or its attributes and gives a Response.
import { CloudEvent } from 'cloudevents';
import { eventResponse, readEvent, readEvents, type EventAttributes, type EventResponseInit } from 'funcrun';

export const handler = {
  async fetch(request: Request): Promise<Response> {
    const event: CloudEvent<unknown> = await readEvent(request);
    const events: CloudEvent<unknown>[] = await readEvents(request);
    const id: string = event.id;
    const attributes: EventAttributes = { type: 'com.example.done', source: '/orders', subject: id, tenant: 'acme', count: events.length, data: { ok: true } };
    const init: EventResponseInit = { mode: 'structured', status: 202, headers: { 'x-request': id } };
    const answers: Response[] = [
      eventResponse(attributes, init),
      eventResponse(event),
      eventResponse(new CloudEvent({ type: 't', source: '/s', data: 'text' }), { mode: 'binary', headers: new Headers() }),
      eventResponse({ type: 't', source: '/s', data: new Uint8Array([1]) }, { headers: [['x-a', '1']] }),
    ];
    return answers[0];
  },
};
