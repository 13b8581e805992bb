// An ES module (its package.json says "type": "module").
import { CloudEvent } from 'cloudevents';

export function init() {}

export async function handle(context, body) {
  if (context.cloudevent) {
    return new CloudEvent({ source: '/parity/esm', type: 'parity.esm', data: { got: body.data ?? null } });
  }
  return { esm: true, received: body ?? null };
}
