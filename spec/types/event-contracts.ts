// Event contracts: a module declares per CloudEvent type the schema of the event's data, a JSON
// Schema or a Standard Schema, and its handler gets each event typed by its `type`. All of it must
// compile; the mistakes the same types refuse are in wrong-event-contracts.ts.
import { defineEvents } from 'funcrun';
import { createEventContext } from 'funcrun/testing';
import type { Context, DataFor, EventContext, EventHandler, EventOf, EventsOf, FromSchema, Function, NamedFunction, StandardSchemaV1 } from 'funcrun';

// A Standard Schema written out, as Zod, Valibot and ArkType make them: text in, a Date out.
const timestamp = {
  '~standard': {
    version: 1,
    vendor: 'example',
    validate: (value: unknown) => (typeof value === 'string' ? { value: new Date(value) } : { issues: [{ message: 'not text', path: ['at'] }] }),
    types: { input: '' as string, output: new Date(0) },
  },
} satisfies StandardSchemaV1<string, Date>;

export const events = defineEvents({
  types: {
    'com.example.order.created': {
      type: 'object',
      properties: {
        id: { type: 'string' },
        total: { type: 'number' },
        note: { type: 'string' },
        status: { enum: ['new', 'paid'] },
        lines: {
          type: 'array',
          items: {
            type: 'object',
            properties: { sku: { type: 'string' }, quantity: { type: 'integer' } },
            required: ['sku', 'quantity'],
            additionalProperties: false,
          },
        },
        coupon: { type: ['string', 'null'] },
        payment: {
          anyOf: [
            { type: 'object', properties: { method: { const: 'card' }, card: { type: 'string' } }, required: ['method', 'card'] },
            { type: 'object', properties: { method: { const: 'transfer' }, iban: { type: 'string' } }, required: ['method', 'iban'] },
          ],
        },
        version: { const: 2 },
      },
      required: ['id', 'total', 'status', 'lines', 'coupon', 'payment', 'version'],
    },
    'com.example.order.cancelled': timestamp,
    'com.example.order.shipped': { type: 'object', properties: { carrier: { type: 'string' } }, required: ['carrier'], additionalProperties: false },
  },
  idempotency: { key: (event) => `${event.source}/${event.id}` },
});

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function same<A, B>(check: Equal<A, B>): void {
  void check;
}

// Each case has its own type's data: a field one type has, with no cast.
export const handle: EventHandler<typeof events> = (context, data) => {
  const event = context.cloudevent;
  context.log.info({ type: event.type, source: event.source });
  switch (event.type) {
    case 'com.example.order.created': {
      const order = event.data;
      const skus: string[] = order.lines.map((line) => line.sku.toUpperCase());
      const quantity: number = order.lines.reduce((sum, line) => sum + line.quantity, 0);
      const coupon: string = order.coupon ?? 'none';
      const paidBy: string = order.payment.method === 'card' ? order.payment.card : order.payment.iban;
      const status: 'new' | 'paid' = order.status;
      const version: 2 = order.version;
      const note: string | undefined = order.note;
      return { total: order.total.toFixed(2), id: order.id, skus, quantity, coupon, paidBy, status, version, note: note?.trim() };
    }
    case 'com.example.order.cancelled':
      // The Standard Schema's output type, not its input.
      return { at: event.data.toISOString() };
    case 'com.example.order.shipped':
      return context.cloudEventResponse({ carrier: event.data.carrier }).type('com.example.order.notified').source('/orders').response();
    default:
      // Every declared type has its case: nothing else arrives without `passthrough`.
      same<typeof event, never>(true);
      return data;
  }
};

// A named function that takes the whole event (`cloudEvent: true`) names its event type.
export function shipped(event: EventOf<typeof events, 'com.example.order.shipped'>, context: Context): string {
  context.log.info({ id: event.id });
  return event.data.carrier;
}
shipped.cloudEvent = true;
export const named: NamedFunction = shipped;

// The module's exports, as `module.exports = { handle, events }` gives them.
export const module: Function = { handle, events };
export const withFunctions: Function = { functions: { shipped }, events };

// With `passthrough`, other events reach the handler too, typed `CloudEvent<unknown>`: a declared
// type's case then needs its own check of the data.
const open = defineEvents({ types: { 'com.example.ping': { type: 'object', properties: { at: { type: 'string' } }, required: ['at'] } }, passthrough: true });
export const openHandler: EventHandler<typeof open> = (context) => {
  const event = context.cloudevent;
  if (event.type === 'com.example.ping') same<typeof event.data, unknown>(true);
  same<EventOf<typeof open, 'com.example.ping'>['data'], { [key: string]: unknown; at: string }>(true);
  return { type: event.type };
};
export const openModule: Function = { handle: openHandler, events: open };

// A unit test of the handler: createEventContext makes the context an EventHandler<typeof events>
// takes, its event of the type named and its data typed by the type's schema (a Standard Schema's
// output); with `passthrough`, any other type with data of any shape.
export const created = createEventContext(events, 'com.example.order.created', {
  id: 'o-7',
  total: 12.5,
  status: 'new',
  lines: [{ sku: 'a-1', quantity: 2 }],
  coupon: null,
  payment: { method: 'card', card: '4242' },
  version: 2,
});
same<typeof created.cloudevent.type, 'com.example.order.created'>(true);
same<typeof created.cloudevent.data, DataFor<typeof events, 'com.example.order.created'>>(true);
export const answered = handle(created, created.cloudevent.data);
const cancelled = createEventContext(events, 'com.example.order.cancelled', new Date(), { attributes: { source: '/orders', id: '7' }, method: 'POST' });
export const answeredCancelled = handle(cancelled, cancelled.cloudevent.data);
const pinged = createEventContext(open, 'com.example.ping', { at: 'now' });
const other = createEventContext(open, 'com.example.other', 42);
export const answeredOpen = [openHandler(pinged, pinged.cloudevent.data), openHandler(other, other.cloudevent.data)];
same<typeof other.cloudevent.data, unknown>(true);

// The types a handler is made of, each on its own.
same<DataFor<typeof events, 'com.example.order.cancelled'>, Date>(true);
same<DataFor<typeof events, 'com.example.order.shipped'>, { carrier: string }>(true);
same<EventsOf<typeof events>['type'], 'com.example.order.created' | 'com.example.order.cancelled' | 'com.example.order.shipped'>(true);
same<EventContext<typeof events>['cloudevent'], EventsOf<typeof events>>(true);
same<StandardSchemaV1.InferOutput<typeof timestamp>, Date>(true);
same<StandardSchemaV1.InferInput<typeof timestamp>, string>(true);

// FromSchema, keyword by keyword.
same<FromSchema<{ type: 'string' }>, string>(true);
same<FromSchema<{ type: 'integer' }>, number>(true);
same<FromSchema<{ type: 'boolean' }>, boolean>(true);
same<FromSchema<{ type: 'null' }>, null>(true);
same<FromSchema<{ type: readonly ['number', 'null'] }>, number | null>(true);
same<FromSchema<{ type: 'string'; nullable: true }>, string | null>(true);
same<FromSchema<{ enum: readonly ['a', 'b', 1] }>, 'a' | 'b' | 1>(true);
same<FromSchema<{ type: 'string'; enum: readonly ['a', 1] }>, 'a'>(true);
same<FromSchema<{ const: 'on' }>, 'on'>(true);
same<FromSchema<{ type: 'array'; items: { type: 'number' } }>, number[]>(true);
same<FromSchema<{ type: 'array' }>, unknown[]>(true);
same<FromSchema<{ type: 'array'; prefixItems: readonly [{ type: 'string' }]; items: { type: 'number' } }>, unknown[]>(true);
type NoKeys = FromSchema<{ type: readonly ['object', 'null']; additionalProperties: false }>;
same<keyof NonNullable<NoKeys>, never>(true);
same<Extract<NoKeys, null>, null>(true);
same<FromSchema<{ type: 'object'; patternProperties: { '^x-': { type: 'string' } }; additionalProperties: false }>, { [key: string]: unknown }>(true);
same<FromSchema<{ type: 'object' }>, { [key: string]: unknown }>(true);
same<FromSchema<{ type: 'object'; properties: { a: { type: 'string' } }; additionalProperties: false }>, { a?: string }>(true);
same<FromSchema<{ type: 'object'; required: readonly ['a']; additionalProperties: false }>, { a: unknown }>(true);
type Counts = FromSchema<{ type: 'object'; properties: { name: { type: 'string' } }; required: readonly ['name']; additionalProperties: { type: 'number' } }>;
same<Counts['name'], string>(true);
same<Counts['apples'], number>(true);
same<FromSchema<{ anyOf: readonly [{ type: 'string' }, { type: 'number' }] }>, string | number>(true);
same<FromSchema<{ oneOf: readonly [{ const: 1 }, { const: 2 }] }>, 1 | 2>(true);
// Members of allOf, anyOf and oneOf without a `type` take their parent's.
type Both = FromSchema<{
  type: 'object';
  allOf: readonly [{ properties: { a: { type: 'string' } }; required: readonly ['a'] }, { properties: { b: { type: 'number' } }; required: readonly ['b'] }];
}>;
same<Both['a'], string>(true);
same<Both['b'], number>(true);
same<FromSchema<{ $ref: '#/definitions/order' }>, unknown>(true);
same<FromSchema<{ not: { type: 'string' } }>, unknown>(true);
same<FromSchema<true>, unknown>(true);
// A schema whose literal types were widened (declared apart without `as const`) says nothing certain.
same<FromSchema<{ type: string }>, unknown>(true);
same<FromSchema<{ type: 'object'; properties: { a: { type: 'string' } }; required: string[]; additionalProperties: false }>, { a?: string }>(true);

// Ten levels of nested objects compile, and type the innermost field.
export const deep = defineEvents({
  types: {
    deep: {
      type: 'object',
      required: ['a'],
      properties: {
        a: {
          type: 'object',
          required: ['b'],
          properties: {
            b: {
              type: 'object',
              required: ['c'],
              properties: {
                c: {
                  type: 'object',
                  required: ['d'],
                  properties: {
                    d: {
                      type: 'object',
                      required: ['e'],
                      properties: {
                        e: {
                          type: 'object',
                          required: ['f'],
                          properties: {
                            f: {
                              type: 'object',
                              required: ['g'],
                              properties: {
                                g: {
                                  type: 'object',
                                  required: ['h'],
                                  properties: {
                                    h: {
                                      type: 'object',
                                      required: ['i'],
                                      properties: { i: { type: 'array', items: { type: 'array', items: { type: 'string' } } } },
                                    },
                                  },
                                },
                              },
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
});
export const deepHandler: EventHandler<typeof deep> = (context) => {
  const innermost: string[][] = context.cloudevent.data.a.b.c.d.e.f.g.h.i;
  return innermost;
};
