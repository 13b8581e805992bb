// Mistakes in event contracts and their handlers that the exported types must refuse. Every line
// marked `error TSnnnn` must fail to compile with that code, and no other line may fail: the
// correct forms are in event-contracts.ts.
import { defineEvents } from 'funcrun';
import type { EventHandler, Function, StandardSchemaV1 } from 'funcrun';
import { CloudEvent, createContext, createEventContext } from 'funcrun/testing';

declare const timestamp: StandardSchemaV1<string, Date>;

export const events = defineEvents({
  types: {
    'com.example.order.created': {
      type: 'object',
      properties: { id: { type: 'string' }, total: { type: 'number' }, discount: { type: 'number' } },
      required: ['id', 'total'],
    },
    'com.example.order.shipped': { type: 'object', properties: { carrier: { type: 'string' } }, required: ['carrier'], additionalProperties: false },
    'com.example.order.cancelled': timestamp,
  },
});

export const handle: EventHandler<typeof events> = (context) => {
  const event = context.cloudevent;
  switch (event.type) {
    case 'com.example.order.created': {
      // 1. A number field taken for text.
      const id: string = event.data.total; // error TS2322
      // 2. A field the schema does not require, used as if it were there.
      const discount = event.data.discount.toFixed(2); // error TS18048
      // 3. Another type's field: this one admits any extra key, of unknown type.
      const carrier = event.data.carrier.trim(); // error TS18046
      return { id, discount, carrier };
    }
    case 'com.example.order.shipped':
      // 4. Another type's field, where the schema admits no extra keys.
      return { total: event.data.total }; // error TS2339
    case 'com.example.order.cancelled': {
      // 5. The Standard Schema's input type (text), where the handler gets its output (a Date).
      const at: string = event.data; // error TS2322
      return { at };
    }
    // 6. A type the module does not declare: without `passthrough` no such event arrives.
    case 'com.example.order.refunded': // error TS2678
      return null;
  }
};

// 7. A key the declaration does not know.
export const misspelt = defineEvents({ types: {}, passThrough: true }); // error TS2322

// 8. A validating function is neither a JSON Schema nor a Standard Schema.
export const predicate = defineEvents({ types: { 'com.example.ping': (data: unknown) => typeof data === 'object' } }); // error TS2322

// 9. An idempotency key that is not text.
export const numericKey = defineEvents({ idempotency: { key: (event) => event.time?.length } }); // error TS2322

// 10. An event handler as a route: routes get no event contracts, so its events would be untyped.
export const routed: Function = { routes: { 'POST /orders': handle }, events }; // error TS2322

// 11. A unit test's context for a type the module does not declare.
export const undeclared = createEventContext(events, 'com.example.order.refunded', { id: 'o-1' }); // error TS2345

// 12. A unit test's context with data of another shape than the type's.
export const wrongData = createEventContext(events, 'com.example.order.created', { id: 7, total: 12.5 }); // error TS2322

// 13. A unit test's context for a Standard Schema's type with its input (text), not its output.
export const inputData = createEventContext(events, 'com.example.order.cancelled', '2026-01-01'); // error TS2345

// 14. A context of createContext, whose event may be absent and of any type, given to an event handler.
const shippedEvent = new CloudEvent({ source: '/test', type: 'com.example.order.shipped', data: { carrier: 'post' } });
export const untyped = handle(createContext({ method: 'POST', cloudevent: shippedEvent }), shippedEvent.data); // error TS2345
