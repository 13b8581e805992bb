// An ES module (its package.json says "type": "module") answering events with events of each
// kind of data: text, none, bytes, JSON.
import { CloudEvent } from 'cloudevents';

export function init() {}

export async function handle(context, body) {
  if (context.cloudevent) {
    const { type, data } = body;
    const source = '/parity/esm';
    if (type === 'parity.text') return new CloudEvent({ source, type: 'parity.esm.text', data: `got ${data}` });
    if (type === 'parity.nothing') return new CloudEvent({ source, type: 'parity.esm.nothing' });
    if (data instanceof Uint8Array) return new CloudEvent({ source, type: 'parity.esm.bytes', data });
    return new CloudEvent({ source, type: 'parity.esm', data: { got: data ?? null } });
  }
  return { esm: true, received: body ?? null };
}
