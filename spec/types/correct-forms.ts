// The correct forms of the code in common-mistakes.ts, and what a handler may return: all of it
// must compile, so the checks there refuse mistakes only.
import { Readable } from 'node:stream';
import { CloudEvent, HTTP } from 'cloudevents';
import { HttpError, start } from 'funcrun';
import { test } from 'node:test';
import { createContext, serve } from 'funcrun/testing';
import type { CloudEventFunction, Context, Function, HTTPFunction, Invokable, StructuredReturn } from 'funcrun';

interface Order {
  id: number;
  quantity: number;
}
interface Receipt {
  total: number;
}
class Basket {
  items: string[] = [];
}
declare const order: Order;
declare const anything: object;

// Anything that is not a structured return is data: JSON objects and arrays, whatever their keys.
export const greeting: HTTPFunction = () => ({ greeting: 'hi' });
export const status: HTTPFunction = async () => ({ status: 'ok' });
export const list: HTTPFunction = () => [1, 2];
export const typed: HTTPFunction = async () => order;
export const instance: HTTPFunction = () => new Basket();
export const someObject: HTTPFunction = async (): Promise<object> => anything;
export function declared(_context: Context): StructuredReturn | Order {
  return order;
}

// Structured returns, and the other kinds of answer.
export const created: HTTPFunction = () => ({ statusCode: 201 });
export const createdWithData: HTTPFunction = () => ({ statusCode: 201, message: 'created' });
export const text: HTTPFunction = async () => ({ body: 'x', headers: { 'content-type': 'text/plain' } });
export const headers: HTTPFunction = () => ({ statusCode: 200, headers: { 'set-cookie': ['a=1', 'b=2'], 'x-count': 2 }, body: { ok: true } });
export function spelledOut(_context: Context): StructuredReturn {
  return { statusCode: 202, body: Buffer.from('x') };
}
export const event: HTTPFunction = () => new CloudEvent({ source: '/shop', type: 'ordered', data: order });
export const message: HTTPFunction = () => HTTP.binary(new CloudEvent({ source: '/shop', type: 'ordered', data: order }));
export const bytes: HTTPFunction = () => Buffer.from('x');
export const array: HTTPFunction = () => new Uint8Array(2);
export const stream: HTTPFunction = () => Readable.from(['x']);
export const plain: HTTPFunction = () => 'x';
export const nothing: HTTPFunction = () => undefined;
export const empty: HTTPFunction = (context) => {
  context.log.info('no answer');
};
export const nil: HTTPFunction = () => null;
export const scalar: HTTPFunction = () => 7;
export const chain: HTTPFunction = (context) => context.cloudEventResponse({ ok: true }).type('ok');
export const noData: HTTPFunction = (context) => context.cloudEventResponse().response();

// The context's own members, and the query on `context.query`.
export const query: HTTPFunction = (context) => ({ name: context.query.name, method: context.method });

// The event's data, typed by the function's type parameters, and the answer's.
export const eventData: CloudEventFunction<Order, Receipt> = (context, data) => {
  const quantity: number | undefined = context.cloudevent?.data?.quantity;
  const answer: CloudEvent<Receipt> = context
    .cloudEventResponse({ total: (data?.id ?? 0) * (quantity ?? 0) })
    .id('1')
    .source('/shop')
    .type('receipt')
    .version('1.0')
    .response();
  return answer;
};
export const answerChain: CloudEventFunction<Order, Receipt> = async (context) => context.cloudEventResponse({ total: 1 });
export const answerEvent: CloudEventFunction<Order, Receipt> = async () => new CloudEvent<Receipt>({ source: '/shop', type: 'receipt', data: { total: 1 } });
export const answerStructured: CloudEventFunction<Order, Receipt> = () => ({ statusCode: 202 });

// With FUNC_COMPAT=faas-js-runtime the second argument is the whole event: the loose default,
// with the arguments typed by hand.
export const compat: CloudEventFunction = (context: Context<Order>, event?: CloudEvent<Order>): CloudEvent<Receipt> =>
  context.cloudEventResponse({ total: event?.data?.quantity ?? 0 }).response();

// A unit test of a typed event function: createContext takes the event's data type from the event.
const ordered = new CloudEvent({ source: '/test', type: 'ordered', data: order });
export const tested = eventData(createContext({ method: 'POST', cloudevent: ordered }), ordered.data);

// An integration test: serve() takes node:test's context, which closes the server after the test.
const servedParts: [string, number, () => Promise<void>][] = [];
export const servedTest = test('answers', async (t) => {
  const { url, port, close } = await serve(t, eventData, { logLevel: 'debug' });
  const typed: [string, number, () => Promise<void>] = [url, port, close];
  servedParts.push(typed);
});

// Knative's TypeScript templates, written for faas-js-runtime (src/index.ts and test/unit.ts).
const knativeEvent = async (context: Context, cloudevent?: CloudEvent<unknown>): Promise<CloudEvent<{ message: string }>> => {
  context.log.info(`${cloudevent?.id}`);
  return new CloudEvent<{ message: string }>({ source: 'function', type: 'function.response', data: { message: 'OK' } });
};
const knativeHttp = async (context: Context, body: string): Promise<StructuredReturn> => {
  context.log.info(`body: ${body}`);
  return { body: 'OK', headers: { 'content-type': 'text/plain' } };
};
export const knativeEventType: CloudEventFunction = knativeEvent;
export const knativeHttpType: HTTPFunction = knativeHttp;
export const knativeUnit = knativeEvent({ log: { info: (_: unknown) => _ } } as Context, new CloudEvent({ type: 't', source: '/test', data: {} }));
export const knativeHttpUnit = knativeHttp({ method: 'POST', log: { info: (_: unknown) => _ } } as Context, 'x');

// The module, a handler of any kind with its parameters typed from the context, start() and errors.
const any: Invokable = (context, data) => ({ path: context.path, data });
export const module: Function = { handle: any, routes: { 'POST /orders': eventData, 'GET /': greeting }, liveness: () => true };
export const inOrder: HTTPFunction = (context: Context, body?: Order) => ({ id: body?.id, path: context.path });
export const refused: HTTPFunction = () => {
  throw new HttpError(404, 'no such order');
};
export const served = start(module, { port: 0 });

// A structured return has statusCode, headers and body only, in every form; data keeps any keys,
// as does an object with a statusCode alone (faas-js-runtime's way: the object is sent with it).
declare const answer: StructuredReturn;
export const allThree: HTTPFunction = () => ({ statusCode: 201, headers: { location: '/orders/7', 'set-cookie': ['a=1'] }, body: order });
export const allThreeAsync: HTTPFunction = async () => ({ statusCode: 200, headers: { 'content-type': 'text/csv' }, body: 'a,b' });
export const bufferBody: HTTPFunction = () => ({ statusCode: 200, body: Buffer.from('x') });
export const bytesBody: HTTPFunction = async () => ({ body: new Uint8Array(2), headers: { 'content-type': 'image/png' } });
export const streamBody: HTTPFunction = () => ({ headers: { 'content-type': 'text/plain' }, body: Readable.from(['x']) });
export const responseBody: HTTPFunction = async () => ({ statusCode: 200, body: new Response('x') });
export const scalarBody: HTTPFunction = () => ({ body: 7 });
export const typedAnswer: HTTPFunction = async () => answer;
declare const partial: Partial<StructuredReturn>;
declare const noHeaders: Omit<StructuredReturn, 'headers'>;
type Created = StructuredReturn & { statusCode: 201 };
export const mappedAnswers: HTTPFunction = (context) => (context.method === 'HEAD' ? partial : noHeaders);
export const narrowed = async (): Promise<Created> => ({ statusCode: 201, body: order });
export const narrowedType: HTTPFunction = narrowed;
export const satisfied = { statusCode: 204 } satisfies StructuredReturn;
export const dataWithLookalikes: HTTPFunction = () => ({ header: 'Orders', status: 'open', Body: 'x' });
export const statusWithData: HTTPFunction = () => ({ statusCode: 451, statusMessage: 'Unavailable For Legal Reasons', header: 'x' });
export const eventAnswer: CloudEventFunction<Order, Receipt> = () => ({ statusCode: 202, headers: { 'retry-after': 5 }, body: { total: 1 } });
export const sdkMessageLiteral: HTTPFunction = () => ({ headers: { 'ce-id': '1' }, body: '{}' });
